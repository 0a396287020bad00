"""The synchronous API: :func:`connect`, :class:`Sandbox` and the stream
handles.

REST calls use http.client; each stream uses websockets' synchronous
client and one reader thread of its own, which calls that stream's
callbacks in order.  A slow callback therefore paces its own stream only
(the daemon stops reading the command's output), and a callback may call
the SDK (even open another stream) without deadlocking."""
from __future__ import annotations

import threading
import time
from typing import (Any, Callable, Iterator, List, Mapping, Optional,
                    Sequence, TypeVar, Union)

from websockets.exceptions import ConnectionClosed
from websockets.protocol import State
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as _ws_connect
from websockets.sync.client import unix_connect as _ws_unix_connect

from . import _codec, _options, _rest, _ws
from ._core import AttachCore, ResumePolicy, StreamCore, TextDecoders
from ._endpoint import Endpoint, resolve
from ._http import HTTPClient
from ._types import (ExecResult, ExitStatus, Gap, Health, Live, LogChunk,
                     Output, Reconnected, Session)
from .errors import (APIError, ConnectionLostError, DetachedError,
                     LodgeConnectionError, LodgeError, LodgeTimeoutError)

Data = _rest.Data
Ref = _rest.Ref
T = TypeVar("T")
Options = Optional[Mapping[str, Any]]

#: a since past any session's end: an attach that only waits for the exit
PAST_END = (1 << 63) - 1
MAX_ERRORS_KEPT = 100
RECV_BUFSIZE = 256 << 10


class _Connection(ClientConnection):
    """websockets' connection, keeping what came with the daemon's close.

    The daemon may end its socket right after its close frame.  On a Unix
    socket the reply to that close then fails at once (EPIPE), and
    websockets drops every frame of the read it was answering: the exit
    of a stream, sent just before the close, would be lost.  Once the
    connection is closing nothing is left to send, so the failure is
    ignored and those frames are delivered."""

    def send_data(self) -> None:
        try:
            super().send_data()
        except OSError:
            if self.protocol.state is State.OPEN:
                raise



def connect(url: Optional[str] = None, token: Optional[str] = None, *,
            socket_path: Optional[str] = None,
            connect_timeout: float = 10.0,
            request_timeout: Optional[float] = 60.0) -> "Sandbox":
    """A client of lodged.

    With no arguments, ``LODGE_URL`` (``http://host:port``) and
    ``LODGE_TOKEN``; without ``LODGE_URL``, the Unix socket
    ``$LODGE_RUNDIR/lodged.sock`` (default ``/run/lodge/lodged.sock``),
    which needs no token.

    :param connect_timeout: seconds to open a connection or a WebSocket
    :param request_timeout: seconds a REST call may take (``None``: no
        limit); :meth:`Sandbox.exec_command` waits for its command however
        long it runs unless given ``request_timeout``
    """
    return Sandbox(resolve(url, token, socket_path),
                   connect_timeout=connect_timeout,
                   request_timeout=request_timeout)


class Sandbox:
    """A connection to one lodged; safe to share between threads."""

    def __init__(self, endpoint: Endpoint, *, connect_timeout: float = 10.0,
                 request_timeout: Optional[float] = 60.0) -> None:
        self.endpoint = endpoint
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self._http = HTTPClient(endpoint, connect_timeout)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the idle REST connections (open streams are not
        affected)."""
        self._http.close()

    def __repr__(self) -> str:
        return "<lodge.Sandbox %s>" % self.endpoint.describe()

    # REST

    def _do(self, call: "_rest.Call[T]") -> T:
        t = (self.request_timeout if call.timeout == _rest.DEFAULT_TIMEOUT
             else call.timeout)
        return call.parse(self._http.request(call.method, call.path,
                                             call.body, t))

    def health(self) -> Health:
        """GET /v1/health."""
        return self._do(_rest.health())

    def exec_command(self, command: Union[str, Sequence[str]], *,
                     workdir: Optional[str] = None,
                     work_dir: Optional[str] = None,
                     env: Optional[Mapping[str, str]] = None,
                     timeout_seconds: Optional[float] = None,
                     user: Optional[str] = None,
                     stdin: Optional[str] = None,
                     encoding: Optional[str] = None,
                     max_output_bytes: Optional[int] = None,
                     request_timeout: Optional[float] = None
                     ) -> ExecResult:
        """Run a command to completion and return its output.

        ``command`` is a shell command (a ``str``, run by the user's shell)
        or an argv (a list, run directly).  ``timeout_seconds`` is the
        server's: the command is ended and the result says ``timed_out``.
        ``request_timeout`` is the client's, unlimited by default.
        A command that cannot start raises :class:`SpawnFailedError`."""
        o = _options.exec_options(
            work_dir=work_dir, workdir=workdir, env=env,
            timeout_seconds=timeout_seconds, user=user, stdin=stdin,
            encoding=encoding, max_output_bytes=max_output_bytes)
        return self._do(_rest.exec_command(command, o, request_timeout))

    def create_session(self, options: Options = None,
                       **kwargs: Any) -> Session:
        """Start a session: ``name``, ``command`` (or ``args``),
        ``workDir``, ``env``, ``user``, ``pty``, ``cols``, ``rows``,
        ``bufferSize``; no command is the user's login shell."""
        return self._do(_rest.create_session(_options.merge(
            "create_session", _options.SESSION, options, kwargs)))

    def list_sessions(self) -> List[Session]:
        """Every session, running and exited."""
        return self._do(_rest.list_sessions())

    def get_session(self, ref: Ref) -> Session:
        """A session by id or name, current."""
        return self._do(_rest.get_session(ref))

    def delete_session(self, ref: Ref) -> None:
        """End a session's processes and forget it; returns once they are
        gone."""
        self._do(_rest.delete_session(ref))

    def signal_session(self, ref: Ref, signal: Union[str, int]) -> None:
        """Send a signal (``"INT"``, ``"RTMIN+3"``, 9) without attaching."""
        self._do(_rest.signal_session(ref, signal))

    def send_input(self, ref: Ref, data: Data) -> None:
        """Queue input for a session's process without attaching; bytes
        are sent as base64."""
        self._do(_rest.send_input(ref, data))

    def resize_session(self, ref: Ref, cols: int, rows: int) -> None:
        """Set a PTY session's size without attaching."""
        self._do(_rest.resize_session(ref, cols, rows))

    def session_log(self, ref: Ref, since: Optional[int] = None) -> bytes:
        """The output held in a session's ring, as bytes."""
        return self.session_log_chunk(ref, since).data

    def session_log_chunk(self, ref: Ref,
                          since: Optional[int] = None) -> LogChunk:
        """The ring's bytes from ``since`` with the offsets they span."""
        return self._do(_rest.session_log(ref, since))

    def wait_session(self, ref: Ref,
                     timeout: Optional[float] = None) -> ExitStatus:
        """Wait for a session's process to exit (at once if it has).
        Raises :class:`LodgeTimeoutError` after ``timeout`` seconds."""
        h = self.attach_session(ref, since=PAST_END, read_only=True)
        try:
            return h.wait(timeout)
        finally:
            h.detach()

    # streams

    def _ws(self, path: str, unix_path: Optional[str] = None
            ) -> ClientConnection:
        ep = self.endpoint
        try:
            if unix_path is not None or ep.unix_path is not None:
                kw = _ws.options(ep, self.connect_timeout, _ws_unix_connect)
                conn: ClientConnection = _ws_unix_connect(
                    unix_path or ep.unix_path, ep.ws_uri(path),
                    create_connection=_Connection, **kw)
            else:
                kw = _ws.options(ep, self.connect_timeout, _ws_connect)
                conn = _ws_connect(ep.ws_uri(path),
                                   create_connection=_Connection, **kw)
            # bigger reads than websockets' 64 KiB: a server message is up
            # to 256 KiB, and fewer reads cost less system time per GiB
            conn.recv_bufsize = RECV_BUFSIZE
            return conn
        except Exception as e:
            raise _ws.refused(e, "cannot open %s at %s"
                              % (path.split("?")[0], ep.describe())) from e

    def exec_stream(self, options: Options = None,
                    **kwargs: Any) -> "ExecStream":
        """Start a command on a WebSocket and stream its output to the
        callbacks (``onStdout``, ``onStderr``: bytes; ``onStdoutText``,
        ``onStderrText``: text; ``onExit``; ``onError``).

        Returns once the command has started; a command that cannot start
        raises :class:`SpawnFailedError`.  The command is killed if the
        connection drops: the handle then fails with
        :class:`ConnectionLostError`."""
        o = _options.merge("exec_stream", _options.STREAM, options, kwargs)
        fields = _options.stream_fields(o)
        return ExecStream(self, fields, o)

    def attach_session(self, ref: Ref,
                       options: Options = None,
                       **kwargs: Any) -> "AttachHandle":
        """Attach to a session: the ring's replay, then live output.

        Options: ``cols``, ``rows``, ``since``, ``readOnly``, ``pace``
        (hold the process back rather than skip output: while every client
        is behind and this one still reads, the process waits for it, as
        for a terminal; not with ``readOnly``), ``strict``
        (a gap raises :class:`GapError` instead of an ``onGap`` event),
        ``resume`` (default True: reconnect by offset after a lost
        connection, delivering each byte once), ``resume_timeout``, and the
        callbacks ``onStdout``, ``onStderr``, ``onStdoutText``,
        ``onStderrText``, ``onLive``, ``onGap``, ``onReconnect``,
        ``onExit``, ``onError``."""
        o = _options.merge("attach_session", _options.ATTACH, options,
                           kwargs)
        return AttachHandle(self, _rest.ref(ref), o)


def _query(o: Mapping[str, Any], since: Optional[int],
           first: bool) -> str:
    q: List[str] = []
    if first:
        for k in ("cols", "rows"):
            if k in o:
                q.append("%s=%d" % (k, int(o[k])))
    if since is not None:
        q.append("since=%d" % since)
    if o.get("read_only"):
        q.append("readOnly=1")
    if o.get("pace"):
        q.append("pace=1")
    return "?" + "&".join(q) if q else ""


class _Handle:
    """What an exec stream and an attach share: the reader thread, the
    callbacks, writes split to the server's limit."""

    _ws_conn: Optional[ClientConnection]

    def __init__(self, o: Mapping[str, Any]) -> None:
        self._o = o
        self._text = TextDecoders()
        self._done = threading.Event()
        self._error: Optional[BaseException] = None
        self._exit: Optional[ExitStatus] = None
        self._send_lock = threading.Lock()
        self._closing = False
        self.errors: List[APIError] = []
        self._max_message_bytes = _codec.DEFAULT_MAX_MESSAGE_BYTES

    def _cb(self, name: str) -> Optional[Callable[..., Any]]:
        cb = self._o.get(name)
        return cb if callable(cb) else None

    def _deliver(self, ev: Any) -> None:
        if isinstance(ev, Output):
            ocb = self._cb("on_output")
            if ocb:
                ocb(ev)
            cb = self._cb("on_" + ev.stream)
            if cb:
                cb(ev.data)
            tcb = self._cb("on_%s_text" % ev.stream)
            if tcb:
                text = self._text.decode(ev.stream, ev.data)
                if text:
                    tcb(text)
        elif isinstance(ev, APIError):
            cb = self._cb("on_error")
            if cb:
                cb(ev)
            else:
                if len(self.errors) >= MAX_ERRORS_KEPT:
                    del self.errors[0]
                self.errors.append(ev)
        elif isinstance(ev, Gap):
            cb = self._cb("on_gap")
            if cb:
                cb(ev)
        elif isinstance(ev, Live):
            cb = self._cb("on_live")
            if cb:
                cb(ev)
        elif isinstance(ev, Reconnected):
            cb = self._cb("on_reconnect")
            if cb:
                cb(ev)

    def _finish(self) -> None:
        for stream, text in self._text.flush().items():
            tcb = self._cb("on_%s_text" % stream)
            if text and tcb:
                tcb(text)
        if self._exit is not None and self._error is None:
            cb = self._cb("on_exit")
            if cb:
                cb(self._exit)

    def wait(self, timeout: Optional[float] = None) -> ExitStatus:
        """The exit status, once the process has exited and every callback
        has returned.  Raises what ended the stream otherwise
        (:class:`ConnectionLostError`, an :class:`APIError`, an exception
        of a callback), or :class:`LodgeTimeoutError` after ``timeout``
        seconds (the stream goes on)."""
        if not self._done.wait(timeout):
            raise LodgeTimeoutError("no exit within %s s" % timeout)
        if self._error is not None:
            raise self._error
        assert self._exit is not None
        return self._exit

    @property
    def done(self) -> bool:
        """True once the stream has ended, by an exit or an error."""
        return self._done.is_set()

    @property
    def exit_status(self) -> Optional[ExitStatus]:
        return self._exit

    def _conn(self) -> ClientConnection:
        if self._done.is_set():
            raise self._error or LodgeError("the stream has ended")
        assert self._ws_conn is not None
        return self._ws_conn

    def _send(self, frames: Iterator[bytes]) -> None:
        with self._send_lock:
            ws = self._conn()
            try:
                for f in frames:
                    ws.send(f)
            except ConnectionClosed as e:
                raise ConnectionLostError(
                    "the connection was lost while sending") from e

    def write(self, data: Data) -> None:
        """Send input (text as UTF-8); a write larger than the daemon's
        message limit is split, in order.  Blocks while the daemon applies
        backpressure."""
        self._send(_codec.split(data, self._max_message_bytes))

    def resize(self, cols: int, rows: int) -> None:
        """Set the PTY's size."""
        self._send(iter([_codec.resize(cols, rows)]))

    def signal(self, signal: Union[str, int]) -> None:
        """Send a signal: ``"INT"``, ``"TERM"``, ``"RTMIN+3"``, or a
        number."""
        self._send(iter([_codec.signal(signal)]))

    def end(self) -> None:
        """Close the process's stdin once what was written is read (the
        protocol's eof; pipe mode only)."""
        self._send(iter([_codec.eof()]))

    close_stdin = end

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


class ExecStream(_Handle):
    """A command running on a WebSocket (see :meth:`Sandbox.exec_stream`).
    """

    def __init__(self, sandbox: Sandbox, fields: Mapping[str, Any],
                 o: Mapping[str, Any]) -> None:
        super().__init__(o)
        self._core = StreamCore()
        self._ws_conn = ws = sandbox._ws("/v1/exec/stream")
        try:
            ws.send(_codec.start(fields))
            while self._core.pid is None:
                msg = _codec.unpack(ws.recv(sandbox.connect_timeout))
                for ev in self._core.feed(msg):
                    self._deliver(ev)  # output cannot come first; be safe
        except BaseException as e:
            ws.close()
            if isinstance(e, ConnectionClosed):
                raise ConnectionLostError(
                    "the exec stream closed before it started") from e
            if isinstance(e, TimeoutError):
                raise LodgeTimeoutError("the exec stream did not start in "
                                        "time") from e
            raise
        self.pid: int = self._core.pid
        self._max_message_bytes = self._core.max_message_bytes
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="lodge-exec-%d" % self.pid)
        self._thread.start()

    def _run(self) -> None:
        ws = self._ws_conn
        assert ws is not None
        try:
            try:
                for frame in ws:
                    for ev in self._core.feed(_codec.unpack(frame)):
                        if isinstance(ev, ExitStatus):
                            self._exit = ev
                        else:
                            self._deliver(ev)
                    if self._exit is not None:
                        break
            except ConnectionClosed:
                pass
            if self._exit is None:
                why = ("closed by the client" if self._closing
                       else "the connection was lost")
                raise ConnectionLostError(
                    "exec stream %d ended without exit: %s; its process "
                    "was killed" % (self.pid, why))
            self._finish()
        except BaseException as e:
            self._error = e
        finally:
            ws.close()
            self._done.set()

    def close(self) -> None:
        """Drop the connection: the daemon kills the command if it has not
        exited (then :meth:`wait` raises :class:`ConnectionLostError`)."""
        self._closing = True
        if self._ws_conn is not None:
            self._ws_conn.close()
        if threading.current_thread() is not self._thread:
            self._thread.join()


class AttachHandle(_Handle):
    """A client attached to a session (see :meth:`Sandbox.attach_session`).
    """

    def __init__(self, sandbox: Sandbox, ref: str,
                 o: Mapping[str, Any]) -> None:
        super().__init__(o)
        self._sandbox = sandbox
        self._ref = ref
        self._core = AttachCore(o.get("since"), bool(o.get("strict")))
        self._resume = bool(o.get("resume", True))
        self._resume_timeout = float(o.get("resume_timeout", 60.0))
        self._policy = ResumePolicy(self._resume_timeout)
        self._detached = False
        self._cond = threading.Condition()
        self.reconnects = 0
        self._ws_conn = sandbox._ws("/v1/sessions/%s/attach%s" % (
            ref, _query(o, self._core.next, True)))
        self._read_attached(self._ws_conn)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="lodge-attach-" + ref)
        self._thread.start()

    @property
    def session(self) -> Optional[Session]:
        """The session as it was at the (last) attach."""
        return self._core.session

    @property
    def live(self) -> bool:
        """True once the replay has ended."""
        return self._core.live_seen

    @property
    def replay_to(self) -> Optional[int]:
        """The offset at which the first replay ends and live output
        starts."""
        return self._core.replay_to

    @property
    def offset(self) -> Optional[int]:
        """The offset of the next byte this handle needs."""
        return self._core.next

    def _read_attached(self, ws: ClientConnection) -> None:
        self._core.connection_started()
        try:
            msg = _codec.unpack(ws.recv(self._sandbox.connect_timeout))
        except BaseException:
            ws.close()
            raise
        if msg["type"] == "error":
            ws.close()
            for ev in self._core.feed(msg):
                raise ev
        if msg["type"] != "attached":
            ws.close()
            raise LodgeConnectionError("expected attached, got %r"
                                       % msg["type"])
        self._core.feed(msg)
        self._max_message_bytes = self._core.max_message_bytes

    def _pump(self, ws: ClientConnection) -> bool:
        """Deliver until exit (True) or a lost connection (False)."""
        try:
            for frame in ws:
                for ev in self._core.feed(_codec.unpack(frame)):
                    if isinstance(ev, ExitStatus):
                        self._exit = ev
                        return True
                    self._deliver(ev)
        except ConnectionClosed:
            pass
        return False

    def _reconnect(self) -> ClientConnection:
        self._policy.lost(self._core.next, time.monotonic())
        attempts = 0
        last: BaseException = ConnectionLostError("lost")
        sid = self._core.session.id if self._core.session else self._ref
        while not self._detached:
            delay = self._policy.next_delay(time.monotonic())
            if delay is None:
                break
            time.sleep(delay)
            attempts += 1
            since = self._core.next
            path = "/v1/sessions/%s/attach%s" % (
                sid, _query(self._o, since, False))
            try:
                try:
                    ws = self._sandbox._ws(path)
                except LodgeConnectionError:
                    alt = _ws.worker_socket(self._sandbox.endpoint, sid)
                    if alt is None:
                        raise
                    ws = self._sandbox._ws(path, unix_path=alt)
                self._read_attached(ws)
                self.reconnects += 1
                self._deliver(Reconnected(since=since or 0,
                                          attempts=attempts))
                return ws
            except (LodgeConnectionError, APIError, TimeoutError,
                    ConnectionClosed, OSError) as e:
                if _ws.terminal(e):
                    raise
                last = e
        if self._detached:
            raise DetachedError("detached")
        raise ConnectionLostError("attach to %s lost and not resumed "
                                  "within %g s: %s"
                                  % (sid, self._resume_timeout, last))

    def _run(self) -> None:
        try:
            ws = self._ws_conn
            assert ws is not None
            while True:
                if self._pump(ws):
                    break
                ws.close()
                if self._detached:
                    raise DetachedError("detached")
                if not self._resume:
                    raise ConnectionLostError("the attach's connection was "
                                              "lost")
                with self._send_lock:
                    self._ws_conn = ws = self._reconnect()
            self._finish()
        except BaseException as e:
            self._error = e
        finally:
            if self._ws_conn is not None:
                self._ws_conn.close()
            self._done.set()

    def detach(self) -> None:
        """Close this client; the process runs on.  :meth:`wait` then
        raises :class:`DetachedError`."""
        self._detached = True
        if self._ws_conn is not None:
            self._ws_conn.close()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    close = detach

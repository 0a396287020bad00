"""The asyncio API: the calls of :class:`lodge.Sandbox` as coroutines, and
async iterators over a stream's output.

    import lodge.aio
    sandbox = await lodge.aio.connect()
    handle = await sandbox.exec_stream({'command': 'make'})
    async for event in handle:          # Output, and for attach Gap, Live,
        ...                             # Reconnected
    print(await handle.wait())

A handle's output goes either to its callbacks (given as options: plain
functions or coroutine functions, awaited in order) or to one ``async for``
over the handle, which pulls from the connection: output is read only as
fast as it is consumed, so a slow consumer paces the command and memory
stays flat.  Without callbacks, :meth:`wait` reads and drops the output.
"""
from __future__ import annotations

import asyncio
import inspect
import time
from typing import (Any, AsyncIterator, List, Mapping, Optional, Sequence,
                    TypeVar, Union)

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as _ws_connect
from websockets.asyncio.client import unix_connect as _ws_unix_connect
from websockets.exceptions import ConnectionClosed

from . import _codec, _options, _rest, _ws
from ._ahttp import AsyncHTTPClient
from ._core import AttachCore, ResumePolicy, StreamCore, TextDecoders
from ._endpoint import Endpoint, resolve
from ._sync import MAX_ERRORS_KEPT, PAST_END, _query
from ._types import (Event, ExecResult, ExitStatus, Gap, Health, Live,
                     LogChunk, Output, Reconnected, Session)
from .errors import (APIError, ConnectionLostError, DetachedError,
                     LodgeConnectionError, LodgeError, LodgeTimeoutError)

__all__ = ["connect", "AsyncSandbox", "AsyncExecStream",
           "AsyncAttachHandle"]

Data = _rest.Data
Ref = _rest.Ref
T = TypeVar("T")
Options = Optional[Mapping[str, Any]]


async def connect(url: Optional[str] = None, token: Optional[str] = None,
                  *, socket_path: Optional[str] = None,
                  connect_timeout: float = 10.0,
                  request_timeout: Optional[float] = 60.0
                  ) -> "AsyncSandbox":
    """As :func:`lodge.connect`, for asyncio."""
    return AsyncSandbox(resolve(url, token, socket_path),
                        connect_timeout=connect_timeout,
                        request_timeout=request_timeout)


class AsyncSandbox:
    """A connection to one lodged, for one event loop."""

    def __init__(self, endpoint: Endpoint, *, connect_timeout: float = 10.0,
                 request_timeout: Optional[float] = 60.0) -> None:
        self.endpoint = endpoint
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self._http = AsyncHTTPClient(endpoint, connect_timeout)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.close()

    async def _do(self, call: "_rest.Call[T]") -> T:
        t = (self.request_timeout if call.timeout == _rest.DEFAULT_TIMEOUT
             else call.timeout)
        return call.parse(await self._http.request(call.method, call.path,
                                                   call.body, t))

    async def health(self) -> Health:
        return await self._do(_rest.health())

    async def exec_command(self, command: Union[str, Sequence[str]], *,
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
        """See :meth:`lodge.Sandbox.exec_command`."""
        o = _options.exec_options(
            work_dir=work_dir, workdir=workdir, env=env,
            timeout_seconds=timeout_seconds, user=user, stdin=stdin,
            encoding=encoding, max_output_bytes=max_output_bytes)
        return await self._do(_rest.exec_command(command, o,
                                                 request_timeout))

    async def create_session(self, options: Options = None,
                             **kwargs: Any) -> Session:
        return await self._do(_rest.create_session(_options.merge(
            "create_session", _options.SESSION, options, kwargs)))

    async def list_sessions(self) -> List[Session]:
        return await self._do(_rest.list_sessions())

    async def get_session(self, ref: Ref) -> Session:
        return await self._do(_rest.get_session(ref))

    async def delete_session(self, ref: Ref) -> None:
        await self._do(_rest.delete_session(ref))

    async def signal_session(self, ref: Ref,
                             signal: Union[str, int]) -> None:
        await self._do(_rest.signal_session(ref, signal))

    async def send_input(self, ref: Ref, data: Data) -> None:
        await self._do(_rest.send_input(ref, data))

    async def resize_session(self, ref: Ref, cols: int, rows: int) -> None:
        await self._do(_rest.resize_session(ref, cols, rows))

    async def session_log(self, ref: Ref,
                          since: Optional[int] = None) -> bytes:
        return (await self.session_log_chunk(ref, since)).data

    async def session_log_chunk(self, ref: Ref,
                                since: Optional[int] = None) -> LogChunk:
        return await self._do(_rest.session_log(ref, since))

    async def wait_session(self, ref: Ref,
                           timeout: Optional[float] = None) -> ExitStatus:
        h = await self.attach_session(ref, since=PAST_END, read_only=True)
        try:
            return await h.wait(timeout)
        finally:
            await h.detach()

    async def _ws(self, path: str, unix_path: Optional[str] = None
                  ) -> ClientConnection:
        ep = self.endpoint
        try:
            if unix_path is not None or ep.unix_path is not None:
                kw = _ws.options(ep, self.connect_timeout, _ws_unix_connect)
                conn: ClientConnection = await _ws_unix_connect(
                    unix_path or ep.unix_path, ep.ws_uri(path), **kw)
            else:
                kw = _ws.options(ep, self.connect_timeout, _ws_connect)
                conn = await _ws_connect(ep.ws_uri(path), **kw)
            return conn
        except Exception as e:
            raise _ws.refused(e, "cannot open %s at %s"
                              % (path.split("?")[0], ep.describe())) from e

    async def exec_stream(self, options: Options = None,
                          **kwargs: Any) -> "AsyncExecStream":
        """See :meth:`lodge.Sandbox.exec_stream`; returns once started."""
        o = _options.merge("exec_stream", _options.STREAM, options, kwargs)
        h = AsyncExecStream(self, o)
        await h._start(_options.stream_fields(o))
        return h

    async def attach_session(self, ref: Ref,
                             options: Options = None,
                             **kwargs: Any) -> "AsyncAttachHandle":
        """See :meth:`lodge.Sandbox.attach_session`."""
        o = _options.merge("attach_session", _options.ATTACH, options,
                           kwargs)
        h = AsyncAttachHandle(self, _rest.ref(ref), o)
        await h._open()
        return h


async def _frames(ws: ClientConnection,
                  core: Union[StreamCore, AttachCore]) -> AsyncIterator[Any]:
    """The events of one connection, until the exit or its loss."""
    try:
        async for frame in ws:
            for ev in core.feed(_codec.unpack(frame)):
                yield ev
            if core.exit is not None:
                return
    except ConnectionClosed:
        pass


class _AsyncHandle:
    _ws_conn: Optional[ClientConnection]

    def __init__(self, sandbox: AsyncSandbox, o: Mapping[str, Any]) -> None:
        self._sandbox = sandbox
        self._o = o
        self._text = TextDecoders()
        self._done: "asyncio.Future[ExitStatus]" = \
            asyncio.get_running_loop().create_future()
        self._reader: Optional["asyncio.Task[None]"] = None
        self._consuming = False
        self._send_lock = asyncio.Lock()
        self._max_message_bytes = _codec.DEFAULT_MAX_MESSAGE_BYTES
        self.errors: List[APIError] = []
        self._ws_conn = None

    def _has_callbacks(self) -> bool:
        return any(callable(self._o.get(k)) for k in (
            "on_stdout", "on_stderr", "on_output", "on_stdout_text",
            "on_stderr_text"))

    async def _call(self, name: str, arg: Any) -> None:
        cb = self._o.get(name)
        if callable(cb):
            r = cb(arg)
            if inspect.isawaitable(r):
                await r

    async def _deliver(self, ev: Any) -> None:
        if isinstance(ev, Output):
            await self._call("on_output", ev)
            await self._call("on_" + ev.stream, ev.data)
            if callable(self._o.get("on_%s_text" % ev.stream)):
                text = self._text.decode(ev.stream, ev.data)
                if text:
                    await self._call("on_%s_text" % ev.stream, text)
        elif isinstance(ev, APIError):
            if callable(self._o.get("on_error")):
                await self._call("on_error", ev)
            else:
                if len(self.errors) >= MAX_ERRORS_KEPT:
                    del self.errors[0]
                self.errors.append(ev)
        elif isinstance(ev, Gap):
            await self._call("on_gap", ev)
        elif isinstance(ev, Live):
            await self._call("on_live", ev)
        elif isinstance(ev, Reconnected):
            await self._call("on_reconnect", ev)

    def _events(self) -> AsyncIterator[Any]:
        raise NotImplementedError

    async def _consume(self, yield_events: bool
                       ) -> AsyncIterator[Event]:
        if self._consuming:
            raise RuntimeError("this handle's output is already being read")
        self._consuming = True
        exit_: Optional[ExitStatus] = None
        try:
            async for ev in self._events():
                if isinstance(ev, ExitStatus):
                    exit_ = ev
                    continue
                await self._deliver(ev)
                if yield_events and not isinstance(ev, APIError):
                    yield ev
            assert exit_ is not None
            for stream, text in self._text.flush().items():
                if text:
                    await self._call("on_%s_text" % stream, text)
            await self._call("on_exit", exit_)
        except GeneratorExit:
            # the caller left its async for: the stream goes on, and may
            # be read again (or waited for)
            self._consuming = False
            raise
        except BaseException as e:
            if not self._done.done():
                self._done.set_exception(e)
                self._done.exception()  # seen, even if nobody waits
            if self._ws_conn is not None:
                await self._ws_conn.close()
            raise
        if not self._done.done():
            self._done.set_result(exit_)
        if self._ws_conn is not None:
            await self._ws_conn.close()

    async def _read_all(self) -> None:
        try:
            async for _ in self._consume(False):
                pass
        except BaseException:
            pass  # kept in self._done

    def _start_reader(self) -> None:
        if self._reader is None and not self._consuming:
            self._reader = asyncio.get_running_loop().create_task(
                self._read_all())

    def __aiter__(self) -> AsyncIterator[Event]:
        """The output as events, pulled from the connection; ends after
        the exit (then see :meth:`wait`), raises what ended the stream."""
        if self._reader is not None:
            raise RuntimeError("this handle's output goes to its callbacks")
        return self._consume(True)

    async def wait(self, timeout: Optional[float] = None) -> ExitStatus:
        """The exit status once every callback has returned; raises what
        ended the stream, or :class:`LodgeTimeoutError`."""
        self._start_reader()
        try:
            return await asyncio.wait_for(asyncio.shield(self._done),
                                          timeout)
        except asyncio.TimeoutError as e:
            if self._done.done():
                raise
            raise LodgeTimeoutError("no exit within %s s" % timeout) from e

    @property
    def done(self) -> bool:
        return self._done.done()

    async def _send(self, frames: Any) -> None:
        async with self._send_lock:
            if self._done.done() and self._done.exception() is not None:
                raise self._done.exception()  # type: ignore[misc]
            ws = self._ws_conn
            if ws is None or self._done.done():
                raise LodgeError("the stream has ended")
            try:
                for f in frames:
                    await ws.send(f)
            except ConnectionClosed as e:
                raise ConnectionLostError(
                    "the connection was lost while sending") from e

    async def write(self, data: Data) -> None:
        """Send input, split to the daemon's message limit; waits while
        the daemon applies backpressure."""
        await self._send(_codec.split(data, self._max_message_bytes))

    async def resize(self, cols: int, rows: int) -> None:
        await self._send([_codec.resize(cols, rows)])

    async def signal(self, signal: Union[str, int]) -> None:
        await self._send([_codec.signal(signal)])

    async def end(self) -> None:
        """Close the process's stdin (the protocol's eof)."""
        await self._send([_codec.eof()])

    close_stdin = end

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        raise NotImplementedError


class AsyncExecStream(_AsyncHandle):
    """A command on a WebSocket (see :meth:`AsyncSandbox.exec_stream`)."""

    pid: int

    def __init__(self, sandbox: AsyncSandbox, o: Mapping[str, Any]) -> None:
        super().__init__(sandbox, o)
        self._core = StreamCore()
        self._closing = False

    async def _start(self, fields: Mapping[str, Any]) -> None:
        self._ws_conn = ws = await self._sandbox._ws("/v1/exec/stream")
        try:
            await ws.send(_codec.start(fields))
            while self._core.pid is None:
                frame = await asyncio.wait_for(
                    ws.recv(), self._sandbox.connect_timeout)
                self._core.feed(_codec.unpack(frame))
        except BaseException as e:
            await ws.close()
            if isinstance(e, ConnectionClosed):
                raise ConnectionLostError(
                    "the exec stream closed before it started") from e
            if isinstance(e, asyncio.TimeoutError):
                raise LodgeTimeoutError("the exec stream did not start in "
                                        "time") from e
            raise
        self.pid = self._core.pid
        self._max_message_bytes = self._core.max_message_bytes
        if self._has_callbacks():
            self._start_reader()

    async def _events(self) -> AsyncIterator[Any]:
        assert self._ws_conn is not None
        async for ev in _frames(self._ws_conn, self._core):
            yield ev
        if self._core.exit is not None:
            return
        why = ("closed by the client" if self._closing
               else "the connection was lost")
        raise ConnectionLostError("exec stream %d ended without exit: %s; "
                                  "its process was killed" % (self.pid, why))

    async def close(self) -> None:
        """Drop the connection: the daemon kills the command if it runs."""
        self._closing = True
        if self._ws_conn is not None:
            await self._ws_conn.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        elif not self._done.done():
            self._done.set_exception(ConnectionLostError(
                "exec stream %d closed by the client" % self.pid))
            self._done.exception()


class AsyncAttachHandle(_AsyncHandle):
    """A client attached to a session (see
    :meth:`AsyncSandbox.attach_session`)."""

    def __init__(self, sandbox: AsyncSandbox, ref: str,
                 o: Mapping[str, Any]) -> None:
        super().__init__(sandbox, o)
        self._ref = ref
        self._core = AttachCore(o.get("since"), bool(o.get("strict")))
        self._resume = bool(o.get("resume", True))
        self._resume_timeout = float(o.get("resume_timeout", 60.0))
        self._policy = ResumePolicy(self._resume_timeout)
        self._detached = False
        self.reconnects = 0
        self._pending: Optional[Reconnected] = None

    @property
    def session(self) -> Optional[Session]:
        return self._core.session

    @property
    def live(self) -> bool:
        return self._core.live_seen

    @property
    def replay_to(self) -> Optional[int]:
        return self._core.replay_to

    @property
    def offset(self) -> Optional[int]:
        return self._core.next

    async def _open(self) -> None:
        self._ws_conn = await self._sandbox._ws(
            "/v1/sessions/%s/attach%s" % (
                self._ref, _query(self._o, self._core.next, True)))
        await self._read_attached(self._ws_conn)
        if self._has_callbacks():
            self._start_reader()

    async def _read_attached(self, ws: ClientConnection) -> None:
        self._core.connection_started()
        try:
            frame = await asyncio.wait_for(ws.recv(),
                                           self._sandbox.connect_timeout)
            msg = _codec.unpack(frame)
            if msg["type"] == "error":
                for ev in self._core.feed(msg):
                    raise ev
            if msg["type"] != "attached":
                raise LodgeConnectionError("expected attached, got %r"
                                           % msg["type"])
        except BaseException:
            await ws.close()
            raise
        self._core.feed(msg)
        self._max_message_bytes = self._core.max_message_bytes

    async def _reconnect(self) -> ClientConnection:
        self._policy.lost(self._core.next, time.monotonic())
        attempts = 0
        last: BaseException = ConnectionLostError("lost")
        sid = self._core.session.id if self._core.session else self._ref
        while not self._detached:
            delay = self._policy.next_delay(time.monotonic())
            if delay is None:
                break
            await asyncio.sleep(delay)
            attempts += 1
            since = self._core.next
            path = "/v1/sessions/%s/attach%s" % (
                sid, _query(self._o, since, False))
            try:
                try:
                    ws = await self._sandbox._ws(path)
                except LodgeConnectionError:
                    alt = _ws.worker_socket(self._sandbox.endpoint, sid)
                    if alt is None:
                        raise
                    ws = await self._sandbox._ws(path, unix_path=alt)
                await self._read_attached(ws)
                self.reconnects += 1
                self._pending = Reconnected(since=since or 0,
                                            attempts=attempts)
                return ws
            except (LodgeConnectionError, APIError, asyncio.TimeoutError,
                    ConnectionClosed, OSError) as e:
                if _ws.terminal(e):
                    raise
                last = e
        if self._detached:
            raise DetachedError("detached")
        raise ConnectionLostError("attach to %s lost and not resumed "
                                  "within %g s: %s"
                                  % (sid, self._resume_timeout, last))

    async def _events(self) -> AsyncIterator[Any]:
        while True:
            ws = self._ws_conn
            assert ws is not None
            async for ev in _frames(ws, self._core):
                yield ev
            if self._core.exit is not None:
                return
            await ws.close()
            if self._detached:
                raise DetachedError("detached")
            if not self._resume:
                raise ConnectionLostError("the attach's connection was lost")
            async with self._send_lock:
                self._ws_conn = await self._reconnect()
            yield self._pending

    async def detach(self) -> None:
        """Close this client; the process runs on.  :meth:`wait` then
        raises :class:`DetachedError`."""
        self._detached = True
        if self._ws_conn is not None:
            await self._ws_conn.close()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
        elif not self._done.done():
            self._done.set_exception(DetachedError("detached"))
            self._done.exception()

    close = detach


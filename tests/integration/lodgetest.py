"""Harness for the black-box integration tests of lodged.

Written against lodge-protocol(7) (protocol version 1).  Uses only the
standard library plus python3-websockets (10.x, asyncio API) and
python3-msgpack.  Run the test files with Debian's /usr/bin/python3.

Environment:
  LODGED             daemon binary (default: <repo>/src/lodged, else
                     <repo>/lodged where the automake build puts it)
  LODGE_TEST_LOGDIR  where daemon logs go (default: a fresh temp dir); the log
                     of a daemon is kept (and its path printed) when a test
                     that used it failed, removed otherwise
  LODGE_TEST_KEEP    set to 1 to keep every log and runtime dir
"""

import asyncio
import base64
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

import msgpack
import websockets
import websockets.exceptions

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# A sanitizer build (configure --enable-sanitizers): ASan keeps freed memory
# in quarantine and maps shadow memory, so RSS says nothing about lodged's
# own memory there.  Memory bounds are asserted by the plain build's run.
SANITIZED = bool(os.environ.get("LODGE_SANITIZED"))

LODGED = os.environ.get("LODGED")
if not LODGED:
    # the brief's default is src/lodged; the non-recursive automake build
    # leaves the binary at the top of the tree, so fall back to that
    LODGED = os.path.join(REPO, "src", "lodged")
    if not os.access(LODGED, os.X_OK) and \
            os.access(os.path.join(REPO, "lodged"), os.X_OK):
        LODGED = os.path.join(REPO, "lodged")

DEFAULT_TIMEOUT = 20.0      # generous: machines are shared and slow
HTTP_TIMEOUT = 60.0         # DELETE may wait for a grace time

_DEFAULT = object()         # "use the daemon's real token"

RFC3339 = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


# ---------------------------------------------------------------- utilities

def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, timeout=DEFAULT_TIMEOUT, interval=0.05, what="condition"):
    """Poll pred() until it returns a true value; return that value."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except AssertionError as e:
            last_exc = e
        if time.monotonic() > deadline:
            msg = "timed out after %.0f s waiting for %s" % (timeout, what)
            if last_exc is not None:
                msg += " (last: %s)" % (last_exc,)
            raise AssertionError(msg)
        time.sleep(interval)


async def await_true(pred, timeout=DEFAULT_TIMEOUT, what="condition"):
    """wait_for that lets the event loop run meanwhile."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0f s waiting for %s"
                                 % (timeout, what))
        await asyncio.sleep(0.02)


def ws_frame(m):
    """One masked binary frame holding the msgpack of m (< 64 KiB), as a
    client sends it."""
    data = msgpack.packb(m, use_bin_type=True)
    mask = os.urandom(4)
    head = bytes([0x82, 0x80 | 126]) + len(data).to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4]
                               for i, b in enumerate(data))

def proc_exists(pid):
    """True if pid exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = st[st.rindex(")") + 2:].split()[0]
    return state not in ("Z", "X")


def pgrp_exists(pgid):
    try:
        os.kill(-pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def proc_stat(pid):
    """Fields of /proc/PID/stat after the comm: dict with the useful ones."""
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    comm = st[st.index("(") + 1:st.rindex(")")]
    rest = st[st.rindex(")") + 2:].split()
    # rest[0]=state (field 3), rest[1]=ppid (4), pgrp (5), session (6),
    # tty_nr (7), tpgid (8), ... starttime is field 22 -> rest[19]
    return {
        "comm": comm, "state": rest[0], "ppid": int(rest[1]),
        "pgrp": int(rest[2]), "session": int(rest[3]),
        "tty_nr": int(rest[4]), "tpgid": int(rest[5]),
        "starttime": int(rest[19]),
    }


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return "(%s)" % e


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def proc_environ(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    env = {}
    for item in data.split(b"\0"):
        if b"=" in item:
            k, _, v = item.partition(b"=")
            env[k.decode(errors="replace")] = v.decode(errors="replace")
    return env


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def unix_socket_inodes(prefix):
    """{inode: path} of the Unix sockets bound under the path prefix."""
    out = {}
    try:
        with open("/proc/net/unix") as f:
            next(f)
            for line in f:
                parts = line.split()
                if len(parts) >= 8 and parts[7].startswith(prefix):
                    out[int(parts[6])] = parts[7]
    except OSError:
        pass
    return out


def pids_holding_sockets(inodes):
    """{pid: [paths]} of processes with an fd on one of the sockets."""
    out = {}
    if not inodes:
        return out
    for pid in all_pids():
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                ino = int(link[8:-1])
                if ino in inodes:
                    out.setdefault(pid, []).append(inodes[ino])
    return out


def children_of(pid):
    out = []
    for p in all_pids():
        try:
            if proc_stat(p)["ppid"] == pid:
                out.append(p)
        except (OSError, ValueError, IndexError):
            pass
    return out


def descendants_of(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children_of(p):
            out.append(c)
            todo.append(c)
    return out


# ------------------------------------------------------------ HTTP over unix

class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=HTTP_TIMEOUT):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def _do_request(conn, method, path, body=None, headers=None, raw_body=None):
    hdrs = dict(headers or {})
    data = None
    if raw_body is not None:
        data = raw_body
    elif body is not None:
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    if data is not None and method in ("POST", "PUT", "PATCH", "DELETE"):
        hdrs.setdefault("Content-Length", str(len(data)))
    conn.request(method, path, body=data, headers=hdrs)
    resp = conn.getresponse()
    rbody = resp.read()
    rheaders = {k.lower(): v for k, v in resp.getheaders()}
    return resp.status, rheaders, rbody


class Reply:
    """(status, headers, body) with helpers; unpacks as a 3-tuple."""

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def __iter__(self):
        return iter((self.status, self.headers, self.body))

    def json(self):
        return json.loads(self.body.decode())

    def __repr__(self):
        return "<HTTP %s %r %r>" % (self.status, self.headers,
                                    self.body[:500])


# ------------------------------------------------------------------ cleanup

def reap_rundir(rundir, extra=(), known_children=None):
    """SIGKILL everything a daemon on rundir left behind: processes whose
    environment carries LODGE_TEST_RUNDIR=rundir (lodged may overwrite its
    environment block for its process titles, so this is not enough),
    processes holding a Unix socket bound under rundir (the front's
    lodged.sock, each worker's sessions/ID.sock), the pids in extra,
    everything below those, and the session children in known_children
    ({pid: starttime}; children carry no marker; a pid is matched with its
    start time so that a recycled pid is never hit)."""
    known_children = known_children or {}
    me = os.getpid()
    marker = ("LODGE_TEST_RUNDIR=" + rundir).encode()
    for _ in range(5):
        victims = set()
        for pid in all_pids():
            try:
                with open("/proc/%d/environ" % pid, "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if marker in env:
                victims.add(pid)
        victims.update(pids_holding_sockets(unix_socket_inodes(rundir + "/")))
        victims.update(p for p in extra if proc_exists(p))
        for pid, start in known_children.items():
            try:
                if proc_stat(pid)["starttime"] == start:
                    victims.add(pid)
            except (OSError, ValueError, IndexError):
                pass
        for pid in list(victims):
            victims.update(descendants_of(pid))
        victims.discard(me)
        victims = {p for p in victims if proc_exists(p)}
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
    for pid, start in known_children.items():
        try:
            if proc_stat(pid)["starttime"] == start:
                os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def _reaper_main(argv):
    """`lodgetest.py --reaper TESTPID STARTTIME RUNDIR`: a watchdog that
    cleans up after a test process that died without doing so itself
    (killed by a timeout, SIGKILL, a crash)."""
    test_pid, start, rundir = int(argv[0]), int(argv[1]), argv[2]
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    while True:
        try:
            alive = proc_stat(test_pid)["starttime"] == start and \
                proc_exists(test_pid)
        except (OSError, ValueError, IndexError):
            alive = False
        if not alive:
            break
        time.sleep(0.5)
    reap_rundir(rundir)
    if not os.environ.get("LODGE_TEST_KEEP"):
        shutil.rmtree(rundir, ignore_errors=True)
    os._exit(0)


# ------------------------------------------------------------------ daemon

class DaemonError(Exception):
    pass


class Lodged:
    """A private lodged instance on a free loopback port and a fresh
    runtime dir.  Use as a context manager, or call start()/stop()."""

    def __init__(self, extra_args=(), token_file=None, env=None,
                 auth=True):
        self.extra_args = list(extra_args)
        self.token_file = token_file
        self.extra_env = dict(env or {})
        self.auth = auth
        self.port = free_port()
        self.rundir = tempfile.mkdtemp(prefix="lodge-test-run-")
        logdir = os.environ.get("LODGE_TEST_LOGDIR")
        if logdir:
            os.makedirs(logdir, exist_ok=True)
        else:
            logdir = os.path.dirname(self.rundir)
        # the port alone is not unique across parallel test runs
        self.logpath = os.path.join(logdir, "lodged-%d-%s.log" % (
            self.port, os.path.basename(self.rundir).split("-")[-1]))
        self.proc = None
        self.token = None
        self._saved_token_file = None
        self.keep_log = bool(os.environ.get("LODGE_TEST_KEEP"))
        self.known_children = {}     # pid -> starttime of session children
        self.starts = 0

    # ---- life cycle

    @property
    def sock_path(self):
        return os.path.join(self.rundir, "lodged.sock")

    def session_sock(self, sid):
        return os.path.join(self.rundir, "sessions", "%s.sock" % sid)

    def socket_owners(self, path):
        """pids of the processes holding the Unix socket bound at path."""
        return sorted(pids_holding_sockets(
            {i: p for i, p in unix_socket_inodes(path).items()
             if p == path}))

    def argv(self, token_file=None):
        args = [LODGED, "--foreground", "--listen", "127.0.0.1:%d" % self.port,
                "--runtime-dir", self.rundir]
        tf = token_file or self.token_file
        if tf:
            args += ["--token-file", tf]
        return args + self.extra_args

    def _env(self):
        env = dict(os.environ)
        env.pop("LODGE_TOKEN", None)
        env.update(self.extra_env)
        env["LODGE_TEST_RUNDIR"] = self.rundir
        return env

    def start(self, token_file=None):
        if not os.access(LODGED, os.X_OK):
            # a failure, not a skip: a missing daemon must never look green
            raise DaemonError("lodged binary not found or not executable at "
                              "%s (set LODGED)" % LODGED)
        self.starts += 1
        self._start_reaper()
        logf = open(self.logpath, "ab")
        logf.write(("\n==== start #%d: %s\n" % (
            self.starts, " ".join(self.argv(token_file)))).encode())
        logf.flush()
        self.proc = subprocess.Popen(
            self.argv(token_file), stdin=subprocess.DEVNULL,
            stdout=logf, stderr=logf, env=self._env(), close_fds=True)
        logf.close()
        try:
            self._wait_ready(token_file=token_file)
        except BaseException:
            self.keep_log = True
            self._kill_front()
            raise

    def _start_reaper(self):
        if getattr(self, "_reaper", None) is not None:
            return
        env = dict(os.environ)
        env.pop("LODGE_TEST_RUNDIR", None)
        self._reaper = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--reaper",
             str(os.getpid()), str(proc_stat(os.getpid())["starttime"]),
             self.rundir],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=env, start_new_session=True,
            close_fds=True)

    def _stop_reaper(self):
        r = getattr(self, "_reaper", None)
        if r is not None:
            r.kill()
            r.wait()
            self._reaper = None

    def _wait_ready(self, timeout=60.0, token_file=None):
        # generous: a front finding many sessions on a loaded machine may
        # take seconds to answer its first health check
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise DaemonError("lodged exited with %s during start-up; "
                                  "log %s:\n%s" % (rc, self.logpath,
                                                   self.log_tail()))
            tok = self._read_token(token_file)
            if tok is not None or not self.auth:
                self.token = tok
                try:
                    st, _, body = self.request("GET", "/v1/health",
                                               timeout=10)
                    if st == 200:
                        return
                    last = "health answered %s %r" % (st, body[:200])
                except OSError as e:
                    last = repr(e)
            else:
                last = "no token file yet"
            time.sleep(0.05)
        raise DaemonError("lodged not ready after %.0f s (%s); log %s:\n%s"
                          % (timeout, last, self.logpath, self.log_tail()))

    def _read_token(self, token_file=None):
        if self.extra_env.get("LODGE_TOKEN"):
            return self.extra_env["LODGE_TOKEN"]
        path = token_file or self.token_file or \
            os.path.join(self.rundir, "token")
        try:
            with open(path) as f:
                tok = f.read().strip()
        except FileNotFoundError:
            return None
        return tok or None

    def kill9(self):
        """SIGKILL the front only (session workers must survive)."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def restart(self):
        """Start a new front with the same runtime dir, port and token."""
        if self.proc is not None and self.proc.poll() is None:
            raise DaemonError("front still running")
        tf = None
        if not self.token_file and not self.extra_env.get("LODGE_TOKEN"):
            # the token was generated: hand the same one to the new front
            if self._saved_token_file is None:
                fd, self._saved_token_file = tempfile.mkstemp(
                    prefix="lodge-test-token-")
                os.write(fd, (self.token + "\n").encode())
                os.close(fd)
            tf = self._saved_token_file
        self.start(token_file=tf)

    def _kill_front(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        # 1. delete every listed session, through the front if it is up
        if self.proc is not None and self.proc.poll() is None:
            try:
                st, _, body = self.request("GET", "/v1/sessions", timeout=10)
                if st == 200:
                    for s in json.loads(body).get("sessions", []):
                        self.note_session(s)
                        try:
                            self.request("DELETE", "/v1/sessions/" + s["id"],
                                         timeout=30)
                        except Exception:
                            pass
            except Exception:
                pass
        # 2. the front (remember its descendants first: a template or
        #    workers it forked)
        tree = set()
        if self.proc is not None and self.proc.poll() is None:
            tree.update(descendants_of(self.proc.pid))
        self._kill_front()
        # 3. backstop (see reap_rundir)
        reap_rundir(self.rundir, tree, self.known_children)
        self._stop_reaper()
        # 4. a sanitizer build writes its reports to the daemon's log (the
        #    front's, and every worker's, which share its stderr)
        report = self.sanitizer_report()
        if report:
            self.keep_log = True
        if not os.environ.get("LODGE_TEST_KEEP"):
            shutil.rmtree(self.rundir, ignore_errors=True)
            if self._saved_token_file:
                try:
                    os.unlink(self._saved_token_file)
                except OSError:
                    pass
            if not self.keep_log:
                try:
                    os.unlink(self.logpath)
                except OSError:
                    pass
        if self.keep_log:
            sys.stderr.write("\n[lodgetest] daemon log kept: %s\n"
                             % self.logpath)
        if report:
            raise AssertionError("sanitizer report in the daemon log %s:\n%s"
                                 % (self.logpath, report))

    SANITIZER_MARKS = (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer",
                       b"runtime error:", b"WARNING: AddressSanitizer")

    def sanitizer_report(self):
        """The first sanitizer report in the daemon's log, or ''."""
        try:
            with open(self.logpath, "rb") as f:
                data = f.read()
        except OSError:
            return ""
        for mark in self.SANITIZER_MARKS:
            i = data.find(mark)
            if i != -1:
                return data[max(0, i - 200):i + 3000].decode("utf-8",
                                                             "replace")
        return ""

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            self.keep_log = True
        self.stop()

    def log_tail(self, n=60):
        try:
            with open(self.logpath, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
        except OSError as e:
            return "(no log: %s)" % e
        return "\n".join(lines[-n:])

    def note_session(self, s):
        """Remember a session child so that stop() can always kill it."""
        try:
            pid = int(s["pid"])
            if pid > 1 and pid not in self.known_children:
                self.known_children[pid] = proc_stat(pid)["starttime"]
        except (KeyError, TypeError, ValueError, OSError, IndexError):
            pass

    # ---- HTTP

    def _auth_headers(self, token, headers):
        h = dict(headers or {})
        if token is _DEFAULT:
            token = self.token
        if token is not None:
            h.setdefault("Authorization", "Bearer " + token)
        return h

    def request(self, method, path, body=None, token=_DEFAULT, headers=None,
                raw_body=None, timeout=HTTP_TIMEOUT):
        conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)
        try:
            r = Reply(*_do_request(conn, method, path, body,
                                   self._auth_headers(token, headers),
                                   raw_body))
        finally:
            conn.close()
        self._note_reply(method, path, r)
        return r

    def unix_request(self, method, path, body=None, headers=None,
                     raw_body=None, sock_path=None, timeout=HTTP_TIMEOUT):
        conn = UnixHTTPConnection(sock_path or self.sock_path,
                                  timeout=timeout)
        try:
            r = Reply(*_do_request(conn, method, path, body, headers,
                                   raw_body))
        finally:
            conn.close()
        self._note_reply(method, path, r)
        return r

    def _note_reply(self, method, path, r):
        if (method == "POST" and path.rstrip("/") == "/v1/sessions"
                and r.status == 201):
            try:
                self.note_session(r.json())
            except Exception:
                pass

    def json(self, method, path, body=None, expect=200, **kw):
        r = self.request(method, path, body, **kw)
        if r.status != expect:
            raise AssertionError("%s %s: expected %s, got %s %r" % (
                method, path, expect, r.status, r.body[:1000]))
        if not r.body:
            return None
        return r.json()

    # ---- WebSocket

    def ws_url(self, path, **query):
        q = {k: str(v) for k, v in query.items() if v is not None}
        url = "ws://127.0.0.1:%d%s" % (self.port, path)
        if q:
            url += ("&" if "?" in path else "?") + urllib.parse.urlencode(q)
        return url


# ------------------------------------------------------------ session helpers

def sess_path(ref, suffix=""):
    return "/v1/sessions/" + urllib.parse.quote(ref, safe="") + suffix


def b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode()


# ------------------------------------------------------------ WebSocket client

class ProtocolViolation(AssertionError):
    pass


class WSClient:
    """A msgpack-over-WebSocket client that records every message and
    checks output offsets for contiguity.

    Output is kept as segments [offset, bytearray]; a `gap` message (or a
    first data message) starts a new segment.  Any data message whose offset
    is not the previous offset + len(previous data) raises
    ProtocolViolation, unless it follows a gap whose `to` it matches.
    """

    def __init__(self, ws, label="ws"):
        self.ws = ws
        self.label = label
        self.messages = []          # every decoded message, in order
        self.expect_off = None      # where the next data must start
        self.segments = []          # [start_offset, bytearray]
        self.types = []             # (offset, type, data) per data message
        self.closed = False
        self.close_code = None

    # ---- connect

    @classmethod
    async def connect(cls, lodged, ref, token=_DEFAULT, query=None,
                      label=None, unix_path=None, extra_headers=None,
                      sock=None, **kw):
        path = sess_path(ref, "/attach")
        q = dict(query or {})
        headers = dict(extra_headers or {})
        if unix_path is None:
            if token is _DEFAULT:
                token = lodged.token
            if token is not None:
                headers["Authorization"] = "Bearer " + token
        return await cls.open(lodged, path, q, headers, label or ref,
                              unix_path=unix_path, sock=sock, **kw)

    @classmethod
    async def open(cls, lodged, path, query, headers, label, unix_path=None,
                   sock=None, **kw):
        opts = dict(max_size=None, ping_interval=None, compression=None,
                    open_timeout=DEFAULT_TIMEOUT, close_timeout=5)
        opts.update(kw)
        if unix_path is not None:
            url = "ws://localhost" + path
            if query:
                url += "?" + urllib.parse.urlencode(
                    {k: str(v) for k, v in query.items()})
            ws = await websockets.unix_connect(unix_path, url,
                                               extra_headers=headers, **opts)
        else:
            url = lodged.ws_url(path, **query)
            if sock is not None:
                opts["sock"] = sock
            ws = await websockets.connect(url, extra_headers=headers, **opts)
        return cls(ws, label)

    # ---- send

    async def send(self, m):
        await self.ws.send(msgpack.packb(m, use_bin_type=True))

    async def send_raw(self, data):
        await self.ws.send(data)

    async def stdin(self, data):
        if isinstance(data, str):
            data = data.encode()
        await self.send({"type": "stdin", "data": data})

    # ---- receive

    async def recv(self, timeout=DEFAULT_TIMEOUT):
        """Next message (decoded map).  Raises ConnectionClosed at the end."""
        try:
            raw = await asyncio.wait_for(self.ws.recv(), timeout)
        except websockets.exceptions.ConnectionClosed:
            self.closed = True
            self.close_code = self.ws.close_code
            raise
        if not isinstance(raw, bytes):
            raise ProtocolViolation("%s: text frame from server: %r"
                                    % (self.label, raw[:200]))
        try:
            m = msgpack.unpackb(raw, raw=False)
        except Exception as e:
            raise ProtocolViolation("%s: undecodable frame %r: %s"
                                    % (self.label, raw[:100], e))
        if not isinstance(m, dict) or not isinstance(m.get("type"), str):
            raise ProtocolViolation("%s: message is not a map with a string "
                                    "type: %r" % (self.label, m))
        self.messages.append(m)
        self._track(m)
        return m

    def _track(self, m):
        t = m["type"]
        if t == "gap":
            if not isinstance(m.get("from"), int) or \
                    not isinstance(m.get("to"), int):
                raise ProtocolViolation("%s: bad gap %r" % (self.label, m))
            if m["to"] < m["from"]:
                raise ProtocolViolation("%s: gap goes backwards %r"
                                        % (self.label, m))
            if self.expect_off is not None and m["from"] != self.expect_off:
                raise ProtocolViolation(
                    "%s: gap from %d but the next expected offset was %d"
                    % (self.label, m["from"], self.expect_off))
            self.expect_off = m["to"]
            self.segments.append([m["to"], bytearray()])
        elif t == "attached":
            if isinstance(m.get("replayFrom"), int):
                # a gap, if any, comes next and starts at `since`; the
                # replay then starts at replayFrom
                pass
        elif t in ("stdout", "stderr"):
            data, off = m.get("data"), m.get("offset")
            if not isinstance(data, bytes):
                raise ProtocolViolation("%s: %s data is not bin: %r"
                                        % (self.label, t, m))
            if not isinstance(off, int):
                raise ProtocolViolation("%s: %s offset is not an int: %r"
                                        % (self.label, t, m))
            if self.expect_off is not None and off != self.expect_off:
                raise ProtocolViolation(
                    "%s: non-contiguous output: offset %d, expected %d "
                    "(message %r)" % (self.label, off, self.expect_off,
                                      m if len(data) < 200 else t))
            if not self.segments or self.expect_off is None:
                self.segments.append([off, bytearray()])
            self.segments[-1][1] += data
            self.types.append((off, t, data))
            self.expect_off = off + len(data)

    @property
    def output(self):
        """All output bytes received (every segment joined)."""
        return b"".join(bytes(s[1]) for s in self.segments)

    @property
    def end_offset(self):
        return self.expect_off

    def slice(self, start, end):
        """Output bytes [start, end) if held in one segment, else None."""
        for s0, data in self.segments:
            if s0 <= start and end <= s0 + len(data):
                return bytes(data[start - s0:end - s0])
        return None

    def output_since(self, off):
        for s0, data in self.segments:
            if s0 <= off <= s0 + len(data):
                return bytes(data[off - s0:])
        return b""

    async def recv_until(self, pred, timeout=DEFAULT_TIMEOUT, what=None):
        """Receive until pred(msg) is true; return that message."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(self._timeout_msg(timeout, what))
            try:
                m = await self.recv(left)
            except asyncio.TimeoutError:
                raise AssertionError(self._timeout_msg(timeout, what))
            except websockets.exceptions.ConnectionClosed:
                raise AssertionError(
                    "%s: connection closed (code %s) while waiting for %s; "
                    "last messages %s" % (self.label, self.close_code,
                                          what or "a message",
                                          self._last()))
            if pred(m):
                return m

    async def recv_type(self, typ, timeout=DEFAULT_TIMEOUT):
        return await self.recv_until(lambda m: m["type"] == typ, timeout,
                                     what="a %r message" % typ)

    async def wait_output(self, pattern, since=None, timeout=DEFAULT_TIMEOUT):
        """Receive until the output (from offset since, or all of it)
        matches the regex pattern (bytes); return the match."""
        if isinstance(pattern, str):
            pattern = pattern.encode()
        rx = re.compile(pattern, re.S)

        def check():
            buf = self.output if since is None else self.output_since(since)
            return rx.search(buf)

        mt = check()
        if mt:
            return mt
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                m = await self.recv(left)
            except asyncio.TimeoutError:
                break
            except websockets.exceptions.ConnectionClosed:
                raise AssertionError(
                    "%s: connection closed (code %s) while waiting for "
                    "output %r; output tail %r" % (
                        self.label, self.close_code, pattern,
                        self.output[-400:]))
            if m["type"] in ("stdout", "stderr"):
                mt = check()
                if mt:
                    return mt
        raise AssertionError("%s: output %r not seen in %.0f s; output tail "
                             "%r" % (self.label, pattern, timeout,
                                     self.output[-400:]))

    async def handshake(self, timeout=DEFAULT_TIMEOUT):
        """Read `attached`, an optional `gap`, the replay and `live`.
        Returns (attached, gap_or_None, replay_bytes).  Checks the replay's
        offsets against replayFrom/replayTo."""
        att = await self.recv(timeout)
        if att["type"] != "attached":
            raise ProtocolViolation("%s: first message is not attached: %r"
                                    % (self.label, att))
        for k in ("replayFrom", "replayTo"):
            if not isinstance(att.get(k), int):
                raise ProtocolViolation("%s: attached.%s missing or not an "
                                        "int: %r" % (self.label, k, att))
        if not isinstance(att.get("session"), dict):
            raise ProtocolViolation("%s: attached.session is not a map: %r"
                                    % (self.label, att))
        a, b = att["replayFrom"], att["replayTo"]
        if a > b:
            raise ProtocolViolation("%s: replayFrom > replayTo: %r"
                                    % (self.label, att))
        gap = None
        replay = bytearray()
        expect = a
        first = True
        while True:
            m = await self.recv(timeout)
            t = m["type"]
            if t == "gap":
                if not first or gap is not None:
                    raise ProtocolViolation("%s: gap not right after "
                                            "attached: %r" % (self.label, m))
                if m["to"] != a:
                    raise ProtocolViolation("%s: gap.to %r != replayFrom %r"
                                            % (self.label, m["to"], a))
                gap = m
                continue
            first = False
            if t in ("stdout", "stderr"):
                if m["offset"] != expect:
                    raise ProtocolViolation(
                        "%s: replay message at offset %d, expected %d"
                        % (self.label, m["offset"], expect))
                replay += m["data"]
                expect += len(m["data"])
                if expect > b:
                    raise ProtocolViolation(
                        "%s: replay runs past replayTo %d (to %d)"
                        % (self.label, b, expect))
                continue
            if t == "live":
                if expect != b:
                    raise ProtocolViolation(
                        "%s: live after replaying to %d, replayTo is %d"
                        % (self.label, expect, b))
                return att, gap, bytes(replay)
            raise ProtocolViolation("%s: unexpected %r during replay"
                                    % (self.label, m))

    async def expect_close(self, timeout=DEFAULT_TIMEOUT):
        """Read until the server closes; return (close_code, messages seen)."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("%s: server did not close in %.0f s; "
                                     "last %s" % (self.label, timeout,
                                                  self._last()))
            try:
                seen.append(await self.recv(left))
            except asyncio.TimeoutError:
                continue
            except websockets.exceptions.ConnectionClosed:
                return self.ws.close_code, seen

    async def close(self):
        try:
            await asyncio.wait_for(self.ws.close(), 10)
        except Exception:
            pass

    def _last(self, n=6):
        out = []
        for m in self.messages[-n:]:
            if "data" in m and isinstance(m["data"], bytes) and \
                    len(m["data"]) > 120:
                m = dict(m, data=m["data"][:60] + b"..." + m["data"][-60:])
            out.append(m)
        return out

    def _timeout_msg(self, timeout, what):
        return "%s: no %s within %.0f s; last messages %s" % (
            self.label, what or "matching message", timeout, self._last())


async def ws_refused(lodged, path, headers=None, unix_path=None, query=None):
    """Try a WebSocket upgrade; return (status, body) of the refusal, or
    (101, None) if it was accepted (and closed again)."""
    key = base64.b64encode(os.urandom(16)).decode()
    h = {"Upgrade": "websocket", "Connection": "Upgrade",
         "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
    h.update(headers or {})
    if query:
        path += "?" + urllib.parse.urlencode(query)

    def go():
        if unix_path:
            conn = UnixHTTPConnection(unix_path, timeout=HTTP_TIMEOUT)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", lodged.port,
                                              timeout=HTTP_TIMEOUT)
        try:
            conn.request("GET", path, headers=h)
            resp = conn.getresponse()
            if resp.status == 101:
                return 101, None
            return resp.status, resp.read()
        finally:
            conn.close()
    return await asyncio.to_thread(go)


# --------------------------------------------------------------- test bases

class LodgeTestMixin:
    """Common helpers.  The class owns `self.d` (a Lodged)."""

    d = None

    async def asyncSetUp(self):
        # IsolatedAsyncioTestCase runs the loop in debug mode; the blocking
        # REST calls in the tests would flood stderr with slow-callback notes
        asyncio.get_running_loop().slow_callback_duration = 3600
        await super().asyncSetUp()

    def run(self, result=None):
        self._own = []
        if result is None:
            result = self.defaultTestResult()
        before = len(result.failures) + len(result.errors)
        try:
            return super().run(result)
        finally:
            after = len(result.failures) + len(result.errors)
            if after > before:
                for d in self._daemons():
                    d.keep_log = True
                    sys.stderr.write("\n[lodgetest] %s failed; daemon log "
                                     "%s, tail:\n%s\n" % (
                                         self.id(), d.logpath,
                                         d.log_tail(40)))
            for d in self._own:
                d.stop()

    def _daemons(self):
        out = []
        for v in [getattr(type(self), "d", None), getattr(self, "d", None)] \
                + list(getattr(self, "_own", [])):
            if isinstance(v, Lodged) and v not in out:
                out.append(v)
        return out

    def start_daemon(self, **kw):
        """A daemon for this test only; stopped after the test (and after
        its cleanups, which may still need it)."""
        d = Lodged(**kw)
        self._own.append(d)
        d.start()
        return d

    # sessions created through create() are deleted at the end of the test
    def create(self, body, d=None, expect=201):
        d = d or self.d
        r = d.request("POST", "/v1/sessions", body)
        if r.status != expect:
            raise AssertionError("create %r: expected %s, got %s %r"
                                 % (body, expect, r.status, r.body[:1000]))
        if expect != 201:
            return r
        s = r.json()
        self.addCleanup(self._delete_quietly, d, s["id"])
        return s

    @staticmethod
    def _delete_quietly(d, sid):
        try:
            if d.proc is not None and d.proc.poll() is None:
                d.request("DELETE", sess_path(sid), timeout=30)
        except Exception:
            pass

    def get(self, ref, d=None):
        return (d or self.d).json("GET", sess_path(ref))

    def wait_state(self, ref, state="exited", timeout=DEFAULT_TIMEOUT, d=None):
        box = {}

        def ok():
            box["s"] = self.get(ref, d)
            return box["s"]["state"] == state
        wait_for(ok, timeout, interval=0.1,
                 what="session %s to be %s" % (ref, state))
        return box["s"]

    def log(self, ref, since=None, d=None):
        path = sess_path(ref, "/log")
        if since is not None:
            path += "?since=%s" % since
        return (d or self.d).request("GET", path)

    def wait_log(self, ref, pattern, timeout=DEFAULT_TIMEOUT, d=None):
        """Poll the log until the regex (bytes) matches; return the match."""
        if isinstance(pattern, str):
            pattern = pattern.encode()
        rx = re.compile(pattern, re.S)
        box = {}

        def ok():
            r = self.log(ref, d=d)
            assert r.status == 200, r
            box["body"] = r.body
            return rx.search(r.body)
        try:
            return wait_for(ok, timeout, interval=0.1,
                            what="log of %s to match %r" % (ref, pattern))
        except AssertionError as e:
            raise AssertionError("%s; log tail %r" % (
                e, box.get("body", b"")[-500:]))

    def input(self, ref, text, d=None):
        r = (d or self.d).request("POST", sess_path(ref, "/input"),
                                  {"data": text})
        self.assertEqual(r.status, 204, r)

    def signal(self, ref, sig, d=None):
        r = (d or self.d).request("POST", sess_path(ref, "/signal"),
                                  {"signal": sig})
        self.assertEqual(r.status, 204, r)

    PS1 = "LODGEPS1> "

    def bash_session(self, d=None, cols=None, rows=None, env=None,
                     wait_prompt=True, **extra):
        """A PTY session running `bash --norc -i` with a known PS1."""
        body = {"args": ["bash", "--norc", "-i"], "pty": True,
                "env": dict({"PS1": self.PS1}, **(env or {}))}
        if cols is not None:
            body["cols"] = cols
        if rows is not None:
            body["rows"] = rows
        body.update(extra)
        s = self.create(body, d=d)
        if wait_prompt:
            self.wait_log(s["id"], re.escape(self.PS1.encode()), d=d)
        return s

    _marker = 1000

    def pty_run(self, ref, cmd, d=None, timeout=DEFAULT_TIMEOUT):
        """Type cmd into an interactive shell session and return the bytes
        it printed (between two computed markers, so that the terminal's
        echo of the typed line never matches)."""
        LodgeTestMixin._marker += 1
        n = LodgeTestMixin._marker
        self.input(ref, "echo BEG-$((%d+1)); %s; echo END-$((%d+2))\n"
                   % (n, cmd, n), d=d)
        m = self.wait_log(ref, rb"BEG-%d\r?\n(.*?)END-%d" % (n + 1, n + 2),
                          timeout=timeout, d=d)
        return m.group(1)

    def check_session_object(self, s, **expect):
        for k in ("id", "pid", "pty", "cols", "rows", "createdAt", "state",
                  "clients", "bufferSize", "outputBytes"):
            self.assertIn(k, s, "session object lacks %r: %r" % (k, s))
        self.assertRegex(s["id"], r"^[A-Za-z0-9_-]{20,}$",
                         "id must be URL-safe with >= 120 random bits")
        self.assertIsInstance(s["pid"], int)
        self.assertGreater(s["pid"], 1)
        self.assertIsInstance(s["pty"], bool)
        self.assertRegex(s["createdAt"], RFC3339)
        self.assertIn(s["state"], ("running", "exited"))
        self.assertIsInstance(s["clients"], int)
        self.assertIsInstance(s["outputBytes"], int)
        self.assertIsInstance(s["bufferSize"], int)
        for k, v in expect.items():
            self.assertEqual(s.get(k), v, "session field %r: %r" % (k, s))

    def assertError(self, reply, status, code):
        self.assertEqual(reply.status, status, reply)
        ctype = reply.headers.get("content-type", "")
        self.assertTrue(ctype.startswith("application/json"),
                        "error reply content-type %r" % ctype)
        try:
            j = reply.json()
        except Exception:
            self.fail("error body is not JSON: %r" % reply.body[:300])
        self.assertIsInstance(j.get("error"), dict, j)
        self.assertEqual(j["error"].get("code"), code, j)
        self.assertIsInstance(j["error"].get("message"), str, j)
        return j

    def assertGone(self, pid, timeout=DEFAULT_TIMEOUT):
        """The process and its process group no longer exist."""
        wait_for(lambda: not pgrp_exists(pid) and not proc_exists(pid),
                 timeout, what="process group %d to be gone" % pid)
        with self.assertRaises(ProcessLookupError):
            os.kill(-pid, 0)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            pass
        else:
            # only a zombie not yet reaped would do; the worker should reap
            wait_for(lambda: not os.path.exists("/proc/%d" % pid), timeout,
                     what="pid %d to be reaped" % pid)


class DaemonPerClass(LodgeTestMixin, unittest.IsolatedAsyncioTestCase):
    """One daemon for the whole class (self.d)."""

    daemon_args = ()

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.d = Lodged(extra_args=cls.daemon_args)
        try:
            cls.d.start()
        except BaseException:
            cls.d.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.d is not None:
            cls.d.stop()
        super().tearDownClass()


class DaemonPerTest(LodgeTestMixin, unittest.IsolatedAsyncioTestCase):
    """A fresh daemon for each test (self.d)."""

    daemon_args = ()

    def setUp(self):
        self.d = self.start_daemon(extra_args=self.daemon_args)


def main():
    unittest.main(verbosity=2)


if __name__ == "__main__" and sys.argv[1:2] == ["--reaper"]:
    _reaper_main(sys.argv[2:])

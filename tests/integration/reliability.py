"""Helpers for the reliability and security tests (test_limits.py,
test_badinput_more.py, test_chaos.py, test_leaks.py, test_security.py).

Builds on lodgetest.py (the shared harness), which it does not change:
raw HTTP exchanges on a socket, /proc probes (fd counts, RSS, process
titles, zombies), a counter session whose output can be checked for holes,
a WebSocket client kept streaming in a thread of its own across test
methods, and running a small Python program as the user nobody.
"""

import asyncio
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import sys
import threading
import time

import msgpack
import websockets
import websockets.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
from lodgetest import WSClient, sess_path, wait_for  # noqa: E402

NOBODY_UID = 65534
NOGROUP_GID = 65534


# ------------------------------------------------------------------ /proc

def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def fd_list(pid):
    return sorted(int(x) for x in os.listdir("/proc/%d/fd" % pid))


def fd_links(pid):
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


def rss_kib(pid):
    return int(lt.proc_status(pid)["VmRSS"].split()[0])


def cmdline(pid):
    """The process title (setproctitle rewrites argv)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def title(pid):
    """The process title as set: argv[0] of /proc/PID/cmdline."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return ""
    return raw.split(b"\0")[0].decode(errors="replace")


def uid_line(pid):
    """[real, effective, saved, fs] uids of pid."""
    return [int(x) for x in lt.proc_status(pid)["Uid"].split()]


def gid_line(pid):
    return [int(x) for x in lt.proc_status(pid)["Gid"].split()]


def template_pid(front_pid):
    for c in lt.children_of(front_pid):
        if title(c) == "lodged: template":
            return c
    return None


def worker_of(child_pid):
    """The session worker: the session child's parent."""
    return lt.proc_stat(child_pid)["ppid"]


def lodged_processes(rundir, front_pid=None):
    """pids of every lodged process of the daemon on rundir: the front and
    its descendants, and whatever holds a socket under rundir (the
    workers, which are not the front's descendants once it restarted)."""
    pids = set()
    if front_pid is not None and lt.proc_exists(front_pid):
        pids.add(front_pid)
        pids.update(lt.descendants_of(front_pid))
    pids.update(lt.pids_holding_sockets(lt.unix_socket_inodes(rundir + "/")))
    return {p for p in pids if os.path.exists("/proc/%d" % p)
            and title(p).startswith("lodged")}


def zombies_under(pids):
    """[(pid, ppid, comm)] of zombie processes among pids and all their
    descendants."""
    todo = set(pids)
    for p in list(pids):
        todo.update(lt.descendants_of(p))
    out = []
    for p in todo:
        try:
            st = lt.proc_stat(p)
        except (OSError, ValueError, IndexError):
            continue
        if st["state"] == "Z":
            out.append((p, st["ppid"], st["comm"]))
    return out


def stable_fd_count(pid, settle=0.5, timeout=15.0):
    """pid's fd count once it has not changed for settle seconds."""
    deadline = time.monotonic() + timeout
    last = fd_count(pid)
    while time.monotonic() < deadline:
        time.sleep(settle)
        n = fd_count(pid)
        if n == last:
            return n
        last = n
    return last


def wait_fd_count(pid, want, timeout=15.0):
    """Wait until pid holds exactly want fds; return the last count."""
    deadline = time.monotonic() + timeout
    while True:
        n = fd_count(pid)
        if n == want or time.monotonic() > deadline:
            return n
        time.sleep(0.1)


# ------------------------------------------------------------- raw HTTP

class RawReply:
    """One HTTP response read off a raw socket."""

    def __init__(self, status, reason, headers, body, raw_head):
        self.status, self.reason = status, reason
        self.headers, self.body, self.raw_head = headers, body, raw_head

    def json(self):
        return json.loads(self.body.decode())

    def __repr__(self):
        return "<raw HTTP %s %r %r>" % (self.status, self.headers,
                                        self.body[:300])


class RawConn:
    """A raw TCP (or Unix) connection for requests the standard library
    will not write."""

    def __init__(self, d=None, port=None, unix_path=None, timeout=30.0):
        if unix_path is not None:
            self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.s.settimeout(timeout)
            self.s.connect(unix_path)
        else:
            self.s = socket.create_connection(
                ("127.0.0.1", port or d.port), timeout=timeout)
        self.buf = b""
        self.eof = False

    def send(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.s.sendall(data)

    def _fill(self):
        try:
            chunk = self.s.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def read_reply(self, timeout=None):
        """The next response; None if the server closed first."""
        if timeout is not None:
            self.s.settimeout(timeout)
        while b"\r\n\r\n" not in self.buf:
            if not self._fill():
                return None
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        status = int(parts[1])
        reason = parts[2] if len(parts) > 2 else ""
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        while len(rest) < n:
            self.buf = head + b"\r\n\r\n" + rest
            if not self._fill():
                break
            head, _, rest = self.buf.partition(b"\r\n\r\n")
        body, self.buf = rest[:n], rest[n:]
        return RawReply(status, reason, headers, body, head)

    def closed_by_peer(self, timeout=5.0):
        """True if the server closes the connection within timeout (any
        bytes it sends meanwhile are kept in self.buf)."""
        self.s.settimeout(0.2)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if not self._fill():
                    return True
            except socket.timeout:
                continue
            except OSError:
                return True
        return False

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


def raw_request(d, data, timeout=30.0, unix_path=None):
    """Send data on a new connection; return (first reply or None,
    closed_after) where closed_after tells whether the server closed the
    connection after the reply (within 2 s)."""
    with RawConn(d, unix_path=unix_path, timeout=timeout) as c:
        try:
            c.send(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        r = c.read_reply()
        closed = True if r is None else c.closed_by_peer(2.0)
        return r, closed


def http_head(method, path, token=None, extra=(), body=b"", version="1.1",
              host=True, clen=True):
    """A request head (and body) as bytes."""
    lines = ["%s %s HTTP/%s" % (method, path, version)]
    if host:
        lines.append("Host: lodge")
    if token:
        lines.append("Authorization: Bearer " + token)
    lines.extend(extra)
    if clen and body:
        lines.append("Content-Length: %d" % len(body))
    if isinstance(body, str):
        body = body.encode()
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def ws_upgrade_head(path, token=None, extra=(), key=None):
    key = key or base64.b64encode(os.urandom(16)).decode()
    return http_head("GET", path, token, [
        "Upgrade: websocket", "Connection: Upgrade",
        "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
        + list(extra))


# --------------------------------------------------------- counter session

# A counter: "c N\n" every INTERVAL seconds, no fork per line.  Input is
# echoed back verbatim (sysread, so several lines at once stay whole).
COUNTER_PERL = r"""
$| = 1;
my $iv = $ARGV[0];
my $rin = ''; vec($rin, fileno(STDIN), 1) = 1;
my $i = 0; my $open = 1;
while (1) {
    $i++;
    print "c $i\n";
    if ($open) {
        my $n = select(my $rout = $rin, undef, undef, $iv);
        if ($n > 0) {
            my $got = sysread(STDIN, my $buf, 65536);
            if (!$got) { $open = 0; } else { print $buf; }
        }
    } else {
        select(undef, undef, undef, $iv);
    }
}
"""

COUNTER_LINE = re.compile(rb"^c (\d+)$")


def counter_request(interval=0.005, buffer_size=16 << 20, name=None, **kw):
    body = {"args": ["perl", "-e", COUNTER_PERL, str(interval)],
            "bufferSize": buffer_size}
    if name:
        body["name"] = name
    body.update(kw)
    return body


def check_counter(data, start_at_one=True, what="output"):
    """Check that the counter lines in data (bytes from offset 0 or from a
    line start) are 1, 2, 3, ... without a hole or a repeat; other lines
    (echoed input) are returned.  Returns (last counter, [other lines])."""
    lines = data.split(b"\n")
    if lines and lines[-1] != b"":
        lines = lines[:-1]          # an incomplete last line
    else:
        lines = lines[:-1]
    prev = None
    others = []
    for i, line in enumerate(lines):
        m = COUNTER_LINE.match(line)
        if not m:
            others.append(line)
            continue
        n = int(m.group(1))
        if prev is None:
            if start_at_one and n != 1:
                raise AssertionError("%s: counter starts at %d, not 1"
                                     % (what, n))
        elif n != prev + 1:
            ctx = b"\n".join(lines[max(0, i - 3):i + 3])
            raise AssertionError("%s: counter hole: %d after %d (line %d; "
                                 "context %r)" % (what, n, prev, i, ctx))
        prev = n
    if prev is None:
        raise AssertionError("%s: no counter line in %r" % (what, data[:200]))
    return prev, others


def counter_log_check(d, ref, unix=False):
    """GET the whole log (since=0): the ring must still start at 0, the
    body must be Lodge-Log-End bytes, and the counter must have no hole.
    Returns (last counter, log end offset)."""
    path = sess_path(ref, "/log") + "?since=0"
    r = d.unix_request("GET", path) if unix else d.request("GET", path)
    if r.status != 200:
        raise AssertionError("log of %s: %r" % (ref, r))
    start = int(r.headers["lodge-log-start"])
    end = int(r.headers["lodge-log-end"])
    if start != 0:
        raise AssertionError("log of %s starts at %d: the ring dropped "
                             "bytes (bufferSize too small for the test)"
                             % (ref, start))
    if len(r.body) != end - start:
        raise AssertionError("log of %s: %d bytes, headers say %d..%d"
                             % (ref, len(r.body), start, end))
    last, _ = check_counter(r.body, what="log of %s" % ref)
    return last, end


async def attach_check_from_zero(d, ref, timeout=60.0):
    """Attach with since=0; the replay must be gap-free from 0 (offsets
    checked by WSClient) and hold a hole-free counter.  Returns (last
    counter, replayTo, replay bytes)."""
    c = await WSClient.connect(d, ref, query={"since": 0},
                               label="since0-%s" % ref)
    try:
        att, gap, replay = await c.handshake(timeout)
    finally:
        await c.close()
    if gap is not None:
        raise AssertionError("attach since=0 to %s got a gap %r" % (ref, gap))
    if att["replayFrom"] != 0:
        raise AssertionError("attach since=0 to %s: replayFrom %r"
                             % (ref, att["replayFrom"]))
    last, _ = check_counter(replay, what="replay of %s" % ref)
    return last, att["replayTo"], replay


# ------------------------------------------ a client streaming in a thread

class StreamingClient:
    """A WSClient attached to a session from its own thread and event
    loop, so that it keeps reading (and answering pings) across test
    methods, each of which runs its own loop.  Records every message;
    offsets are checked by WSClient as they arrive."""

    def __init__(self, d, ref, label=None, query=None, unix_path=None):
        self.d, self.ref = d, ref
        self.label = label or "stream-%s" % ref
        self.query = query
        self.unix_path = unix_path
        self.client = None
        self.error = None
        self.closed_code = None
        self.ready = threading.Event()
        self.done = threading.Event()
        self._stop = None
        self._loop = None
        self._sendq = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self, timeout=30.0):
        self.thread.start()
        if not self.ready.wait(timeout):
            raise AssertionError("%s: not attached in %.0f s"
                                 % (self.label, timeout))
        if self.error is not None:
            raise AssertionError("%s: %s" % (self.label, self.error))
        return self

    def _run(self):
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except BaseException as e:   # noqa: B902
            if self.error is None:
                self.error = repr(e)
        finally:
            self.ready.set()
            self.done.set()
            loop.close()

    async def _main(self):
        self._stop = asyncio.Event()
        self._sendq = asyncio.Queue()
        try:
            self.client = await WSClient.connect(
                self.d, self.ref, query=self.query, label=self.label,
                unix_path=self.unix_path)
            await self.client.handshake()
        except BaseException as e:   # noqa: B902
            self.error = "attach failed: %r" % (e,)
            return
        self.ready.set()
        reader = asyncio.ensure_future(self._read())
        sender = asyncio.ensure_future(self._send())
        stopper = asyncio.ensure_future(self._stop.wait())
        await asyncio.wait([reader, stopper],
                           return_when=asyncio.FIRST_COMPLETED)
        sender.cancel()
        if not reader.done():
            await self.client.close()
            try:
                await asyncio.wait_for(reader, 10)
            except Exception:
                reader.cancel()
        stopper.cancel()

    async def _read(self):
        try:
            while True:
                await self.client.recv(3600)
        except websockets.exceptions.ConnectionClosed:
            self.closed_code = self.client.ws.close_code
            if not self._stop.is_set() and self.error is None:
                self.error = "connection closed by the server (code %s)" \
                    % self.closed_code
        except lt.ProtocolViolation as e:
            self.error = "protocol violation: %s" % e
        except asyncio.CancelledError:
            raise
        except BaseException as e:   # noqa: B902
            self.error = "reader: %r" % (e,)

    async def _send(self):
        while True:
            data = await self._sendq.get()
            try:
                await self.client.stdin(data)
            except Exception as e:
                if self.error is None:
                    self.error = "send: %r" % (e,)

    def stdin(self, data):
        """Queue stdin for the session (thread-safe)."""
        self._loop.call_soon_threadsafe(self._sendq.put_nowait, data)

    def output(self):
        return bytes(self.client.output) if self.client else b""

    @property
    def end_offset(self):
        return self.client.end_offset if self.client else None

    def gaps(self):
        return [m for m in self.client.messages if m["type"] == "gap"]

    def wait_output(self, pattern, timeout=30.0):
        rx = re.compile(pattern, re.S)
        return wait_for(lambda: rx.search(self.output()), timeout,
                        what="%s output %r" % (self.label, pattern))

    def stop(self, timeout=20.0):
        if self._loop is not None and not self.done.is_set():
            try:
                self._loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass
        self.thread.join(timeout)
        return self


# ------------------------------------------------------- running as nobody

def run_as(uid, gid, code, args=(), timeout=60, groups=()):
    """Run a Python program (source code) as uid:gid; return the
    CompletedProcess.  Its last stdout line is expected to be JSON."""
    return subprocess.run(
        ["/usr/bin/python3", "-c", code] + [str(a) for a in args],
        user=uid, group=gid, extra_groups=list(groups), cwd="/",
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)


def run_json_as(uid, gid, code, args=(), timeout=60):
    p = run_as(uid, gid, code, args, timeout)
    if p.returncode != 0:
        raise AssertionError("program as %d failed (%d): %s" % (
            uid, p.returncode, p.stderr.decode(errors="replace")[-2000:]))
    return json.loads(p.stdout.decode().strip().splitlines()[-1])


# A client for the front's Unix socket, run as another user: argv is
# SOCK METHOD PATH [JSON-BODY]; prints {"status":..,"body":..}.
UNIX_HTTP_CLIENT = r"""
import json, socket, sys
path, method, target = sys.argv[1:4]
body = sys.argv[4].encode() if len(sys.argv) > 4 else b""
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
try:
    s.connect(path)
except OSError as e:
    print(json.dumps({"connect_error": e.errno}))
    sys.exit(0)
req = ("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
       "Content-Length: %d\r\n\r\n" % (method, target, len(body))).encode()
s.sendall(req + body)
buf = b""
while True:
    try:
        c = s.recv(65536)
    except OSError:
        break
    if not c:
        break
    buf += c
head, _, rest = buf.partition(b"\r\n\r\n")
status = int(head.split()[1]) if head else 0
print(json.dumps({"status": status, "body": rest.decode(errors="replace")}))
"""

# A WebSocket client on a Unix socket, run as another user: argv is
# SOCK PATH STOP-TYPES MSGPACK-HEX...; sends each message once connected,
# then collects messages (maps, bin as latin-1) until one of STOP-TYPES
# (comma-separated) arrives, the server closes, or 15 s pass; prints
# {"status": 101 or the refusal, "messages": [...], "close": code}.
UNIX_WS_CLIENT = r"""
import asyncio, json, sys
import msgpack, websockets, websockets.exceptions
sock, path, stop = sys.argv[1:4]
stop = set(stop.split(","))
msgs = [bytes.fromhex(h) for h in sys.argv[4:]]

def plain(m):
    if isinstance(m, dict):
        return {k: plain(v) for k, v in m.items()}
    if isinstance(m, bytes):
        return m.decode("latin-1")
    if isinstance(m, list):
        return [plain(x) for x in m]
    return m

async def main():
    out = {"messages": [], "status": None, "close": None}
    try:
        ws = await websockets.unix_connect(sock, "ws://localhost" + path,
                                           max_size=None, open_timeout=20)
    except websockets.exceptions.InvalidStatusCode as e:
        out["status"] = e.status_code
        return out
    except Exception as e:
        out["status"] = repr(e)
        return out
    out["status"] = 101
    try:
        for m in msgs:
            await ws.send(m)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 15
        while True:
            raw = await asyncio.wait_for(ws.recv(), deadline - loop.time())
            m = msgpack.unpackb(raw, raw=False)
            out["messages"].append(plain(m))
            if m.get("type") in stop:
                break
    except asyncio.TimeoutError:
        pass
    except websockets.exceptions.ConnectionClosed:
        out["close"] = ws.close_code
    finally:
        await ws.close()
    return out

print(json.dumps(asyncio.run(main())))
"""


def run_lodged_briefly(args, timeout=15, env=None, rundir=None,
                       preexec=None):
    """Run lodged with args that should make it exit at once ("{rundir}"
    in args becomes a fresh runtime dir, or the one given, which is kept);
    returns (exit status or None if it kept running, stdout+stderr).
    Whatever it started is killed."""
    keep = rundir is not None
    rundir = rundir or tempfile.mkdtemp(prefix="lodge-test-sec-")
    args = [a.replace("{rundir}", rundir) for a in args]
    e = dict(os.environ, LODGE_TEST_RUNDIR=rundir)
    e.pop("LODGE_TOKEN", None)
    e.update(env or {})
    p = subprocess.Popen([lt.LODGED] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=e,
                         stdin=subprocess.DEVNULL, preexec_fn=preexec)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        rc = None
    finally:
        lt.reap_rundir(rundir)
        if not keep:
            shutil.rmtree(rundir, ignore_errors=True)
    return rc, out.decode(errors="replace")


def packhex(m):
    return msgpack.packb(m, use_bin_type=True).hex()

"""Client input under backpressure, the advertised limits, and a client
that stops reading (lodge-protocol.7: backpressure, limits).

- stdin into a process that reads slowly arrives whole, byte for byte, in
  a session and in an exec stream: the worker stops reading the client
  while the queue is full instead of dropping messages;
- two writers to one session both get through, the second one while the
  first is still held back;
- `attached`, `started` and GET /v1/health carry the same limits, and a
  client that splits its writes by limits.maxMessageBytes gets through;
- a message over the limit gets its payload_too_large error, then the
  1009 close;
- POST /v1/sessions/{ref}/input to a full queue is a 503 and writes
  nothing;
- a session printing fast and a client that stops reading, reads a little
  and leaves, 20 times: the worker goes on reading the child, answers GET
  and DELETE, and SIGTERM ends it.
"""

import asyncio
import base64
import hashlib
import os
import shutil
import signal
import socket
import sys
import tempfile
import time

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt                           # noqa: E402
from lodgetest import WSClient, sess_path        # noqa: E402

MiB = 1024 * 1024
STREAM = "/v1/exec/stream"
SAFE_CHUNK = 1000 * 1000        # stdin data per message, under 1 MiB


def payload(n, seed=b"lodge"):
    """n bytes that are not a short repetition."""
    out = bytearray()
    block = hashlib.sha256(seed).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block * 64
    return bytes(out[:n])


def chunks(data, size):
    return [data[i:i + size] for i in range(0, len(data), size)]


def stdin_overhead():
    """Bytes a stdin message adds around its data (the largest case)."""
    return len(msgpack.packb({"type": "stdin", "data": b"x" * 70000},
                             use_bin_type=True)) - 70000


async def drain(c, timeout=120):
    """Read up to the exit; return the messages read meanwhile."""
    first = len(c.messages)
    await c.recv_until(lambda m: m["type"] == "exit", timeout, "exit")
    return c.messages[first:]


def errors(msgs):
    return [m for m in msgs if m["type"] == "error"]


class InputTest(lt.DaemonPerClass):

    # ---- helpers

    def gate(self):
        """A path, and a shell line that waits until it exists: the
        process reads nothing until the test opens the gate."""
        tmp = tempfile.mkdtemp(prefix="lodge-gate-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "open")
        return path, "while [ ! -e %s ]; do sleep 0.05; done; " % path

    @staticmethod
    def open_gate(path):
        open(path, "w").close()

    def slow_hash(self):
        """A command that hashes its stdin once its gate opens."""
        path, wait = self.gate()
        return path, wait + "exec sha256sum"

    async def attach(self, sid, label=None):
        c = await WSClient.connect(self.d, sid, label=label)
        self.addAsyncCleanup(c.close)
        att = await c.recv()
        self.assertEqual(att["type"], "attached", att)
        return c, att

    async def open_stream(self, body):
        headers = {"Authorization": "Bearer " + self.d.token}
        c = await WSClient.open(self.d, STREAM, {}, headers, "exec")
        self.addAsyncCleanup(c.close)
        await c.send(dict({"type": "start"}, **body))
        m = await c.recv()
        self.assertEqual(m["type"], "started", m)
        return c, m

    async def send_all(self, c, data, size):
        for part in chunks(data, size):
            await asyncio.wait_for(c.stdin(part), 120)

    async def feed_and_hash(self, c, data, size, gate):
        """Send data in messages of size bytes and eof; return the messages
        read meanwhile and up to the exit, and the process's output.  The
        process starts reading once everything was sent, or after 3 s
        (the sends are held back meanwhile, or nothing would ever go)."""
        reader = asyncio.ensure_future(drain(c))
        timer = asyncio.get_running_loop().call_later(3, self.open_gate,
                                                      gate)
        await self.send_all(c, data, size)
        timer.cancel()
        self.open_gate(gate)
        await c.send({"type": "eof"})
        msgs = await reader
        return msgs, c.output

    def check_hash(self, msgs, out, data):
        self.assertEqual(errors(msgs), [])
        self.assertEqual(out.split()[0].decode(),
                         hashlib.sha256(data).hexdigest(),
                         "the process did not get its stdin whole "
                         "(%d bytes sent)" % len(data))
        self.assertEqual(msgs[-1].get("exitCode"), 0, msgs[-1])

    # ---- no input dropped

    async def test_session_16mib_into_a_slow_reader(self):
        data = payload(16 * MiB)
        gate, cmd = self.slow_hash()
        s = self.create({"command": cmd})
        c, _ = await self.attach(s["id"])
        msgs, out = await self.feed_and_hash(c, data, SAFE_CHUNK, gate)
        self.check_hash(msgs, out, data)

    async def test_stream_16mib_into_a_slow_reader(self):
        data = payload(16 * MiB, b"stream")
        gate, cmd = self.slow_hash()
        c, _ = await self.open_stream({"command": cmd})
        msgs, out = await self.feed_and_hash(c, data, SAFE_CHUNK, gate)
        self.check_hash(msgs, out, data)

    async def test_two_writers_both_get_through(self):
        # The child reads nothing until B has sent everything, then reads
        # what both send and reports how much it got, and where the
        # second writer's first byte came.
        a_data = b"A" * (12 * MiB)
        b_data = b"B" * (2 * MiB)
        prog = ("import sys\n"
                "d = sys.stdin.buffer.read(%d)\n"
                "print(len(d), d.count(b'A'), d.count(b'B'), d.find(b'B'))\n"
                % (len(a_data) + len(b_data)))
        gate, wait = self.gate()
        s = self.create({"args": ["sh", "-c", wait + "exec python3 -c "
                                  "\"$0\"", prog]})
        a, _ = await self.attach(s["id"], "A")
        b, _ = await self.attach(s["id"], "B")
        a_reader = asyncio.ensure_future(drain(a))
        b_reader = asyncio.ensure_future(drain(b))
        a_send = asyncio.ensure_future(self.send_all(a, a_data, SAFE_CHUNK))
        await asyncio.sleep(0.5)
        # A is held back by now (its queue is full, the child sleeps);
        # B's writes must go through all the same.
        timer = asyncio.get_running_loop().call_later(10, self.open_gate,
                                                      gate)
        await asyncio.wait_for(self.send_all(b, b_data, SAFE_CHUNK), 120)
        timer.cancel()
        self.open_gate(gate)
        await asyncio.wait_for(a_send, 120)
        a_msgs = await a_reader
        b_msgs = await b_reader
        self.assertEqual(errors(a_msgs) + errors(b_msgs), [])
        total, na, nb, first_b = [int(x) for x in b.output.split()]
        self.assertEqual((total, na, nb),
                         (len(a_data) + len(b_data), len(a_data),
                          len(b_data)))
        # B was not made to wait until A was done.
        self.assertLess(first_b, len(a_data))

    async def test_rest_input_to_a_full_queue_is_503_and_writes_nothing(self):
        gate, wait = self.gate()
        s = self.create({"command": wait + "exec wc -c"})
        body = {"dataBase64": base64.b64encode(b"x" * (3 * MiB)).decode()}
        sent, refused = 0, 0
        for _ in range(4):
            r = self.d.request("POST", sess_path(s["id"], "/input"), body)
            if r.status == 204:
                sent += 3 * MiB
            else:
                self.assertError(r, 503, "unavailable")
                refused += 1
        self.assertGreater(refused, 0)
        self.open_gate(gate)
        c, _ = await self.attach(s["id"])
        await c.send({"type": "eof"})
        await drain(c)
        self.assertEqual(int(c.output.split()[-1]), sent)

    # ---- limits

    async def test_limits_advertised_everywhere(self):
        h = self.d.json("GET", "/v1/health")
        lim = h["limits"]
        self.assertEqual(lim["maxMessageBytes"], MiB)
        self.assertGreater(lim["inputQueueBytes"], 0)
        s = self.create({"command": "cat"})
        _, att = await self.attach(s["id"])
        self.assertEqual(att["limits"]["maxMessageBytes"],
                         lim["maxMessageBytes"])
        self.assertEqual(att["limits"]["inputQueueBytes"],
                         lim["inputQueueBytes"])
        _, started = await self.open_stream({"command": "cat"})
        self.assertEqual(started["limits"], att["limits"])

    async def test_a_client_that_splits_by_the_limit_gets_through(self):
        d = self.start_daemon(extra_args=["--max-message-size", "65536"])
        lim = d.json("GET", "/v1/health")["limits"]["maxMessageBytes"]
        self.assertEqual(lim, 65536)
        data = payload(3 * MiB, b"split")
        gate, cmd = self.slow_hash()
        s = self.create({"command": cmd}, d=d)
        c = await WSClient.connect(d, s["id"])
        self.addAsyncCleanup(c.close)
        att = await c.recv()
        size = att["limits"]["maxMessageBytes"] - stdin_overhead()
        msgs, out = await self.feed_and_hash(c, data, size, gate)
        self.check_hash(msgs, out, data)
        # and an exec stream, split by what its "started" says
        headers = {"Authorization": "Bearer " + d.token}
        c = await WSClient.open(d, STREAM, {}, headers, "exec")
        self.addAsyncCleanup(c.close)
        gate, cmd = self.slow_hash()
        await c.send({"type": "start", "command": cmd})
        started = await c.recv()
        size = started["limits"]["maxMessageBytes"] - stdin_overhead()
        msgs, out = await self.feed_and_hash(c, data, size, gate)
        self.check_hash(msgs, out, data)

    async def check_too_large(self, c):
        lim = MiB
        await c.send({"type": "stdin", "data": b"x" * lim})
        code, seen = await c.expect_close()
        self.assertEqual(code, 1009)
        errs = errors(seen)
        self.assertTrue(errs, "no error before the 1009 close: %r"
                        % c._last())
        self.assertEqual(errs[-1]["code"], "payload_too_large")

    async def test_oversized_message_error_then_1009_session(self):
        s = self.create({"command": "cat"})
        c, _ = await self.attach(s["id"])
        await self.check_too_large(c)
        # the session is untouched
        self.assertEqual(self.get(s["id"])["state"], "running")

    async def test_oversized_message_error_then_1009_stream(self):
        c, _ = await self.open_stream({"command": "cat"})
        await self.check_too_large(c)


class StalledReaderTest(lt.DaemonPerClass):
    """A fast printer and a client that stops reading: the worker must
    never spin inside libwebsockets (it did, on recv() = 0)."""

    RUNS = 20
    STALL = 1.0         # seconds the client reads nothing
    READ = 0.5          # then reads this long, then leaves

    def raw_ws(self, path):
        s = socket.create_connection(("127.0.0.1", self.d.port))
        # a small window fills at once
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                   "Sec-WebSocket-Version: 13\r\n"
                   "Authorization: Bearer %s\r\n\r\n"
                   % (path, key, self.d.token)).encode())
        return s

    def stall_read_leave(self, c):
        time.sleep(self.STALL)
        c.settimeout(0.1)
        end = time.monotonic() + self.READ
        while time.monotonic() < end:
            try:
                if not c.recv(65536):
                    break
            except socket.timeout:
                pass
        c.close()

    def worker_of(self, sid):
        return lt.wait_for(lambda: self.d.socket_owners(
            self.d.session_sock(sid)), what="the session's worker")[0]

    def run_once(self, i):
        s = self.create({"command": "yes 0123456789abcdefghijklmnopqrstu"
                                    "vwxyz0123456789abcdefghijklmnopqrst"})
        sid = s["id"]
        wpid = self.worker_of(sid)
        c = self.raw_ws(sess_path(sid, "/attach"))
        self.stall_read_leave(c)
        # The worker still reads the child and answers.
        before = self.d.json("GET", sess_path(sid), timeout=20)
        lt.wait_for(lambda: self.d.json(
            "GET", sess_path(sid), timeout=20)["outputBytes"] >
            before["outputBytes"] + 1024 * 1024,
            what="run %d: the worker reading the child" % i)
        if i % 2 == 0:
            r = self.d.request("DELETE", sess_path(sid), timeout=30)
            self.assertEqual(r.status, 204, "run %d: %r" % (i, r))
        else:
            os.kill(wpid, signal.SIGTERM)
            self.assertGone(wpid, timeout=30)
            lt.wait_for(lambda: self.d.request(
                "GET", sess_path(sid)).status == 404,
                what="run %d: the session gone after SIGTERM" % i)
        self.assertGone(wpid, timeout=30)

    def test_stalled_reader_20_times(self):
        for i in range(self.RUNS):
            self.run_once(i)

    @staticmethod
    def read_started(c):
        """Read the 101 and the first frame ("started"); return its pid."""
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += c.recv(4096)
        head, buf = buf.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101"), head

        def need(n):
            nonlocal buf
            while len(buf) < n:
                buf += c.recv(4096)
        need(2)
        n, at = buf[1] & 0x7f, 2
        if n == 126:
            need(4)
            n, at = int.from_bytes(buf[2:4], "big"), 4
        need(at + n)
        m = msgpack.unpackb(buf[at:at + n], raw=False)
        assert m["type"] == "started", m
        return m["pid"]

    def test_stalled_stream_reader(self):
        # An exec stream: the dropped connection must still end the
        # command, and its stream process with it.
        for i in range(5):
            c = self.raw_ws(STREAM)
            c.sendall(lt.ws_frame({"type": "start", "command":
                                   "exec yes 0123456789abcdefghij"}))
            pid = self.read_started(c)
            stream = lt.proc_stat(pid)["ppid"]
            self.stall_read_leave(c)
            self.assertGone(pid, timeout=30)
            self.assertGone(stream, timeout=30)

if __name__ == "__main__":
    lt.main()

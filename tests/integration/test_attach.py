#!/usr/bin/python3
"""Session attach over WebSocket: lodge-protocol(7) WEBSOCKET MESSAGES and
SESSION ATTACH.

Run: /usr/bin/python3 tests/integration/test_attach.py
"""

import asyncio
import base64
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgpack  # noqa: E402

import lodgetest as lt  # noqa: E402
from lodgetest import WSClient, sess_path, wait_for  # noqa: E402


def seq_bytes(n):
    return b"".join(b"%d\n" % i for i in range(1, n + 1))


class TestAttach(lt.DaemonPerClass):

    def wait_clients(self, ref, n):
        return wait_for(lambda: self.get(ref)["clients"] == n, 10,
                        interval=0.1,
                        what="session %s to have %d clients" % (ref, n))

    def wait_size(self, ref, cols, rows):
        wait_for(lambda: (self.get(ref)["cols"], self.get(ref)["rows"])
                 == (cols, rows), 10, interval=0.1,
                 what="session size %dx%d" % (cols, rows))

    # ---- 3. two clients on one PTY session

    async def test_two_clients_pty(self):
        s = self.bash_session(name="two-clients")
        sid = s["id"]
        self.input(sid, "echo early-$((1+1))\n")
        self.wait_log(sid, rb"early-2\r?\n")

        a = await WSClient.connect(self.d, sid, label="A")
        b = None
        try:
            att_a, gap, replay_a = await a.handshake()
            self.assertIsNone(gap)
            self.assertIn(b"early-2", replay_a)
            self.assertEqual(att_a["session"]["id"], sid)
            self.assertEqual(att_a["session"]["name"], "two-clients")

            b = await WSClient.connect(self.d, "two-clients", label="B")
            att_b, gap, replay_b = await b.handshake()
            self.assertIsNone(gap)
            self.assertIsInstance(att_b["replayFrom"], int)
            self.assertIsInstance(att_b["replayTo"], int)
            self.assertEqual(att_b["replayFrom"], 0, att_b)
            self.assertGreaterEqual(att_b["replayTo"], att_a["replayTo"])
            self.assertIn(b"early-2", replay_b)
            n = min(a.end_offset, b.end_offset)
            self.assertEqual(a.slice(0, n), b.slice(0, n),
                             "the two clients disagree about the bytes")

            self.wait_clients(sid, 2)
            start = a.end_offset
            await a.stdin(b"echo live-$((2+3))\n")
            await a.wait_output(rb"live-5\r?\n")
            await b.wait_output(rb"live-5\r?\n")
            # both saw exactly the same bytes at the same offsets
            end = min(a.end_offset, b.end_offset)
            self.assertEqual(a.slice(start, end), b.slice(start, end))
            # stdin from B reaches the session too
            await b.stdin(b"echo fromb-$((3+4))\n")
            await a.wait_output(rb"fromb-7\r?\n")
            await b.wait_output(rb"fromb-7\r?\n")
            self.assertEqual([m["type"] for m in a.messages
                              if m["type"] in ("error", "gap")], [])
            self.assertEqual([m["type"] for m in b.messages
                              if m["type"] in ("error", "gap")], [])
            self.assertEqual({t for _, t, _ in a.types}, {"stdout"},
                             "PTY output must all be stdout")
        finally:
            await a.close()
            if b is not None:
                await b.close()
        self.wait_clients(sid, 0)
        self.assertEqual(self.get(sid)["state"], "running",
                         "detaching must not end the session")

    # ---- 4. resume with ?since=

    async def test_since_resume(self):
        s = self.create({"args": ["cat"]})
        sid = s["id"]
        c = await WSClient.connect(self.d, sid, label="first")
        try:
            await c.handshake()
            await c.stdin(b"line1\n")
            await c.wait_output(rb"line1\n")
            x = c.end_offset
            self.assertEqual(x, 6)
        finally:
            await c.close()
        self.input(sid, "line2\n")
        self.input(sid, "line3\n")
        wait_for(lambda: self.get(sid)["outputBytes"] == 18,
                 what="outputBytes to reach 18")

        c = await WSClient.connect(self.d, sid, query={"since": x},
                                   label="resumed")
        try:
            att, gap, replay = await c.handshake()
            self.assertIsNone(gap, "no gap expected: the ring holds it all")
            self.assertEqual(att["replayFrom"], x, att)
            self.assertEqual(att["replayTo"], 18, att)
            self.assertEqual(c.types[0][0], x, "first data offset")
            self.assertEqual(replay, b"line2\nline3\n")
            await c.stdin(b"line4\n")
            await c.wait_output(rb"line4\n")
            self.assertEqual(c.output, b"line2\nline3\nline4\n")
        finally:
            await c.close()

        # since in the middle of a message, and the log equivalent
        c = await WSClient.connect(self.d, sid, query={"since": 8})
        try:
            att, gap, replay = await c.handshake()
            self.assertIsNone(gap)
            self.assertEqual(att["replayFrom"], 8, att)
            self.assertEqual(replay, b"ne2\nline3\nline4\n")
        finally:
            await c.close()
        r = self.log(sid, since=8)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, b"ne2\nline3\nline4\n")
        self.assertEqual(r.headers.get("lodge-log-start"), "8")
        self.assertEqual(r.headers.get("lodge-log-end"), "24")

        # since at and past the end: nothing replayed
        for since in (24, 1000):
            c = await WSClient.connect(self.d, sid, query={"since": since})
            try:
                att, gap, replay = await c.handshake()
                self.assertIsNone(gap)
                self.assertEqual(replay, b"")
                self.assertEqual(att["replayFrom"], att["replayTo"], att)
                await c.stdin(b"line5-%d\n" % since)
                m = await c.recv_until(lambda m: m["type"] == "stdout")
                self.assertEqual(m["data"], b"line5-%d\n" % since)
                self.assertEqual(m["offset"], self.get(sid)["outputBytes"]
                                 - len(m["data"]))
            finally:
                await c.close()
            r = self.log(sid, since=100000)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.body, b"")
            end = str(self.get(sid)["outputBytes"])
            self.assertEqual(r.headers.get("lodge-log-start"), end)
            self.assertEqual(r.headers.get("lodge-log-end"), end)

    # ---- 5. ring overflow: log window and gap on attach

    async def test_ring_overflow(self):
        n = 20000
        expected = seq_bytes(n)
        total = len(expected)
        s = self.create({"args": ["sh", "-c", "seq 1 %d; exec sleep 1000"
                                  % n], "bufferSize": 4096})
        sid = s["id"]
        self.assertEqual(s["bufferSize"], 4096, s)
        wait_for(lambda: self.get(sid)["outputBytes"] == total, 60,
                 interval=0.1, what="outputBytes == %d" % total)

        r = self.log(sid)
        self.assertEqual(r.status, 200, r)
        start = int(r.headers["lodge-log-start"])
        end = int(r.headers["lodge-log-end"])
        self.assertGreater(start, 0)
        self.assertEqual(end, total)
        self.assertLessEqual(len(r.body), 4096)
        self.assertEqual(end - start, len(r.body))
        self.assertEqual(r.body, expected[start:end])

        r0 = self.log(sid, since=0)
        self.assertEqual(r0.status, 200, r0)
        self.assertEqual(r0.headers["lodge-log-start"], str(start))
        self.assertEqual(r0.body, r.body)
        r2 = self.log(sid, since=total - 10)
        self.assertEqual(r2.body, expected[-10:])
        self.assertEqual(r2.headers["lodge-log-start"], str(total - 10))
        self.assertEqual(r2.headers["lodge-log-end"], str(total))

        c = await WSClient.connect(self.d, sid, query={"since": 0})
        try:
            att, gap, replay = await c.handshake()
            self.assertIsNotNone(gap, "since=0 past the ring needs a gap")
            self.assertEqual(gap["from"], 0, gap)
            self.assertEqual(gap["to"], att["replayFrom"], gap)
            self.assertGreater(att["replayFrom"], 0)
            self.assertEqual(att["replayTo"], total)
            self.assertLessEqual(total - att["replayFrom"], 4096)
            self.assertEqual(replay, expected[att["replayFrom"]:])
        finally:
            await c.close()

        # without since: replay what the ring holds, no gap
        c = await WSClient.connect(self.d, sid)
        try:
            att, gap, replay = await c.handshake()
            self.assertIsNone(gap, "no gap without since")
            self.assertGreater(att["replayFrom"], 0)
            self.assertEqual(replay, expected[att["replayFrom"]:])
        finally:
            await c.close()

    # ---- a stalled client gets a gap and never slows the process

    async def test_slow_client_gets_gap(self):
        size = 32 * 1024 * 1024
        s = self.create({"args": ["sh", "-c", "read x; head -c %d /dev/zero"
                                  % size], "bufferSize": 65536})
        sid = s["id"]
        # a client with a tiny receive buffer that stops reading
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", self.d.port))
        slow = await WSClient.connect(self.d, sid, sock=sock, max_queue=1,
                                      read_limit=4096, label="slow")
        fast = await WSClient.connect(self.d, sid, label="fast")
        try:
            await slow.handshake()
            await fast.handshake()
            await fast.stdin(b"go\n")
            # the fast client reads everything while the slow one stalls
            ex = await fast.recv_type("exit", timeout=120)
            self.assertEqual(ex.get("exitCode"), 0, ex)
            self.assertEqual(fast.end_offset, size)
            st = self.wait_state(sid, timeout=120)
            self.assertEqual(st["outputBytes"], size)
            # now drain the slow client: it must have skipped with gap(s),
            # stayed contiguous otherwise, and end with exit
            ex = await slow.recv_type("exit", timeout=120)
            self.assertEqual(ex.get("exitCode"), 0, ex)
            gaps = [m for m in slow.messages if m["type"] == "gap"]
            self.assertTrue(gaps, "a stalled client must get a gap")
            self.assertEqual(slow.end_offset, size)
            self.assertEqual(set(slow.output), {0})
        finally:
            await slow.close()
            await fast.close()

    # ---- attach after attach: each connection handed off cleanly

    async def test_attach_after_attach(self):
        # The front hands each connection to the worker and forgets it.
        # A connection it forgot must not touch the next one given the
        # same descriptor number (an epoll registration outlives the
        # number): every attach in a row gets its upgrade and replay.
        s = self.create({"command": "head -c 2097152 /dev/zero; exec cat"})
        sid = s["id"]
        wait_for(lambda: self.get(sid)["outputBytes"] == 2097152, 10,
                 interval=0.05, what="the output")
        for i in range(1000):
            sock = socket.create_connection(("127.0.0.1", self.d.port))
            sock.settimeout(10)
            key = base64.b64encode(os.urandom(16)).decode()
            sock.sendall(("GET /v1/sessions/%s/attach HTTP/1.1\r\n"
                          "Host: x\r\nAuthorization: Bearer %s\r\n"
                          "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                          "Sec-WebSocket-Key: %s\r\n"
                          "Sec-WebSocket-Version: 13\r\n\r\n"
                          % (sid, self.d.token, key)).encode())
            got = b""
            try:
                # the head, then the replay up to the "live" message
                while b"\xa4live" not in got:
                    b = sock.recv(1 << 20)
                    if not b:
                        break
                    got += b
            except OSError as e:
                self.fail("attach %d: %r after %d bytes" % (i, e, len(got)))
            self.assertTrue(got.startswith(b"HTTP/1.1 101"),
                            "attach %d: %r" % (i, got[:80]))
            self.assertIn(b"\xa4live", got, "attach %d" % i)
            # close 1000 (masked, zero key), then drop the socket at once
            sock.sendall(bytes([0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8]))
            sock.close()
        self.assertEqual(self.get(sid)["state"], "running")

    # ---- 6. read-only clients

    async def test_read_only_client(self):
        s = self.bash_session(cols=80, rows=24)
        sid = s["id"]
        ro = await WSClient.connect(self.d, sid, query={"readOnly": 1},
                                    label="ro")
        try:
            await ro.handshake()
            for msg in ({"type": "stdin",
                         "data": b"echo SHOULDNOT-$((5+5))\n"},
                        {"type": "resize", "cols": 50, "rows": 10},
                        {"type": "signal", "signal": "KILL"}):
                await ro.send(msg)
                e = await ro.recv_type("error")
                self.assertEqual(e.get("code"), "forbidden", (msg, e))
                self.assertIsInstance(e.get("message"), str)
            # still open, still receiving output
            self.input(sid, "echo ro-$((3+4))\n")
            await ro.wait_output(rb"ro-7\r?\n")
            await ro.stdin(b"x")
            e = await ro.recv_type("error")
            self.assertEqual(e.get("code"), "forbidden")
        finally:
            await ro.close()
        st = self.get(sid)
        self.assertEqual(st["state"], "running")
        self.assertEqual((st["cols"], st["rows"]), (80, 24))
        self.assertNotIn(b"SHOULDNOT-10", self.log(sid).body)
        out = self.pty_run(sid, "stty size")
        self.assertRegex(out, rb"(^|\n)24 80\r?\n")

    # ---- 8. last resize wins; read-only clients never resize

    async def test_last_resize_wins(self):
        s = self.bash_session(cols=80, rows=24)
        sid = s["id"]
        a = await WSClient.connect(self.d, sid, label="A",
                                   query={"cols": 100, "rows": 30})
        b = ro = None
        try:
            att, _, _ = await a.handshake()
            self.wait_size(sid, 100, 30)
            b = await WSClient.connect(self.d, sid, label="B",
                                       query={"cols": 90, "rows": 20})
            await b.handshake()
            self.wait_size(sid, 90, 20)
            self.assertRegex(self.pty_run(sid, "stty size"),
                             rb"(^|\n)20 90\r?\n")
            await a.send({"type": "resize", "cols": 110, "rows": 35})
            self.wait_size(sid, 110, 35)
            self.assertRegex(self.pty_run(sid, "stty size"),
                             rb"(^|\n)35 110\r?\n")
            ro = await WSClient.connect(self.d, sid, label="ro",
                                        query={"cols": 50, "rows": 10,
                                               "readOnly": 1})
            await ro.handshake()
            self.assertRegex(self.pty_run(sid, "stty size"),
                             rb"(^|\n)35 110\r?\n")
            self.assertEqual((self.get(sid)["cols"], self.get(sid)["rows"]),
                             (110, 35))
            r = self.d.request("POST", sess_path(sid, "/resize"),
                               {"cols": 81, "rows": 25})
            self.assertEqual(r.status, 204, r)
            self.assertRegex(self.pty_run(sid, "stty size"),
                             rb"(^|\n)25 81\r?\n")
            await b.send({"type": "resize", "cols": 82, "rows": 26})
            self.wait_size(sid, 82, 26)
            for c in (a, b):
                self.assertEqual([m for m in c.messages
                                  if m["type"] == "error"], [])
        finally:
            for c in (a, b, ro):
                if c is not None:
                    await c.close()

    async def test_attach_gives_one_dimension(self):
        # An attach that names only cols (or rows) keeps the other.
        s = self.bash_session(cols=80, rows=24)
        sid = s["id"]
        for query, size in (({"cols": 100}, (100, 24)),
                            ({"rows": 30}, (100, 30))):
            c = await WSClient.connect(self.d, sid, query=query)
            try:
                await c.handshake()
                self.wait_size(sid, *size)
                self.assertRegex(self.pty_run(sid, "stty size"),
                                 rb"(^|\n)%d %d\r?\n" % (size[1], size[0]))
            finally:
                await c.close()

    # ---- eof closes the child's stdin (pipe mode)

    async def test_eof(self):
        s = self.create({"args": ["sh", "-c", "cat; echo eof-seen; exit 5"]})
        c = await WSClient.connect(self.d, s["id"])
        try:
            await c.handshake()
            await c.stdin(b"abc\n")
            await c.wait_output(rb"abc\n")
            await c.send({"type": "eof"})
            ex = await c.recv_type("exit")
            self.assertEqual(ex.get("exitCode"), 5, ex)
            self.assertEqual(c.output, b"abc\neof-seen\n")
            code, _ = await c.expect_close()
            self.assertEqual(code, 1000)
        finally:
            await c.close()

    # ---- the last output always arrives before exit

    async def test_output_before_exit(self):
        s = self.create({"args": ["sh", "-c",
                                  "read x; seq 1 50000; echo tail >&2"]})
        c = await WSClient.connect(self.d, s["id"])
        try:
            await c.handshake()
            await c.stdin(b"go\n")
            ex = await c.recv_type("exit", timeout=60)
            self.assertEqual(ex.get("exitCode"), 0, ex)
        finally:
            await c.close()
        expected = seq_bytes(50000)
        self.assertEqual(c.end_offset, len(expected) + 5)
        out = b"".join(d for _, t, d in c.types if t == "stdout")
        err = b"".join(d for _, t, d in c.types if t == "stderr")
        self.assertEqual(out, expected)
        self.assertEqual(err, b"tail\n")

    # ---- nothing is lost at exit, in PTY mode too

    async def test_pty_output_before_exit(self):
        """The last output of a PTY session arrives before exit (the PTY
        is drained after the child exits).  A few rounds, to catch races."""
        n = 20000
        for round_ in range(5):
            s = self.create({"args": ["sh", "-c",
                                      "read x; seq 1 %d; printf TAIL-%d"
                                      % (n, round_)], "pty": True})
            c = await WSClient.connect(self.d, s["id"],
                                       label="pty round %d" % round_)
            try:
                await c.handshake()
                await c.stdin(b"go\r")
                ex = await c.recv_type("exit", timeout=60)
                self.assertEqual(ex.get("exitCode"), 0, ex)
                code, _ = await c.expect_close()
                self.assertEqual(code, 1000)
            finally:
                await c.close()
            out = c.output.replace(b"\r\n", b"\n")
            self.assertTrue(out.endswith(b"\n%d\nTAIL-%d" % (n, round_)),
                            "round %d: output lost at exit; tail %r"
                            % (round_, out[-80:]))
            self.assertIn(seq_bytes(n), out)
            self.assertEqual(self.get(s["id"])["outputBytes"], c.end_offset)

    async def test_small_writes_gathered(self):
        """A process writing a line every 1 ms for 1 s, on its own:
        its lines reach a live client in messages at least 4 ms apart
        (lodge-protocol(7) "stdout"), not one message per write; nothing
        is lost and the order is kept."""
        prog = ("import os, sys, time\n"
                "sys.stdin.readline()\n"
                "t = time.monotonic(); end = t + 1.0; n = 0\n"
                "while time.monotonic() < end:\n"
                "    if time.monotonic() >= t:\n"
                "        os.write(1, b'line %d\\n' % n); n += 1; t += 0.001\n"
                "os.write(1, b'END %d\\n' % n)\n")
        s = self.create({"args": ["/usr/bin/python3", "-c", prog],
                         "pty": True})
        c = await WSClient.connect(self.d, s["id"])
        try:
            await c.handshake()
            await c.stdin(b"go\r")
            ex = await c.recv_type("exit", timeout=60)
            self.assertEqual(ex.get("exitCode"), 0, ex)
        finally:
            await c.close()
        out = c.output.replace(b"\r\n", b"\n")
        tail = out[out.rindex(b"END "):]
        n = int(tail.split()[1])
        self.assertEqual(out[out.index(b"line 0\n"):],
                         b"".join(b"line %d\n" % i for i in range(n)) + tail)
        msgs = sum(1 for _, t, _ in c.types if t == "stdout")
        self.assertGreater(n, 600, "the writer wrote too little to tell")
        self.assertLessEqual(msgs, 300, "%d lines came in %d messages"
                             % (n, msgs))

    async def test_exit_not_held_by_grandchild(self):
        """A grandchild that keeps the output pipe open must not hold the
        exit message back for long (a short drain deadline)."""
        s = self.create({"args": ["sh", "-c",
                                  "read x; echo first; sleep 1000 & "
                                  "echo last; exit 4"]})
        c = await WSClient.connect(self.d, s["id"])
        try:
            await c.handshake()
            await c.stdin(b"go\n")
            ex = await c.recv_type("exit", timeout=30)
            self.assertEqual(ex.get("exitCode"), 4, ex)
            self.assertEqual(c.output, b"first\nlast\n")
        finally:
            await c.close()
        st = self.get(s["id"])
        self.assertEqual(st["state"], "exited")
        self.assertEqual(st["exitCode"], 4)

    # ---- replay hygiene: the ring cuts at safe boundaries

    async def test_ring_cut_at_safe_boundary(self):
        # lines of multi-byte UTF-8 and escape sequences; the ring (4096)
        # drops most of them, and the replay must start at a character
        # boundary outside any escape sequence
        unit = "\x1b[1;31m\u00e9\u20ac\U0001f600\x1b[0m\x1b]0;t\u00eftle\x07" \
               "x\u00e9\u00e9\u20ac\n"
        ub = unit.encode()
        count = 600
        expected = ub * count
        # the positions where a replay may begin inside one unit
        safe = set()
        i = 0
        for ch in unit:
            b = ch.encode()
            safe.add(i)
            i += len(b)
        # not inside "\x1b[1;31m", "\x1b[0m", "\x1b]0;t\u00eftle\x07"
        def span(sub):
            a = ub.index(sub.encode())
            return set(range(a + 1, a + len(sub.encode())))
        unsafe = span("\x1b[1;31m") | span("\x1b[0m") | \
            span("\x1b]0;t\u00eftle\x07")
        safe -= unsafe
        safe.add(len(ub))
        script = "read x; i=0; while [ $i -lt %d ]; do printf '%s'; " \
                 "i=$((i+1)); done; exec sleep 1000" % (
                     count, unit.replace("\x1b", "\\033")
                     .replace("\x07", "\\007").replace("\n", "\\n"))
        s = self.create({"args": ["bash", "-c", script], "bufferSize": 4096,
                         "env": {"LC_ALL": "C.UTF-8"}})
        sid = s["id"]
        self.input(sid, "go\n")
        wait_for(lambda: self.get(sid)["outputBytes"] == len(expected), 60,
                 interval=0.1, what="all output")
        r = self.log(sid)
        start = int(r.headers["lodge-log-start"])
        self.assertGreater(start, 0)
        self.assertEqual(r.body, expected[start:])
        self.assertIn(start % len(ub), safe,
                      "log starts inside a character or an escape sequence: "
                      "%r" % r.body[:24])
        c = await WSClient.connect(self.d, sid)
        try:
            att, gap, replay = await c.handshake()
            self.assertIn(att["replayFrom"] % len(ub), safe,
                          "replayFrom inside a character or escape sequence:"
                          " %r" % replay[:24])
            self.assertEqual(replay, expected[att["replayFrom"]:])
            replay.decode("utf-8")      # whole characters only
        finally:
            await c.close()

    # ---- SIGWINCH on attach (full-screen programs redraw)

    async def test_sigwinch_on_attach(self):
        s = self.create({"args": ["bash", "-c",
                                  "trap 'echo winch-$((20+1))' WINCH; "
                                  "echo ready-$((1+1)); "
                                  "while :; do sleep 0.1; done"],
                         "pty": True})
        sid = s["id"]
        self.wait_log(sid, rb"ready-2")
        self.assertNotIn(b"winch-21", self.log(sid).body)
        c = await WSClient.connect(self.d, sid)
        try:
            await c.handshake()
            await c.wait_output(rb"winch-21")
        finally:
            await c.close()

    # ---- large input is not lost

    async def test_large_stdin(self):
        """2 MiB of stdin over WebSocket (and some over REST) into `cat`
        all comes back.  A few rounds: a stall shows up only sometimes."""
        chunk = bytes(range(256)) * 256         # 64 KiB, every byte value
        total = 32
        for round_ in range(30):
            s = self.create({"args": ["cat"], "bufferSize": 8 * 1024 * 1024})
            sid = s["id"]
            c = await WSClient.connect(self.d, sid,
                                       label="stdin round %d" % round_)
            try:
                await c.handshake()
                for _ in range(total):
                    await c.stdin(chunk)
                r = self.d.request("POST", sess_path(sid, "/input"),
                                   {"dataBase64": lt.b64(chunk)})
                self.assertEqual(r.status, 204, r)
                want = len(chunk) * (total + 1)
                while c.end_offset is None or c.end_offset < want:
                    stalled = False
                    try:
                        await c.recv_until(lambda m: m["type"] == "stdout",
                                           timeout=30)
                    except AssertionError:
                        stalled = True
                    if stalled:
                        st = self.get(sid)
                        self.fail("round %d: output stalled at %s of %d "
                                  "bytes of input (outputBytes %d; cat "
                                  "waits in %s)" % (
                                      round_, c.end_offset, want,
                                      st["outputBytes"],
                                      lt.read_text("/proc/%d/wchan"
                                                   % s["pid"])))
            finally:
                await c.close()
            self.assertEqual(c.output, chunk * (total + 1))
            self.assertEqual(self.get(sid)["outputBytes"], want)
            r = self.d.request("DELETE", sess_path(sid))
            self.assertEqual(r.status, 204, r)

    # ---- connection handling

    async def test_ping_pong(self):
        s = self.create({"args": ["cat"]})
        c = await WSClient.connect(self.d, s["id"])
        try:
            await c.handshake()
            waiter = await c.ws.ping(b"lodge")
            await asyncio.wait_for(waiter, 20)
        finally:
            await c.close()

    async def test_abrupt_disconnect(self):
        s = self.create({"args": ["cat"]})
        sid = s["id"]
        c = await WSClient.connect(self.d, sid, label="aborted")
        await c.handshake()
        self.wait_clients(sid, 1)
        c.ws.transport.abort()          # no close frame: a TCP reset
        await c.close()
        self.wait_clients(sid, 0)
        self.assertEqual(self.get(sid)["state"], "running")
        c = await WSClient.connect(self.d, sid)
        try:
            await c.handshake()
            await c.stdin(b"after-abort\n")
            await c.wait_output(rb"after-abort\n")
        finally:
            await c.close()

    async def test_many_clients(self):
        s = self.create({"args": ["cat"]})
        sid = s["id"]
        clients = []
        try:
            for i in range(10):
                c = await WSClient.connect(self.d, sid, label="c%d" % i,
                                           query={"readOnly": 1}
                                           if i % 3 == 2 else None)
                await c.handshake()
                clients.append(c)
            self.wait_clients(sid, 10)
            await clients[0].stdin(b"to-all\n")
            for c in clients:
                m = await c.recv_until(lambda m: m["type"] == "stdout")
                self.assertEqual((m["offset"], m["data"]), (0, b"to-all\n"),
                                 c.label)
        finally:
            for c in clients:
                await c.close()
        self.wait_clients(sid, 0)

    async def test_delete_with_clients_attached(self):
        s = self.create({"args": ["cat"]})
        sid = s["id"]
        a = await WSClient.connect(self.d, sid, label="A")
        b = await WSClient.connect(self.d, sid, label="B",
                                   query={"readOnly": 1})
        try:
            await a.handshake()
            await b.handshake()
            r = self.d.request("DELETE", sess_path(sid))
            self.assertEqual(r.status, 204, r)
            for c in (a, b):
                code, seen = await c.expect_close(timeout=30)
                self.assertNotIn("error", [m["type"] for m in seen],
                                 (c.label, seen))
        finally:
            await a.close()
            await b.close()
        self.assertGone(s["pid"])

    # ---- 13. malformed client messages

    async def test_malformed_messages(self):
        s = self.create({"args": ["cat"]})
        c = await WSClient.connect(self.d, s["id"])
        try:
            await c.handshake()
            bad = [
                ("garbage", b"\xc1\xff\x00garbage\x93"),
                ("truncated map", b"\x82\xa4type"),
                ("non-map", msgpack.packb([1, 2, 3])),
                ("integer", msgpack.packb(7)),
                ("map without type", msgpack.packb({"data": b"x"},
                                                   use_bin_type=True)),
                ("type not a string", msgpack.packb({"type": 1})),
                ("unknown type", msgpack.packb({"type": "bogus"})),
                ("stdin data int", msgpack.packb({"type": "stdin",
                                                  "data": 5})),
                ("stdin without data", msgpack.packb({"type": "stdin"})),
                ("signal as list", msgpack.packb({"type": "signal",
                                                  "signal": [1]})),
                ("unknown signal", msgpack.packb({"type": "signal",
                                                  "signal": "NOPE"})),
                ("empty frame", b""),
            ]
            for what, frame in bad:
                await c.send_raw(frame)
                e = await c.recv_until(lambda m: m["type"] in ("error",
                                                               "exit"),
                                       what="an error for %s" % what)
                self.assertEqual(e["type"], "error", (what, e))
                self.assertEqual(e.get("code"), "bad_request", (what, e))
                self.assertIsInstance(e.get("message"), str, (what, e))
            await c.stdin(b"still-alive\n")
            await c.wait_output(rb"still-alive\n")
            self.assertEqual(self.get(s["id"])["state"], "running")
            self.assertEqual([m for m in c.messages
                              if m["type"] not in ("attached", "live",
                                                   "stdout", "error")], [])
        finally:
            await c.close()

    # ---- attach refusals and refs

    async def test_attach_unknown_and_by_name(self):
        st, body = await lt.ws_refused(
            self.d, sess_path("no-such-session", "/attach"),
            headers={"Authorization": "Bearer " + self.d.token})
        self.assertEqual(st, 404, body)
        import json
        self.assertEqual(json.loads(body)["error"]["code"], "not_found")

        s = self.create({"args": ["cat"], "name": "attach-by-name"})
        c = await WSClient.connect(self.d, "attach-by-name")
        try:
            att, _, _ = await c.handshake()
            self.assertEqual(att["session"]["id"], s["id"])
            await c.stdin(b"n\n")
            await c.wait_output(rb"n\n")
        finally:
            await c.close()

    async def test_bad_since_on_attach(self):
        s = self.create({"args": ["cat"]})
        for bad in ("abc", "-1", "1x"):
            st, body = await lt.ws_refused(
                self.d, sess_path(s["id"], "/attach"),
                headers={"Authorization": "Bearer " + self.d.token},
                query={"since": bad})
            self.assertEqual(st, 400, (bad, body))
            r = self.log(s["id"], since=bad)
            self.assertError(r, 400, "bad_request")


if __name__ == "__main__":
    lt.main()

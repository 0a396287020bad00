#!/usr/bin/python3
"""Limits: every limit of lodged(8) set small by its
option, each answered with its documented error (lodge-protocol(7) ERROR
REPLIES, LIMITS), and none of them drops or corrupts another session's
output: one counter session runs through the whole class, read live by a
client in a thread of its own, and at the end its offsets and its counter
have no hole (live client, log since=0, attach since=0).

Run: LODGED=$PWD/lodged /usr/bin/python3 tests/integration/test_limits.py
"""

import asyncio
import concurrent.futures
import json
import os
import socket
import struct
import sys
import time

import msgpack
import websockets.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
import reliability as rl  # noqa: E402
from lodgetest import WSClient, sess_path, wait_for  # noqa: E402

MAX_SESSIONS = 4
MAX_CLIENTS = 2
MAX_HEAD = 1024
MAX_BODY = 2048
MAX_MESSAGE = 4096
HEAD_TIMEOUT = 2
IDLE_TIMEOUT = 5
PING = 1
EXITED_TTL = 2


class TestLimits(lt.DaemonPerClass):
    daemon_args = [
        "--max-sessions", str(MAX_SESSIONS),
        "--max-clients", str(MAX_CLIENTS),
        "--max-head-size", str(MAX_HEAD),
        "--max-body-size", str(MAX_BODY),
        "--max-message-size", str(MAX_MESSAGE),
        "--head-timeout", str(HEAD_TIMEOUT),
        "--idle-timeout", str(IDLE_TIMEOUT),
        "--ping-interval", str(PING),
        "--exited-ttl", str(EXITED_TTL),
    ]

    counter = None
    live = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            r = cls.d.request("POST", "/v1/sessions",
                              rl.counter_request(name="counter"))
            assert r.status == 201, r
            cls.counter = r.json()
            cls.live = rl.StreamingClient(cls.d, "counter",
                                          label="counter-live").start()
            cls.live.wait_output(rb"c 20\n")
        except BaseException:
            if cls.live is not None:
                cls.live.stop()
            cls.d.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.live is not None:
            cls.live.stop()
        super().tearDownClass()

    def auth(self):
        return {"Authorization": "Bearer " + self.d.token}

    def assertLiveCounterFine(self):
        self.assertIsNone(self.live.error, "the counter's live client: %s"
                          % self.live.error)
        self.assertEqual(self.live.gaps(), [], "the counter's live client "
                         "got a gap")
        rl.check_counter(self.live.output(), what="counter live client")

    def assertRawError(self, r, status, code):
        self.assertIsNotNone(r, "no reply (connection closed)")
        self.assertEqual(r.status, status, r)
        self.assertTrue(r.headers.get("content-type", "").startswith(
            "application/json"), r)
        j = r.json()
        self.assertEqual(j["error"]["code"], code, j)
        self.assertIsInstance(j["error"]["message"], str, j)

    def wait_clients(self, ref, n):
        """Until the front's cached list shows n clients (the front
        checks --max-clients against it)."""
        def ok():
            for s in self.d.json("GET", "/v1/sessions")["sessions"]:
                if s["id"] == ref or s.get("name") == ref:
                    return s["clients"] == n
            return False
        wait_for(ok, 10, what="%d clients on %s" % (n, ref))

    # ---- --max-sessions: 503 unavailable; exited sessions count

    async def test_max_sessions(self):
        d = self.d
        n = len(d.json("GET", "/v1/sessions")["sessions"])
        self.assertEqual(n, 1, "only the counter should exist")
        made = [self.create({"args": ["sleep", "1000"]})
                for _ in range(MAX_SESSIONS - n)]
        for _ in range(2):
            r = d.request("POST", "/v1/sessions", {"args": ["sleep", "1"]})
            self.assertError(r, 503, "unavailable")
        r = d.unix_request("POST", "/v1/sessions", {"args": ["sleep", "1"]})
        self.assertError(r, 503, "unavailable")
        ids = {s["id"] for s in d.json("GET", "/v1/sessions")["sessions"]}
        self.assertEqual(ids, {s["id"] for s in made} | {self.counter["id"]},
                         "a refused create left a session behind")
        self.assertEqual(d.json("GET", "/v1/health")["sessions"],
                         MAX_SESSIONS)
        # deleting one frees a slot
        r = d.request("DELETE", sess_path(made[0]["id"]))
        self.assertEqual(r.status, 204, r)
        s = self.create({"args": ["sh", "-c", "echo done"]})
        # an exited session still counts ...
        self.wait_state(s["id"], "exited", timeout=10)
        r = d.request("POST", "/v1/sessions", {"args": ["sleep", "1"]})
        self.assertError(r, 503, "unavailable")
        # ... until --exited-ttl deletes it
        wait_for(lambda: d.request("GET", sess_path(s["id"])).status == 404,
                 EXITED_TTL + 10, what="the exited session to expire")
        self.create({"args": ["sleep", "1000"]})
        self.assertLiveCounterFine()

    # ---- --exited-ttl: an exited session is deleted after the ttl

    async def test_exited_ttl(self):
        d = self.d
        s = self.create({"args": ["sh", "-c", "echo last-words"],
                         "name": "ttl"})
        sid = s["id"]
        worker = rl.worker_of(s["pid"]) if lt.proc_exists(s["pid"]) else None
        ex = self.wait_state(sid, "exited", timeout=10)
        t_exit = time.monotonic()
        self.assertEqual(ex["exitCode"], 0)
        # held, with its buffer, for the ttl (not much less)
        r = self.log("ttl")
        if time.monotonic() - t_exit < EXITED_TTL - 0.5:
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.body, b"last-words\n")
        wait_for(lambda: d.request("GET", sess_path(sid)).status == 404,
                 EXITED_TTL + 10, interval=0.1,
                 what="the exited session to be deleted by --exited-ttl")
        waited = time.monotonic() - t_exit
        self.assertGreaterEqual(waited, EXITED_TTL - 0.6,
                                "deleted before --exited-ttl")
        self.assertError(d.request("GET", sess_path("ttl")), 404,
                         "not_found")
        self.assertNotIn(sid, [x["id"] for x in
                               d.json("GET", "/v1/sessions")["sessions"]])
        wait_for(lambda: not os.path.exists(d.session_sock(sid)), 10,
                 what="the worker socket to be removed")
        if worker is not None:
            wait_for(lambda: not lt.proc_exists(worker), 10,
                     what="the worker to exit")
        # the name is free again
        self.create({"args": ["sleep", "1000"], "name": "ttl"})
        self.assertLiveCounterFine()

    # ---- --max-clients: 503 at the front, bare close at the worker

    async def test_max_clients(self):
        d = self.d
        s = self.create({"args": ["cat"], "name": "crowded"})
        a = await WSClient.connect(d, "crowded", label="A")
        b = await WSClient.connect(d, "crowded", label="B")
        c = None
        try:
            await a.handshake()
            await b.handshake()
            await asyncio.to_thread(self.wait_clients, "crowded", MAX_CLIENTS)
            st, body = await lt.ws_refused(d, sess_path("crowded", "/attach"),
                                           headers=self.auth())
            self.assertEqual(st, 503, body)
            self.assertEqual(json.loads(body)["error"]["code"],
                             "unavailable", body)
            st, body = await lt.ws_refused(d, sess_path("crowded", "/attach"),
                                           unix_path=d.sock_path)
            self.assertEqual(st, 503, body)
            # the worker's own socket: a bare close, no handshake
            try:
                w = await WSClient.connect(d, s["id"],
                                           unix_path=d.session_sock(s["id"]),
                                           label="third-on-worker")
            except (websockets.exceptions.InvalidHandshake, EOFError,
                    ConnectionError, asyncio.TimeoutError):
                pass
            else:
                await w.close()
                self.fail("the worker socket accepted a client past "
                          "--max-clients")
            # the two attached clients are untouched
            await a.stdin(b"from-a\n")
            await a.wait_output(rb"from-a\n")
            await b.wait_output(rb"from-a\n")
            self.assertEqual(self.get("crowded")["clients"], MAX_CLIENTS)
            # one leaves: there is room again
            await a.close()
            await asyncio.to_thread(self.wait_clients, "crowded",
                                    MAX_CLIENTS - 1)
            c = await WSClient.connect(d, "crowded", label="C")
            await c.handshake()
            await c.stdin(b"from-c\n")
            await c.wait_output(rb"from-c\n")
            await b.wait_output(rb"from-c\n")
        finally:
            for x in (a, b, c):
                if x is not None:
                    await x.close()
        self.assertLiveCounterFine()

    # ---- --max-head-size: 431 header_too_large

    async def test_max_head_size(self):
        d = self.d
        pad = "x" * (MAX_HEAD + 100)
        for data in (rl.http_head("GET", "/v1/health", d.token,
                                  ["X-Pad: " + pad]),
                     rl.http_head("GET", "/v1/health?" + pad, d.token),
                     rl.ws_upgrade_head(sess_path("counter", "/attach"),
                                        d.token, ["X-Pad: " + pad])):
            r, closed = rl.raw_request(d, data)
            self.assertRawError(r, 431, "header_too_large")
            self.assertEqual(r.headers.get("connection", "").lower(), "close")
            self.assertTrue(closed, "connection left open after 431")
        r, _ = rl.raw_request(d, rl.http_head("GET", "/v1/health", None,
                                              ["X-Pad: " + pad]),
                              unix_path=d.sock_path)
        self.assertRawError(r, 431, "header_too_large")
        # just under the limit is fine
        head = rl.http_head("GET", "/v1/health", d.token, ["X-Pad: "])
        fill = MAX_HEAD - len(head) - 1
        r, _ = rl.raw_request(d, rl.http_head("GET", "/v1/health", d.token,
                                              ["X-Pad: " + "y" * fill]))
        self.assertEqual(r.status, 200, r)
        self.assertLiveCounterFine()

    # ---- --max-body-size: 413 payload_too_large, before the body is sent

    async def test_max_body_size(self):
        d = self.d

        def body_of(n):
            b = b'{"args":["echo","ok"],"env":{"PAD":"'
            return b + b"p" * (n - len(b) - 3) + b'"}}'
        for n in (MAX_BODY - 1, MAX_BODY):
            r = d.request("POST", "/v1/exec", raw_body=body_of(n))
            self.assertEqual(r.status, 200, (n, r))
            self.assertEqual(r.json()["stdout"], "ok\n")
        # one write each: the server refuses on the head and closes
        r, closed = rl.raw_request(d, rl.http_head(
            "POST", "/v1/exec", d.token, body=body_of(MAX_BODY + 1)))
        self.assertRawError(r, 413, "payload_too_large")
        self.assertTrue(closed)
        # refused on the head alone: no body ever sent
        with rl.RawConn(d) as c:
            c.send(rl.http_head("POST", "/v1/sessions", d.token,
                                ["Content-Length: %d" % (MAX_BODY * 1000)],
                                clen=False))
            r = c.read_reply(timeout=10)
            self.assertRawError(r, 413, "payload_too_large")
            self.assertTrue(c.closed_by_peer(5), "connection kept after 413")
        r, _ = rl.raw_request(d, rl.http_head(
            "POST", "/v1/exec", None, body=body_of(MAX_BODY + 1)),
            unix_path=d.sock_path)
        self.assertRawError(r, 413, "payload_too_large")
        self.assertEqual(len(d.json("GET", "/v1/sessions")["sessions"]), 1)
        self.assertLiveCounterFine()

    # ---- --max-message-size: close 1009 (attach and exec stream)

    async def test_max_message_size(self):
        d = self.d
        self.create({"args": ["cat"], "name": "msgsize"})
        a = await WSClient.connect(d, "msgsize", label="big-sender")
        b = await WSClient.connect(d, "msgsize", label="bystander")
        try:
            await a.handshake()
            await b.handshake()
            # a message of exactly the limit passes
            hdr = len(msgpack.packb({"type": "stdin", "data": b""},
                                    use_bin_type=True)) + 4
            data = b"k" * (MAX_MESSAGE - hdr - 1) + b"\n"
            frame = msgpack.packb({"type": "stdin", "data": data},
                                  use_bin_type=True)
            self.assertLessEqual(len(frame), MAX_MESSAGE)
            await a.send_raw(frame)
            await b.wait_output(rb"k{%d}\n" % (len(data) - 1))
            # one byte more than the limit: 1009
            big = msgpack.packb({"type": "stdin",
                                 "data": b"K" * MAX_MESSAGE + b"\n"},
                                use_bin_type=True)
            await a.send_raw(big)
            code, seen = await a.expect_close(10)
            self.assertEqual(code, 1009, seen)
            self.assertNotIn(b"K" * 100, b.output, "the oversize message "
                             "reached the process")
            # a fragmented message is judged by its total
            f = await WSClient.connect(d, "msgsize", label="fragments")
            await f.handshake()
            piece = b"\x00" * 1024
            await f.ws.send([piece] * (MAX_MESSAGE // 1024 + 1))
            code, seen = await f.expect_close(10)
            self.assertEqual(code, 1009, seen)
            # the session and the other client carry on
            await b.stdin(b"still-here\n")
            await b.wait_output(rb"still-here\n")
            self.assertEqual(self.get("msgsize")["state"], "running")
        finally:
            await a.close()
            await b.close()

        # exec stream: the same limit
        ws = await WSClient.open(d, "/v1/exec/stream", {}, self.auth(),
                                 "stream")
        try:
            await ws.send({"type": "start", "args": ["cat"]})
            st = await ws.recv_type("started")
            pid = st["pid"]
            await ws.stdin(b"x" * (MAX_MESSAGE + 10))
            code, seen = await ws.expect_close(10)
            self.assertEqual(code, 1009, seen)
        finally:
            await ws.close()
        wait_for(lambda: not lt.proc_exists(pid), 10,
                 what="the stream's command to end with its connection")
        self.assertLiveCounterFine()

    # ---- --head-timeout: slowloris gets 408; silence is closed; 3x body

    async def test_head_timeout_slowloris(self):
        d = self.d

        def slow_head():
            # one byte every 0.25 s, never finishing the head
            with rl.RawConn(d) as c:
                t0 = time.monotonic()
                req = rl.http_head("GET", "/v1/health", d.token)
                c.s.settimeout(0.25)
                i = 0
                while i < len(req) - 3 and \
                        time.monotonic() - t0 < HEAD_TIMEOUT * 4:
                    try:
                        c.send(req[i:i + 1])
                    except OSError:
                        break
                    i += 1
                    try:
                        c._fill()       # a reply, or the close
                        break
                    except socket.timeout:
                        pass
                r = c.read_reply(timeout=10)
                return r, time.monotonic() - t0, c.closed_by_peer(5)

        def silent():
            with rl.RawConn(d) as c:
                t0 = time.monotonic()
                closed = c.closed_by_peer(HEAD_TIMEOUT * 4)
                return closed, time.monotonic() - t0, c.buf

        def slow_body():
            with rl.RawConn(d) as c:
                t0 = time.monotonic()
                c.send(rl.http_head("POST", "/v1/exec", d.token,
                                    ["Content-Length: 100"], clen=False)
                       + b'{"args":')
                r = c.read_reply(timeout=HEAD_TIMEOUT * 3 + 10)
                return r, time.monotonic() - t0, c.closed_by_peer(5)

        # many slow clients at once do not hold up anybody else
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=26)
        self.addCleanup(pool.shutdown)
        tasks = [pool.submit(slow_head) for _ in range(20)] + \
            [pool.submit(silent) for _ in range(5)] + [pool.submit(slow_body)]
        time.sleep(0.5)
        for _ in range(3):
            t0 = time.monotonic()
            r = d.request("GET", "/v1/health")
            self.assertEqual(r.status, 200)
            self.assertLess(time.monotonic() - t0, 1.5,
                            "slow clients hold up other requests")
        res = [t.result(timeout=60) for t in tasks]
        for r, took, closed in res[:20]:
            self.assertRawError(r, 408, "request_timeout")
            self.assertEqual(r.headers.get("connection", "").lower(), "close")
            self.assertTrue(closed, "connection kept after 408")
            self.assertGreaterEqual(took, HEAD_TIMEOUT - 0.3)
            self.assertLess(took, HEAD_TIMEOUT + 3)
        for closed, took, buf in res[20:25]:
            self.assertTrue(closed, "a silent connection was kept")
            self.assertEqual(buf, b"", "a silent connection got a reply")
            self.assertGreaterEqual(took, HEAD_TIMEOUT - 0.3)
            self.assertLess(took, HEAD_TIMEOUT + 3)
        r, took, closed = res[25]
        self.assertRawError(r, 408, "request_timeout")
        self.assertTrue(closed)
        self.assertGreaterEqual(took, 3 * HEAD_TIMEOUT - 0.3,
                                "the body deadline is 3x --head-timeout")
        self.assertLess(took, 3 * HEAD_TIMEOUT + 3)
        self.assertLiveCounterFine()

    # ---- --idle-timeout: an idle keep-alive connection is closed

    async def test_idle_timeout(self):
        d = self.d

        def go():
            with rl.RawConn(d) as c:
                c.send(rl.http_head("GET", "/v1/health", d.token))
                r1 = c.read_reply(timeout=10)
                # longer than --head-timeout, shorter than --idle-timeout:
                # still open (the head deadline is for a request's head)
                time.sleep(HEAD_TIMEOUT + 0.5)
                c.send(rl.http_head("GET", "/v1/health", d.token))
                r2 = c.read_reply(timeout=10)
                t0 = time.monotonic()
                closed = c.closed_by_peer(IDLE_TIMEOUT * 3)
                return r1, r2, closed, time.monotonic() - t0, c.buf
        r1, r2, closed, took, buf = await asyncio.to_thread(go)
        self.assertEqual(r1.status, 200, r1)
        self.assertIsNotNone(r2, "keep-alive connection closed before "
                             "--idle-timeout")
        self.assertEqual(r2.status, 200, r2)
        self.assertTrue(closed, "idle connection never closed")
        self.assertEqual(buf, b"", "idle close sent bytes")
        self.assertGreaterEqual(took, IDLE_TIMEOUT - 0.5)
        self.assertLess(took, IDLE_TIMEOUT + 3)
        self.assertLiveCounterFine()

    # ---- --ping-interval: a silent peer is dropped after 2.5 intervals

    async def test_ping_dead_peer(self):
        d = self.d
        s = self.create({"args": ["cat"], "name": "pinged"})
        good = await WSClient.connect(d, "pinged", label="answers-pings")
        try:
            await good.handshake()

            def dead_peer():
                with rl.RawConn(d) as c:
                    c.send(rl.ws_upgrade_head(sess_path("pinged", "/attach"),
                                              d.token))
                    r = c.read_reply(timeout=10)
                    t0 = time.monotonic()
                    # never answer: read what comes until the server closes
                    closed = c.closed_by_peer(PING * 8)
                    return r, closed, time.monotonic() - t0, c.buf
            task = asyncio.ensure_future(asyncio.to_thread(dead_peer))
            await asyncio.sleep(0.5)
            self.assertEqual(self.get("pinged")["clients"], 2)
            r, closed, took, buf = await task
            self.assertEqual(r.status, 101, r)
            self.assertTrue(closed, "a peer that never answers was kept "
                            "for %.1f s" % took)
            self.assertGreaterEqual(took, PING * 2.5 - 0.6, "dropped early")
            self.assertLess(took, PING * 2.5 + 3, "dropped late")
            opcodes = ws_opcodes(buf)
            self.assertIn(0x9, opcodes, "no ping before the drop: %r"
                          % opcodes)
            # the worker forgot it; the answering client is still there,
            # well past 2.5 intervals
            wait_for(lambda: self.get("pinged")["clients"] == 1, 10,
                     what="the dead peer to be detached")
            await good.stdin(b"alive-after-pings\n")
            await good.wait_output(rb"alive-after-pings\n")
            self.assertFalse(good.closed)
            self.assertEqual(self.get(s["id"])["state"], "running")
        finally:
            await good.close()
        self.assertLiveCounterFine()

    # ---- finally: the counter session never lost a byte

    async def test_zz_counter_untouched(self):
        d = self.d
        time.sleep(0.3)
        self.assertLiveCounterFine()
        end_live = self.live.end_offset
        self.assertGreater(end_live, 1000)
        last_log, end_log = rl.counter_log_check(d, "counter")
        self.assertGreaterEqual(end_log, end_live)
        last_att, end_att, replay = await rl.attach_check_from_zero(
            d, "counter")
        self.assertGreaterEqual(end_att, end_live)
        # the live client's bytes are the ring's bytes
        self.assertEqual(replay[:end_live], self.live.output()[:end_live])
        st = self.get("counter")
        self.assertEqual(st["state"], "running")
        self.assertEqual(st["pid"], self.counter["pid"])
        print("\n[limits] counter: %d lines, %d bytes, 0 lost"
              % (last_att, end_att), file=sys.stderr)


class TestLivenessByMessages(lt.DaemonPerTest):
    """lodge-protocol(7) Liveness: any message from the peer resets the
    time, as a pong does, so a peer busy sending is never dropped for a
    late pong."""
    daemon_args = ["--ping-interval", "2"]

    async def test_peer_that_sends_but_never_pongs_is_kept(self):
        d = self.d
        self.create({"args": ["cat"], "name": "talker"})

        def talker():
            with rl.RawConn(d) as c:
                c.send(rl.ws_upgrade_head(sess_path("talker", "/attach"),
                                          d.token))
                r = c.read_reply(timeout=30)
                # six times the 5 s after which a silent peer is dropped;
                # a message every 0.2 s, and never a pong
                end = time.monotonic() + 30
                closed, k = False, 0
                while not closed and time.monotonic() < end:
                    k += 1
                    c.send(lt.ws_frame({"type": "stdin",
                                        "data": b"k%d\n" % k}))
                    closed = c.closed_by_peer(0.2)
                return r, closed, k, c.buf
        r, closed, k, buf = await asyncio.to_thread(talker)
        self.assertEqual(r.status, 101, r)
        self.assertFalse(closed, "a peer sending all along was dropped")
        # what it sent half way, well past those 5 s, came back
        self.assertIn(b"k%d\n" % (k // 2), buf)

def ws_opcodes(buf):
    """Opcodes of the server frames in buf (unmasked frames)."""
    out, i = [], 0
    while i + 2 <= len(buf):
        b0, b1 = buf[i], buf[i + 1]
        n = b1 & 0x7f
        j = i + 2
        if n == 126:
            if j + 2 > len(buf):
                break
            n = struct.unpack(">H", buf[j:j + 2])[0]
            j += 2
        elif n == 127:
            if j + 8 > len(buf):
                break
            n = struct.unpack(">Q", buf[j:j + 8])[0]
            j += 8
        out.append(b0 & 0x0f)
        i = j + n
    return out


if __name__ == "__main__":
    lt.main()

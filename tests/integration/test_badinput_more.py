#!/usr/bin/python3
"""The rest of the bad-input suite (test_badinput.py
has the first part): HTTP, JSON, msgpack over WebSocket, WebSocket
framing, names and refs, signals and sizes.  Each case asserts the status
and code that lodge-protocol(7) documents.

Throughout, one counter session keeps producing output, read live by a
client in a thread of its own; at the end its offsets are contiguous and
its counter has no hole, and the front's descriptor count is exactly what
it was after the warm-up, its RSS within 2 MiB of it.

Run: LODGED=$PWD/lodged /usr/bin/python3 tests/integration/test_badinput_more.py
"""

import asyncio
import base64
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

HEAD_TIMEOUT = 2        # so that a body that never comes is 408 in 6 s
RSS_SLACK_KIB = 2048

CASES = []              # (category, name): every case tried


def P(m):
    return msgpack.packb(m, use_bin_type=True)


class TestBadInputMore(lt.DaemonPerClass):
    daemon_args = ["--head-timeout", str(HEAD_TIMEOUT)]

    live = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        d = cls.d
        try:
            r = d.request("POST", "/v1/sessions",
                          rl.counter_request(name="counter"))
            assert r.status == 201, r
            cls.counter = r.json()
            cls.live = rl.StreamingClient(d, "counter",
                                          label="counter-live").start()
            cls.live.wait_output(rb"c 20\n")
            cls._warm_up()
            cls.front = d.proc.pid
            cls.fd0 = rl.stable_fd_count(cls.front)
            cls.fds0 = rl.fd_links(cls.front)
            cls.rss0 = rl.rss_kib(cls.front)
        except BaseException:
            if cls.live is not None:
                cls.live.stop()
            cls.d.stop()
            raise

    @classmethod
    def _warm_up(cls):
        """One of each kind of call, so that lazily allocated state (and
        malloc's arenas) exist before the baseline is taken."""
        d = cls.d
        for _ in range(3):
            d.request("GET", "/v1/health")
            d.request("GET", "/v1/sessions")
            d.request("POST", "/v1/exec", {"args": ["true"]})
            d.request("POST", "/v1/exec", raw_body=b"{bad")
            d.request("GET", "/v1/nope")
            s = d.request("POST", "/v1/sessions", {"args": ["cat"]}).json()
            d.request("POST", sess_path(s["id"], "/input"), {"data": "x\n"})
            d.request("GET", sess_path(s["id"], "/log"))
            d.request("GET", sess_path(s["id"]))
            d.request("DELETE", sess_path(s["id"]))
            d.unix_request("GET", "/v1/health")
            rl.raw_request(d, b"\x16\x03\x01junk\r\n\r\n")
            d.request("POST", "/v1/exec", raw_body=b"[" * 3000 + b"]" * 3000)
            d.request("POST", "/v1/exec", {
                "args": ["true"] * 5000,
                "env": {"V%d" % i: "x" * 10 for i in range(5000)}})
            d.request("POST", "/v1/sessions", {
                "args": ["true"], "env": {"V%d" % i: "x" for i in range(4097)}})
            d.request("POST", "/v1/sessions", {"args": ["true"],
                                               "workDir": "/" + "w" * 10240})
            rl.raw_request(d, b"GET /" + b"A" * (1 << 20))
            rl.raw_request(d, rl.http_head("GET", "/v1/health", d.token,
                                           ["X-Big: " + "b" * 20000]))
        time.sleep(0.5)

    @classmethod
    def tearDownClass(cls):
        if cls.live is not None:
            cls.live.stop()
        super().tearDownClass()

    # ---- helpers

    def case(self, category, name):
        CASES.append((category, name))
        return self.subTest(category=category, case=name)

    def auth(self):
        return {"Authorization": "Bearer " + self.d.token}

    def assertRaw(self, r, status, code, close=None):
        self.assertIsNotNone(r, "no reply: the connection was closed")
        self.assertEqual(r.status, status, r)
        if code is not None:
            self.assertTrue(r.headers.get("content-type", "").startswith(
                "application/json"), r)
            j = r.json()
            self.assertEqual(j["error"]["code"], code, j)
            self.assertIsInstance(j["error"]["message"], str, j)
        if close is not None:
            self.assertEqual(r.headers.get("connection", "").lower() ==
                             "close", close, r)

    def raw(self, category, name, data, status, code, close=None):
        with self.case(category, name):
            r, closed = rl.raw_request(self.d, data)
            self.assertRaw(r, status, code, close)
            if close:
                self.assertTrue(closed, "%s: connection kept open after an "
                                "error on a broken stream" % name)
            return r

    def post(self, category, name, path, raw_body, status, code):
        with self.case(category, name):
            r = self.d.request("POST", path, raw_body=raw_body,
                               headers={"Content-Type": "application/json"})
            if code is None:
                self.assertEqual(r.status, status, r)
            else:
                self.assertError(r, status, code)
            return r

    def assertCounterOK(self):
        self.assertIsNone(self.live.error, self.live.error)
        self.assertEqual(self.live.gaps(), [])

    # ---------------------------------------------------------------- HTTP

    async def test_http_request_line_and_path(self):
        T = self.d.token
        h = rl.http_head
        self.raw("http", "unknown method BREW", h("BREW", "/v1/health", T),
                 405, "method_not_allowed", close=False)
        self.raw("http", "method with a bad character",
                 h("G@T", "/v1/health", T), 400, "bad_request", close=True)
        self.raw("http", "method too long", h("X" * 100, "/v1/health", T),
                 400, "bad_request", close=True)
        self.raw("http", "empty method", b" /v1/health HTTP/1.1\r\n"
                 b"Host: x\r\n\r\n", 400, "bad_request", close=True)
        self.raw("http", "target not a path", b"GET v1/health HTTP/1.1\r\n"
                 b"Host: x\r\n\r\n", 400, "bad_request", close=True)
        self.raw("http", "empty segment //", h("GET", "/v1//health", T),
                 400, "bad_request", close=True)
        self.raw("http", "dot segment /./", h("GET", "/v1/./health", T),
                 400, "bad_request", close=True)
        self.raw("http", "dot segment /../",
                 h("GET", "/v1/sessions/../health", T), 400, "bad_request",
                 close=True)
        self.raw("http", "encoded dot segment %2e%2e",
                 h("GET", "/v1/sessions/%2e%2e/health", T), 400,
                 "bad_request", close=True)
        self.raw("http", "bad escape %zz", h("GET", "/v1/%zzhealth", T),
                 400, "bad_request", close=True)
        self.raw("http", "truncated escape %2", h("GET", "/v1/health%2", T),
                 400, "bad_request", close=True)
        self.raw("http", "encoded NUL %00", h("GET", "/v1/health%00", T),
                 400, "bad_request", close=True)
        with self.case("http", "escaped letters are decoded before routing"):
            r, _ = rl.raw_request(self.d, h("GET", "/v1/%68ealth", T))
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json()["status"], "ok")
        self.raw("http", "encoded slash routes as a slash",
                 h("GET", "/v1/sessions/a%2Fb", T), 404, "not_found")
        self.raw("http", "fragment in target", h("GET", "/v1/health#x", T),
                 400, "bad_request", close=True)
        self.raw("http", "raw space in target",
                 b"GET /v1/hea lth HTTP/1.1\r\nHost: x\r\n\r\n", 400,
                 "bad_request", close=True)
        self.raw("http", "raw byte 0xff in target",
                 b"GET /v1/\xffhealth HTTP/1.1\r\nHost: x\r\n\r\n", 400,
                 "bad_request", close=True)
        # 505 carries the code bad_request (lodge-protocol(7) ERROR REPLIES)
        self.raw("http", "HTTP/2.0", h("GET", "/v1/health", T, version="2.0"),
                 505, "bad_request", close=True)
        self.raw("http", "HTTP/1.2", h("GET", "/v1/health", T, version="1.2"),
                 505, "bad_request", close=True)
        self.raw("http", "malformed version", b"GET /v1/health HTTP/1.x\r\n"
                 b"Host: x\r\n\r\n", 400, "bad_request", close=True)
        self.raw("http", "no version", b"GET /v1/health\r\nHost: x\r\n\r\n",
                 400, "bad_request", close=True)
        with self.case("http", "no token on an unknown path is 401"):
            r, _ = rl.raw_request(self.d, h("GET", "/v1/../x", None))
            self.assertRaw(r, 400, "bad_request")
            r, _ = rl.raw_request(self.d, h("GET", "/nope", None))
            self.assertRaw(r, 401, "unauthorized")
        self.assertCounterOK()

    async def test_http_header_fields(self):
        T = self.d.token
        h = rl.http_head
        self.raw("http", "missing Host in HTTP/1.1",
                 h("GET", "/v1/health", T, host=False), 400, "bad_request",
                 close=True)
        self.raw("http", "two Host fields",
                 h("GET", "/v1/health", T, ["Host: other"]), 400,
                 "bad_request", close=True)
        with self.case("http", "HTTP/1.0 without Host is fine, then closed"):
            r, closed = rl.raw_request(
                self.d, h("GET", "/v1/health", T, version="1.0", host=False))
            self.assertEqual(r.status, 200, r)
            self.assertTrue(closed)
        self.raw("http", "one 20 KiB header field",
                 h("GET", "/v1/health", T, ["X-Big: " + "b" * 20000]),
                 431, "header_too_large", close=True)
        self.raw("http", "a 20 KiB request line",
                 h("GET", "/v1/health?q=" + "q" * 20000, T),
                 431, "header_too_large", close=True)
        with self.case("http", "200 header fields"):
            r, closed = rl.raw_request(self.d, h(
                "GET", "/v1/health", T, ["X-F%d: v" % i for i in range(200)]))
            self.assertIn(r.status, (400, 431), r)
            self.assertRaw(r, r.status, "bad_request" if r.status == 400
                           else "header_too_large", close=True)
            self.assertTrue(closed)
        with self.case("http", "1 MiB without a line end"):
            r, closed = rl.raw_request(self.d, b"GET /" + b"A" * (1 << 20))
            self.assertIn(r.status, (400, 431), r)
            self.assertTrue(closed)
        self.raw("http", "field without a colon",
                 h("GET", "/v1/health", T, ["NoColonHere"]), 400,
                 "bad_request", close=True)
        self.raw("http", "space before the colon",
                 h("GET", "/v1/health", T, ["X-A : b"]), 400, "bad_request",
                 close=True)
        self.raw("http", "obsolete line folding",
                 h("GET", "/v1/health", T, ["X-A: b", " c"]), 400,
                 "bad_request", close=True)
        self.raw("http", "NUL in the head",
                 b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n",
                 400, "bad_request", close=True)
        self.raw("http", "bare LF line ends",
                 b"GET /v1/health HTTP/1.1\nHost: x\n\n", 400, "bad_request",
                 close=True)
        self.raw("http", "bare CR", b"GET /v1/health HTTP/1.1\r\nHost: x\rY: "
                 b"z\r\n\r\n", 400, "bad_request", close=True)
        self.raw("http", "control character in a value",
                 h("GET", "/v1/health", T, ["X-A: a\x01b"]), 400,
                 "bad_request", close=True)
        self.assertCounterOK()

    async def test_http_framing(self):
        d = self.d
        T = d.token
        h = rl.http_head
        body = b'{"args":["true"]}'
        self.raw("http", "Content-Length not a number",
                 h("POST", "/v1/exec", T, ["Content-Length: abc"]) + body,
                 400, "bad_request", close=True)
        self.raw("http", "negative Content-Length",
                 h("POST", "/v1/exec", T, ["Content-Length: -1"]) + body,
                 400, "bad_request", close=True)
        self.raw("http", "Content-Length with a sign",
                 h("POST", "/v1/exec", T, ["Content-Length: +17"]) + body,
                 400, "bad_request", close=True)
        self.raw("http", "conflicting Content-Length",
                 h("POST", "/v1/exec", T, ["Content-Length: 17",
                                           "Content-Length: 18"]) + body,
                 400, "bad_request", close=True)
        self.raw("http", "Content-Length list",
                 h("POST", "/v1/exec", T, ["Content-Length: 17, 18"]) + body,
                 400, "bad_request", close=True)
        self.raw("http", "Content-Length and Transfer-Encoding",
                 h("POST", "/v1/exec", T, ["Content-Length: 17",
                                           "Transfer-Encoding: chunked"])
                 + body, 400, "bad_request", close=True)
        # 411 carries the code bad_request (lodge-protocol(7))
        self.raw("http", "chunked body",
                 h("POST", "/v1/exec", T, ["Transfer-Encoding: chunked"])
                 + b"11\r\n" + body + b"\r\n0\r\n\r\n", 411, "bad_request",
                 close=True)
        self.raw("http", "Transfer-Encoding gzip",
                 h("POST", "/v1/exec", T, ["Transfer-Encoding: gzip"]),
                 400, "bad_request", close=True)
        self.raw("http", "Transfer-Encoding in HTTP/1.0",
                 h("POST", "/v1/exec", T, ["Transfer-Encoding: chunked"],
                   version="1.0"), 400, "bad_request", close=True)
        self.raw("http", "Content-Length just below 2^62",
                 h("POST", "/v1/exec", T,
                   ["Content-Length: 4611686018427387903"]),
                 413, "payload_too_large", close=True)
        with self.case("http", "Content-Length past 2^64"):
            r, closed = rl.raw_request(d, h(
                "POST", "/v1/exec", T,
                ["Content-Length: 99999999999999999999999"]))
            self.assertIn(r.status, (400, 413), r)
            self.assertRaw(r, r.status, "bad_request" if r.status == 400
                           else "payload_too_large", close=True)
            self.assertTrue(closed)
        with self.case("http", "Content-Length shorter than the body"):
            with rl.RawConn(d) as c:
                c.send(h("POST", "/v1/exec", T,
                         ["Content-Length: %d" % len(body)], clen=False)
                       + body + b"JUNK junk\r\n\r\n")
                r1 = c.read_reply()
                r2 = c.read_reply()
                self.assertEqual(r1.status, 200, r1)
                self.assertRaw(r2, 400, "bad_request", close=True)
                self.assertTrue(c.closed_by_peer(5))
        with self.case("http", "Content-Length longer than the body"):
            with rl.RawConn(d) as c:
                t0 = time.monotonic()
                c.send(h("POST", "/v1/exec", T,
                         ["Content-Length: %d" % (len(body) + 10)],
                         clen=False) + body)
                r = c.read_reply(timeout=3 * HEAD_TIMEOUT + 15)
                took = time.monotonic() - t0
                self.assertRaw(r, 408, "request_timeout", close=True)
                self.assertGreaterEqual(took, 3 * HEAD_TIMEOUT - 0.5)
                self.assertTrue(c.closed_by_peer(5))
        with self.case("http", "body cut off by the client"):
            with rl.RawConn(d) as c:
                c.send(h("POST", "/v1/exec", T, ["Content-Length: 1000"],
                         clen=False) + b'{"args":')
                c.s.shutdown(1)
                c.s.settimeout(10)
                r = c.read_reply()
                if r is not None:
                    self.assertGreaterEqual(r.status, 400, r)
                self.assertTrue(c.closed_by_peer(5))
        self.assertCounterOK()

    async def test_http_upgrades_and_garbage(self):
        d = self.d
        T = d.token
        u = rl.ws_upgrade_head
        s = self.create({"args": ["cat"]})
        attach = sess_path(s["id"], "/attach")
        for name, path in (("exec stream", "/v1/exec/stream"),
                           ("attach", attach)):
            with self.case("http", "upgrade to an unknown subprotocol: %s"
                           % name):
                r, closed = rl.raw_request(d, u(path, T, [
                    "Sec-WebSocket-Protocol: chat, superchat"]))
                # refused inside the WebSocket library: a bare close
                self.assertIsNone(r, "subprotocol chat accepted: %r" % (r,))
                self.assertTrue(closed)
        with self.case("http", "upgrade offering lodge among others"):
            r, closed = rl.raw_request(d, u("/v1/exec/stream", T, [
                "Sec-WebSocket-Protocol: chat, lodge"]))
            self.assertEqual(r.status, 101, r)
        self.raw("http", "upgrade to a REST path",
                 u("/v1/health", T), 400, "bad_request", close=True)
        self.raw("http", "upgrade to /v1/exec", u("/v1/exec", T), 400,
                 "bad_request", close=True)
        self.raw("http", "upgrade to log",
                 u(sess_path(s["id"], "/log"), T), 400, "bad_request",
                 close=True)
        self.raw("http", "plain GET of attach",
                 rl.http_head("GET", attach, T), 400, "bad_request",
                 close=True)
        self.raw("http", "plain GET of exec stream",
                 rl.http_head("GET", "/v1/exec/stream", T), 400,
                 "bad_request")
        with self.case("http", "POST with Upgrade to attach"):
            # a WebSocket is opened with a GET: an upgrade that is not one
            # of the two is 400 (or 405 for the wrong method)
            r, closed = rl.raw_request(d, rl.http_head("POST", attach, T, [
                "Upgrade: websocket", "Connection: Upgrade",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                "Sec-WebSocket-Version: 13"]))
            self.assertIn(r.status, (400, 405), r)
            self.assertRaw(r, r.status, "bad_request" if r.status == 400
                           else "method_not_allowed")
        self.raw("http", "raw garbage", os.urandom(64).replace(b"\n", b"?")
                 .replace(b"\r", b"?") + b"\r\n\r\n", 400, "bad_request",
                 close=True)
        self.raw("http", "TLS client hello",
                 bytes.fromhex("16030100a5010000a10303") + os.urandom(32),
                 400, "bad_request", close=True)
        self.raw("http", "blank lines only", b"\r\n\r\n\r\n", 400,
                 "bad_request", close=True)
        self.raw("http", "HTTP response instead of a request",
                 b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 400,
                 "bad_request", close=True)
        with self.case("http", "garbage on the Unix socket"):
            r, closed = rl.raw_request(d, b"\x00\x01\x02garbage\r\n\r\n",
                                       unix_path=d.sock_path)
            # a first byte NUL is a control connection only on worker
            # sockets; on the front's socket it is a bad request
            if r is not None:
                self.assertRaw(r, 400, "bad_request", close=True)
            self.assertTrue(closed)
        self.assertEqual(d.request("GET", "/v1/health").status, 200)
        self.assertCounterOK()

    async def test_http_query(self):
        d = self.d
        s = self.create({"args": ["cat"], "pty": True})
        attach = sess_path(s["id"], "/attach")
        for q in ("since=18446744073709551616", "since=0x10", "since=",
                  "cols=0", "cols=10001", "rows=abc", "rows=-3",
                  "cols=99999999999999999999"):
            with self.case("query", "attach ?" + q):
                st, body = await lt.ws_refused(d, attach + "?" + q,
                                               headers=self.auth())
                self.assertEqual(st, 400, (q, body))
                self.assertEqual(json.loads(body)["error"]["code"],
                                 "bad_request")
        for q in ("since=18446744073709551616", "since=1e3", "since=%2B5",
                  "since=%00"):
            with self.case("query", "log ?" + q):
                r = d.request("GET", sess_path(s["id"], "/log") + "?" + q)
                self.assertError(r, 400, "bad_request")
        with self.case("query", "unknown parameters are ignored"):
            r = d.request("GET", "/v1/sessions?junk=%zz&x")
            self.assertEqual(r.status, 200, r)
        self.assertCounterOK()

    # ---------------------------------------------------------------- JSON

    async def test_json(self):
        ex = "/v1/exec"
        ss = "/v1/sessions"
        cases = [
            ("truncated", ex, b'{"args":["tr'),
            ("truncated after a key", ss, b'{"args"'),
            ("command is an array", ex, b'{"command": ["ls"]}'),
            ("timeoutSeconds is a string", ex,
             b'{"args":["true"],"timeoutSeconds":"1"}'),
            ("stdin is a number", ex, b'{"args":["true"],"stdin":5}'),
            ("encoding unknown", ex, b'{"args":["true"],"encoding":"rot13"}'),
            ("maxOutputBytes negative", ex,
             b'{"args":["true"],"maxOutputBytes":-1}'),
            ("maxOutputBytes 1e300", ex,
             b'{"args":["true"],"maxOutputBytes":1e300}'),
            ("integer 2^64", ex,
             b'{"args":["true"],"maxOutputBytes":18446744073709551616}'),
            ("real 1e400", ex, b'{"args":["true"],"timeoutSeconds":1e400}'),
            ("timeoutSeconds 1e10", ex,
             b'{"args":["true"],"timeoutSeconds":1e10}'),
            ("timeoutSeconds negative", ex,
             b'{"args":["true"],"timeoutSeconds":-0.5}'),
            ("cols 20 digits", ss,
             b'{"args":["true"],"cols":99999999999999999999}'),
            ("cols NaN", ss, b'{"args":["true"],"cols":NaN}'),
            ("deep arrays, 10000 levels", ex,
             b'{"args":["true"],"env":' + b"[" * 10000 + b"]" * 10000 + b"}"),
            ("deep objects, 10000 levels, in an unknown field", ss,
             b'{"x":' + b'{"x":' * 10000 + b"1" + b"}" * 10001),
            ("invalid UTF-8 0xff", ex, b'{"command":"echo \xff\xfe"}'),
            ("overlong UTF-8", ex, b'{"command":"echo \xc0\xaf"}'),
            ("UTF-8 cut short", ex, b'{"command":"echo \xe2\x82"}'),
            ("UTF-8 surrogate bytes", ex, b'{"command":"echo \xed\xa0\x80"}'),
            ("lone surrogate escape", ex, b'{"command":"echo \\ud800"}'),
            ("\\u0000 in a string", ex, b'{"command":"echo a\\u0000b"}'),
            ("\\u0000 in workDir", ss,
             b'{"args":["true"],"workDir":"/tm\\u0000p"}'),
            ("duplicate key", ex, b'{"command":"true","command":"false"}'),
            ("empty body", ex, b""),
            ("whitespace body", ss, b"   \n"),
            ("a JSON string", ex, b'"{\\"args\\":[\\"true\\"]}"'),
            ("UTF-16 body", ex, '{"args":["true"]}'.encode("utf-16")),
            ("single quotes", ex, b"{'args':['true']}"),
            ("trailing comma", ex, b'{"args":["true"],}'),
            ("comment", ex, b'{"args":["true"] /* c */}'),
            ("pty is 1", ss, b'{"args":["true"],"pty":1}'),
            ("env value null inside", ex, b'{"args":["true"],"env":{"A":null}}'),
            ("args holds null", ex, b'{"args":["true",null]}'),
            ("command empty", ex, b'{"command":""}'),
        ]
        for name, path, body in cases:
            self.post("json", name, path, body, 400, "bad_request")
        with self.case("json", "80.0 is an integer"):
            r = self.d.request("POST", ex, raw_body=b'{"args":["true"],'
                               b'"cols":80.0}')
            self.assertEqual(r.status, 200, r)
        with self.case("json", "unknown fields are refused, named"):
            r = self.d.request("POST", ex, raw_body=b'{"args":["echo","k"],'
                               b'"bogus":{"deep":[1,2,3]}}')
            j = self.assertError(r, 400, "bad_request")
            self.assertIn("'bogus'", j["error"]["message"])
        names = [x.get("name") for x in
                 self.d.json("GET", "/v1/sessions")["sessions"]]
        self.assertEqual(names, ["counter"], "a bad request made a session")
        self.assertCounterOK()

    # ------------------------------------------------------ msgpack, attach

    async def _expect_error(self, c, what, code="bad_request"):
        e = await c.recv_until(lambda m: m["type"] in ("error", "exit"),
                               timeout=10, what="an error for %s" % what)
        self.assertEqual(e["type"], "error", (what, e))
        self.assertEqual(e.get("code"), code, (what, e))
        self.assertIsInstance(e.get("message"), str, (what, e))

    async def test_msgpack_attach(self):
        d = self.d
        pipe = self.create({"args": ["cat"]})
        pty = self.create({"args": ["cat"], "pty": True})
        worker = rl.worker_of(pipe["pid"])
        big = 100_000_000
        common = [
            ("truncated map", P({"type": "stdin", "data": b"xyz"})[:-2]),
            ("type as bin", P({"type": b"stdin", "data": b"x\n"})),
            ("key as bin", P({b"type": "stdin", b"data": b"x\n"})),
            ("type nil", P({"type": None})),
            ("unknown type", P({"type": "hello", "data": b"x\n"})),
            ("type uppercase", P({"type": "STDIN", "data": b"x\n"})),
            ("type with a NUL", P({"type": "stdin\x00", "data": b"x\n"})),
            ("an ext value as the message", b"\xd4\x01\x02"),
            ("data as ext", b"\x82\xa4type\xa5stdin\xa4data\xd4\x01\x02"),
            ("data as a map", P({"type": "stdin", "data": {"a": 1}})),
            ("data as an array", P({"type": "stdin", "data": [1, 2]})),
            ("bin32 declaring 100 MB",
             b"\x82\xa4type\xa5stdin\xa4data\xc6" + struct.pack(">I", big)
             + b"abc"),
            ("str32 declaring 100 MB",
             b"\x81\xa4type\xdb" + struct.pack(">I", big) + b"abc"),
            ("map32 declaring 100 M entries",
             b"\xdf" + struct.pack(">I", big) + b"\xa4type"),
            ("array32 declaring 100 M items",
             b"\x82\xa4type\xa5stdin\xa4data\xdd" + struct.pack(">I", big)),
            ("two maps in one message",
             P({"type": "stdin", "data": b"A\n"})
             + P({"type": "stdin", "data": b"B\n"})),
            ("a trailing byte", P({"type": "stdin", "data": b"T\n"}) + b"\xc0"),
            ("reserved byte 0xc1", b"\xc1"),
            ("a negative fixint", b"\xff"),
            ("signal 0", P({"type": "signal", "signal": 0})),
            ("signal -1", P({"type": "signal", "signal": -1})),
            ("signal 65", P({"type": "signal", "signal": 65})),
            ("signal 2^64-1", P({"type": "signal", "signal": 2**64 - 1})),
            ("signal as bin", P({"type": "signal", "signal": b"INT"})),
            ("signal unknown name", P({"type": "signal", "signal": "SIGNOPE"})),
            ("signal a float", P({"type": "signal", "signal": 2.5})),
            ("signal nil", P({"type": "signal", "signal": None})),
            ("start on attach", P({"type": "start", "args": ["true"]})),
        ]
        pty_only = [
            ("resize cols as str", P({"type": "resize", "cols": "80",
                                      "rows": 24})),
            ("resize cols 0", P({"type": "resize", "cols": 0, "rows": 24})),
            ("resize rows 10001", P({"type": "resize", "cols": 80,
                                     "rows": 10001})),
            ("resize cols 2^63", P({"type": "resize", "cols": 2**63,
                                    "rows": 24})),
            ("resize cols negative", P({"type": "resize", "cols": -80,
                                        "rows": 24})),
            ("resize without rows", P({"type": "resize", "cols": 80})),
            ("eof on a PTY", P({"type": "eof"})),
        ]
        pipe_only = [
            ("resize on a pipe session", P({"type": "resize", "cols": 80,
                                            "rows": 24})),
        ]
        rss_before = rl.rss_kib(worker)
        for sess, extra in ((pipe, pipe_only), (pty, pty_only)):
            kind = "pty" if sess["pty"] else "pipe"
            c = await WSClient.connect(d, sess["id"], label=kind)
            try:
                await c.handshake()
                for what, frame in common + extra:
                    with self.case("msgpack", "%s (%s)" % (what, kind)):
                        await c.send_raw(frame)
                        await self._expect_error(c, what)
                with self.case("msgpack", "stdin data as str (%s)" % kind):
                    await c.send({"type": "stdin", "data": "as-str\n"})
                    await c.wait_output(rb"as-str\r?\n")
                await c.stdin(b"still-open\n")
                await c.wait_output(rb"still-open\r?\n")
                self.assertFalse(c.closed)
                self.assertNotIn(b"A\nB\n", c.output)
            finally:
                await c.close()
        self.assertLess(rl.rss_kib(worker) - rss_before, 10 * 1024,
                        "a declared length was allocated")
        self.assertEqual(self.get(pipe["id"])["state"], "running")
        self.assertEqual(self.get(pty["id"])["state"], "running")
        self.assertCounterOK()

    async def test_msgpack_exec_stream(self):
        d = self.d
        ws = await WSClient.open(d, "/v1/exec/stream", {}, self.auth(),
                                 "stream")
        try:
            for what, frame in (
                    ("stdin before start", P({"type": "stdin",
                                              "data": b"x"})),
                    ("start truncated", P({"type": "start",
                                           "args": ["cat"]})[:-3]),
                    ("start args a string", P({"type": "start",
                                               "args": "cat"})),
                    ("start with both command and args",
                     P({"type": "start", "args": ["cat"], "command": "cat"})),
                    ("start tty as a str", P({"type": "start",
                                              "args": ["cat"], "tty": "y"})),
                    ("start cols 0", P({"type": "start", "args": ["cat"],
                                        "tty": True, "cols": 0})),
                    ("start env as an array", P({"type": "start",
                                                 "args": ["cat"],
                                                 "env": ["A=1"]})),
                    ("start args[0] bin", P({"type": "start",
                                             "args": [b"cat"]})),
                    ("start timeoutSeconds -1", P({"type": "start",
                                                   "args": ["cat"],
                                                   "timeoutSeconds": -1})),
                    ("a text frame before start", "{\"type\":\"start\"}")):
                with self.case("stream", what):
                    await ws.send_raw(frame)
                    await self._expect_error(ws, what)
            await ws.send({"type": "start", "args": ["cat"]})
            await ws.recv_type("started")
            with self.case("stream", "a second start"):
                await ws.send({"type": "start", "args": ["cat"]})
                await self._expect_error(ws, "second start")
            with self.case("stream", "signal 0 on a stream"):
                await ws.send({"type": "signal", "signal": 0})
                await self._expect_error(ws, "signal 0")
            with self.case("stream", "resize on a pipe stream"):
                await ws.send({"type": "resize", "cols": 80, "rows": 24})
                await self._expect_error(ws, "resize on pipes")
            await ws.stdin(b"stream-ok\n")
            await ws.wait_output(rb"stream-ok\n")
            await ws.send({"type": "eof"})
            ex = await ws.recv_type("exit")
            self.assertEqual(ex["exitCode"], 0, ex)
        finally:
            await ws.close()
        self.assertCounterOK()

    # ----------------------------------------------------- WebSocket frames

    async def test_websocket_frames(self):
        d = self.d
        s = self.create({"args": ["cat"]})
        c = await WSClient.connect(d, s["id"], label="frames")
        other = await WSClient.connect(d, s["id"], label="bystander")
        try:
            await c.handshake()
            await other.handshake()
            with self.case("websocket", "a text frame"):
                await c.send_raw('{"type":"stdin","data":"x"}')
                await self._expect_error(c, "text frame")
            with self.case("websocket", "a fragmented binary message"):
                m = P({"type": "stdin", "data": b"frag-one-two\n"})
                await c.ws.send([m[:3], m[3:9], m[9:]])
                await c.wait_output(rb"frag-one-two\n")
            with self.case("websocket", "a fragmented text message"):
                await c.ws.send(["{\"type\":", "\"stdin\"}"])
                await self._expect_error(c, "fragmented text")
            with self.case("websocket", "an empty binary message"):
                await c.send_raw(b"")
                await self._expect_error(c, "empty message")
            with self.case("websocket", "1 MiB exactly is accepted"):
                hdr = len(P({"type": "stdin", "data": b""})) + 4
                data = b"m" * ((1 << 20) - hdr - 1) + b"\n"
                frame = P({"type": "stdin", "data": data})
                self.assertLessEqual(len(frame), 1 << 20)
                await c.send_raw(frame)
                # the line's end: m{1000}\n backtracks 1000 steps a byte
                await other.wait_output(rb"mmmmmmmm\n", timeout=30)
            with self.case("websocket", "1 MiB + 1 byte: close 1009"):
                await c.send_raw(P({"type": "stdin",
                                    "data": b"O" * (1 << 20)}))
                code, seen = await c.expect_close(15)
                self.assertEqual(code, 1009, seen)
            with self.case("websocket", "oversize in fragments: close 1009"):
                f = await WSClient.connect(d, s["id"], label="fragments")
                await f.handshake()
                await f.ws.send([b"\x00" * 65536] * 17)
                code, seen = await f.expect_close(15)
                self.assertEqual(code, 1009, seen)
            with self.case("websocket", "exec stream: oversize start"):
                ws = await WSClient.open(d, "/v1/exec/stream", {},
                                         self.auth(), "big-start")
                await ws.send({"type": "start", "args": ["true"],
                               "env": {"PAD": "p" * (1 << 20)}})
                code, seen = await ws.expect_close(15)
                self.assertEqual(code, 1009, seen)
            await other.stdin(b"bystander-fine\n")
            await other.wait_output(rb"bystander-fine\n")
            self.assertNotIn(b"O" * 1000, other.output)
            self.assertFalse(other.closed)
        finally:
            await c.close()
            await other.close()
        self.assertEqual(self.get(s["id"])["state"], "running")
        self.assertCounterOK()

    def _raw_ws(self, path):
        """A WebSocket by hand: the socket, after the 101's head."""
        sock = socket.create_connection(("127.0.0.1", self.d.port), 10)
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Authorization: Bearer %s\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                      "Sec-WebSocket-Version: 13\r\n\r\n"
                      % (path, self.d.token, key)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            got = sock.recv(4096)
            self.assertTrue(got, "no 101: %r" % head)
            head += got
        self.assertTrue(head.startswith(b"HTTP/1.1 101"), head)
        return sock, head.split(b"\r\n\r\n", 1)[1]

    @staticmethod
    def _frame(opcode, fin, payload):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return head + mask + body

    async def test_websocket_oversize_close_handshake(self):
        """An oversize message, sent whole before reading a byte: lodged
        answers 1009 and then waits for the client's close, reading and
        dropping the rest, instead of closing over unread bytes (which
        resets the socket, and a client still writing loses the close)."""
        d = self.d
        s = self.create({"args": ["cat"]})
        for what, path in (("session", sess_path(s["id"], "/attach")),
                           ("exec stream", "/v1/exec/stream")):
            with self.case("websocket", "oversize, then the close "
                           "handshake: " + what):
                sock, early = self._raw_ws(path)
                try:
                    chunk = bytes(65536)
                    data = self._frame(2, False, chunk)
                    for _ in range(16):
                        data += self._frame(0, False, chunk)
                    sock.sendall(data + self._frame(0, True, b""))
                    # a second's grace: lodged's close frame, no EOF
                    got, deadline = early, time.monotonic() + 1
                    sock.settimeout(0.2)
                    while time.monotonic() < deadline:
                        try:
                            b = sock.recv(65536)
                        except socket.timeout:
                            continue
                        self.assertTrue(b, "closed before the client's "
                                        "close; had %r" % got[-40:])
                        got += b
                    self.assertIn(b"payload_too_large", got)
                    self.assertIn(b"\x88\x11\x03\xf1message too big", got)
                    # our close in answer: then lodged closes
                    sock.sendall(self._frame(8, True, b"\x03\xf1"))
                    sock.settimeout(10)
                    while sock.recv(65536):
                        pass
                finally:
                    sock.close()
        self.assertEqual(self.get(s["id"])["state"], "running")
        self.assertCounterOK()

    # ------------------------------------------------------ names and refs

    async def test_names_and_refs(self):
        d = self.d
        s = self.create({"args": ["cat"], "name": "target"})
        long_ref = "r" * 10240
        for name, ref in (("../", "..%2Fetc%2Fpasswd"),
                          ("encoded NUL", "target%00"),
                          ("10 KB", long_ref),
                          ("UTF-8", "caf%C3%A9"),
                          ("space", "a%20b"),
                          ("dot", "."),
                          ("65 characters", "t" * 65)):
            with self.case("refs", "GET ref " + name):
                r = d.request("GET", "/v1/sessions/" + ref)
                self.assertError(r, 400, "bad_request")
        with self.case("refs", "log of a 10 KB ref"):
            self.assertError(d.request("GET", "/v1/sessions/%s/log"
                                       % long_ref), 400, "bad_request")
        with self.case("refs", "DELETE of a ../ ref"):
            self.assertError(d.request("DELETE", "/v1/sessions/..%2Ftarget"),
                             400, "bad_request")
        with self.case("refs", "input to a %00 ref"):
            # one write: the server may close as soon as it has the head
            r, closed = rl.raw_request(d, rl.http_head(
                "POST", "/v1/sessions/target%00/input", d.token,
                body=b'{"data":"x"}'))
            self.assertRaw(r, 400, "bad_request", close=True)
            self.assertTrue(closed)
        with self.case("refs", "attach to a 10 KB ref"):
            st, body = await lt.ws_refused(
                d, "/v1/sessions/%s/attach" % long_ref, headers=self.auth())
            self.assertEqual(st, 400, body)
        with self.case("refs", "attach to a ../ ref"):
            st, body = await lt.ws_refused(
                d, "/v1/sessions/..%2Ftarget/attach", headers=self.auth())
            self.assertEqual(st, 400, body)
        with self.case("refs", "well-formed unknown ref"):
            self.assertError(d.request("GET", sess_path("no-such")), 404,
                             "not_found")
        bad = [
            ("name ../", {"name": "../x"}, 400, "bad_request"),
            ("name 10 KB", {"name": "n" * 10240}, 400, "bad_request"),
            ("name with NUL", {"name": "a\u0000b"}, 400, "bad_request"),
            ("name with /", {"name": "a/b"}, 400, "bad_request"),
            ("name empty", {"name": ""}, 400, "bad_request"),
            ("user 10 KB", {"user": "u" * 10240}, 400, "bad_request"),
            ("user ../root", {"user": "../root"}, 422, "spawn_failed"),
            ("user with NUL", {"user": "ro\u0000ot"}, 400, "bad_request"),
            ("workDir ../ nowhere", {"workDir": "../../no/such/dir"}, 422,
             "spawn_failed"),
            ("workDir 10 KB", {"workDir": "/" + "w" * 10240}, 422,
             "spawn_failed"),
            ("env name with =", {"env": {"A=B": "x"}}, 400, "bad_request"),
            ("env name empty", {"env": {"": "x"}}, 400, "bad_request"),
            ("4097 env entries",
             {"env": {"V%d" % i: "x" for i in range(4097)}}, 400,
             "bad_request"),
        ]
        for what, extra, status, code in bad:
            with self.case("names", what):
                body = dict({"args": ["true"]}, **extra)
                r = d.request("POST", "/v1/sessions", body)
                self.assertError(r, status, code)
        for what, body, status, code in (
                ("args[0] empty", {"args": [""]}, 400, "bad_request"),
                ("args[0] ../../ nowhere", {"args": ["../../no/such/prog"]},
                 422, "spawn_failed"),
                ("args[0] 10 KB", {"args": ["p" * 10240]}, 422,
                 "spawn_failed"),
                ("4097 args", {"args": ["true"] * 4097}, 400,
                 "bad_request")):
            with self.case("names", what):
                self.assertError(d.request("POST", "/v1/exec", body),
                                 status, code)
        # a name the create call accepts must work as a ref
        for n in (".", ".."):
            with self.case("names", "name %r" % n):
                r = d.request("POST", "/v1/sessions",
                              {"args": ["sleep", "1000"], "name": n})
                if r.status == 201:
                    sid = r.json()["id"]
                    self.addCleanup(self._delete_quietly, d, sid)
                    g = d.request("GET", "/v1/sessions/" + n)
                    self.assertEqual(g.status, 200, "session named %r was "
                                     "created but cannot be reached by its "
                                     "name: %r" % (n, g))
                else:
                    self.assertError(r, 400, "bad_request")
        names = sorted(x.get("name") or "" for x in
                       d.json("GET", "/v1/sessions")["sessions"])
        self.assertTrue(set(names) <= {"counter", "target", ".", ".."},
                        names)
        self.assertEqual(self.get("target")["id"], s["id"])
        self.assertCounterOK()

    # ------------------------------------------------------ signals, sizes

    async def test_signals(self):
        d = self.d
        s = self.create({"args": ["sleep", "1000"]})
        path = sess_path(s["id"], "/signal")
        for sig in ("NOPE", "SIG", "SIGKILLX", "RTMIN+99", 0, -1, -9, 65, 1000,
                    2**63, "0", "-9", "65", "1e1", 1.5, "", True, None,
                    {"n": 9}):
            with self.case("signals", "REST signal %r" % (sig,)):
                r = d.request("POST", path, {"signal": sig})
                self.assertError(r, 400, "bad_request")
        with self.case("signals", "REST signal WINCH, lower case with SIG"):
            r = d.request("POST", path, {"signal": "sigwinch"})
            self.assertEqual(r.status, 204, r)
        self.assertEqual(self.get(s["id"])["state"], "running")
        self.assertTrue(lt.proc_exists(s["pid"]))
        self.assertCounterOK()

    async def test_sizes(self):
        d = self.d
        s = self.create({"args": ["cat"], "pty": True})
        path = sess_path(s["id"], "/resize")
        for what, body in (("cols 0", {"cols": 0, "rows": 24}),
                           ("rows 0", {"cols": 80, "rows": 0}),
                           ("cols 10001", {"cols": 10001, "rows": 24}),
                           ("rows huge", {"cols": 80, "rows": 2**62}),
                           ("cols 2^64", {"cols": 2**64, "rows": 24}),
                           ("cols -1", {"cols": -1, "rows": 24}),
                           ("cols 1.5", {"cols": 1.5, "rows": 24}),
                           ("cols 1e400", None)):
            with self.case("sizes", "resize " + what):
                if body is None:
                    r = d.request("POST", path, raw_body=b'{"cols":1e400,'
                                  b'"rows":24}')
                else:
                    r = d.request("POST", path, body)
                self.assertError(r, 400, "bad_request")
        with self.case("sizes", "resize 10000 x 10000 is allowed"):
            r = d.request("POST", path, {"cols": 10000, "rows": 10000})
            self.assertEqual(r.status, 204, r)
            self.assertEqual(self.get(s["id"])["cols"], 10000)
        for what, extra in (("cols 0", {"cols": 0}),
                            ("rows 10001", {"rows": 10001}),
                            ("cols huge", {"cols": 2**40}),
                            ("bufferSize 0", {"bufferSize": 0}),
                            ("bufferSize 4095", {"bufferSize": 4095}),
                            ("bufferSize 1 TiB", {"bufferSize": 2**40}),
                            ("bufferSize negative", {"bufferSize": -4096}),
                            ("bufferSize 2^63", {"bufferSize": 2**63})):
            with self.case("sizes", "session " + what):
                r = d.request("POST", "/v1/sessions",
                              dict({"args": ["true"], "pty": True}, **extra))
                self.assertError(r, 400, "bad_request")
        with self.case("sizes", "exec stream tty with rows 0"):
            ws = await WSClient.open(d, "/v1/exec/stream", {}, self.auth(),
                                     "tty0")
            try:
                await ws.send({"type": "start", "args": ["true"], "tty": True,
                               "cols": 80, "rows": 0})
                await self._expect_error(ws, "rows 0")
            finally:
                await ws.close()
        self.assertCounterOK()

    # ------------------------------------------------------------- the end

    async def test_zz_output_and_resources(self):
        """After every case: the counter lost nothing; fds and RSS are
        back to the baseline."""
        d = self.d
        self.assertIsNone(d.proc.poll(), "the front died")
        self.assertCounterOK()
        end_live = self.live.end_offset
        last_live, _ = rl.check_counter(self.live.output(),
                                        what="counter live client")
        last_log, end_log = rl.counter_log_check(d, "counter")
        self.assertGreaterEqual(last_log, last_live)
        last_att, end_att, replay = await rl.attach_check_from_zero(
            d, "counter")
        self.assertEqual(replay[:end_live], self.live.output()[:end_live])
        # every session but the counter is gone again
        names = [x.get("name") for x in
                 d.json("GET", "/v1/sessions")["sessions"]]
        self.assertEqual(names, ["counter"])
        fd1 = rl.wait_fd_count(self.front, self.fd0, timeout=20)
        if fd1 != self.fd0:
            now = rl.fd_links(self.front)
            extra = {k: v for k, v in now.items()
                     if self.fds0.get(k) != v}
            self.fail("the front holds %d descriptors, %d after the "
                      "warm-up; new or changed: %r" % (fd1, self.fd0, extra))
        rss1 = rl.rss_kib(self.front)
        if not lt.SANITIZED:
            self.assertLessEqual(rss1 - self.rss0, RSS_SLACK_KIB,
                                 "front RSS grew from %d to %d KiB"
                                 % (self.rss0, rss1))
        n = len(CASES)
        cats = {}
        for cat, _ in CASES:
            cats[cat] = cats.get(cat, 0) + 1
        print("\n[badinput_more] %d cases (%s); counter %d lines, %d bytes, "
              "0 lost; front fds %d -> %d, RSS %d -> %d KiB"
              % (n, ", ".join("%s %d" % kv for kv in sorted(cats.items())),
                 last_att, end_att, self.fd0, fd1, self.rss0, rss1),
              file=sys.stderr)
        self.assertGreaterEqual(n, 40)


if __name__ == "__main__":
    lt.main()

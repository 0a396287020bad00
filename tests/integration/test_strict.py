#!/usr/bin/python3
"""A protocol strict enough that a client can trust it (lodge-protocol.7:
REST CALLS, RUN REQUESTS, WEBSOCKET MESSAGES, Signals, VERSIONS).

Unknown and mistyped fields in every request body and every client
WebSocket message are refused with a message that names the field (and the
defined one when it is close); real-time signals by name, in signal
requests and in exits; integral floats as signal numbers; error messages
that quote a client's bytes are valid UTF-8; duplicate Authorization is
400; the attach and log query is parsed alike by the front and by a
session's worker socket; GET /v1/health says the protocol version.

Run: LODGED=$PWD/lodged /usr/bin/python3 tests/integration/test_strict.py
"""

import os
import subprocess
import sys

import msgpack
import websockets.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
import reliability as rl  # noqa: E402
from lodgetest import WSClient, sess_path  # noqa: E402

LODGE = os.environ.get("LODGE_CLI") or os.path.join(lt.REPO, "lodge")
STREAM = "/v1/exec/stream"
SINCE_MAX = 2**63 - 1


class StrictMixin:

    def assertBad(self, r, message=None, contains=()):
        """400 bad_request, with exactly message or containing each of
        contains; returns the message."""
        j = self.assertError(r, 400, "bad_request")
        msg = j["error"]["message"]
        if message is not None:
            self.assertEqual(msg, message, r)
        for part in contains:
            self.assertIn(part, msg, r)
        return msg

    async def open_stream(self):
        c = await WSClient.open(self.d, STREAM, {}, {
            "Authorization": "Bearer " + self.d.token}, "stream")
        self.addAsyncCleanup(c.close)
        return c

    async def attach(self, ref):
        c = await WSClient.connect(self.d, ref)
        self.addAsyncCleanup(c.close)
        await c.recv_type("live")
        return c

    async def expect_ws_error(self, c, message=None, code="bad_request",
                              contains=()):
        m = await c.recv_type("error")
        self.assertEqual(m.get("code"), code, m)
        if message is not None:
            self.assertEqual(m.get("message"), message, m)
        for part in contains:
            self.assertIn(part, m.get("message"), m)
        return m

    def sessions_named(self):
        return [s.get("name") for s in
                self.d.json("GET", "/v1/sessions")["sessions"]]


class TestUnknownFields(StrictMixin, lt.DaemonPerClass):

    def test_exec_workdir_misspelt(self):
        # on main this ran in the home directory and answered 200
        r = self.d.request("POST", "/v1/exec",
                           {"command": "pwd", "workdir": "/tmp"})
        self.assertBad(r, "unknown field 'workdir' (did you mean "
                       "'workDir'?)")
        for spelling in ("Workdir", "work_dir", "WORK-DIR"):
            r = self.d.request("POST", "/v1/exec",
                               {"command": "pwd", spelling: "/tmp"})
            self.assertBad(r, "unknown field '%s' (did you mean "
                           "'workDir'?)" % spelling)
        # the defined spelling still works
        j = self.d.json("POST", "/v1/exec",
                        {"command": "pwd", "workDir": "/tmp"})
        self.assertEqual(j["stdout"], "/tmp\n")

    def test_exec_timeout_seconds_misspelt(self):
        # on main the command ran to its end with timedOut false
        r = self.d.request("POST", "/v1/exec", {"command": "sleep 3",
                                                "timeout_seconds": 1})
        self.assertBad(r, "unknown field 'timeout_seconds' (did you mean "
                       "'timeoutSeconds'?)")
        r = self.d.request("POST", "/v1/exec", {"command": "true",
                                                "timeout": 1})
        # no close field: no hint
        self.assertBad(r, "unknown field 'timeout'")

    def test_session_tty_is_not_pty(self):
        # on main this made a pipe session
        r = self.d.request("POST", "/v1/sessions",
                           {"name": "tty-typo", "command": "cat",
                            "tty": True})
        self.assertBad(r, "unknown field 'tty' (did you mean 'pty'?)")
        # fields of the exec request are not a session's
        r = self.d.request("POST", "/v1/sessions",
                           {"name": "timeout-typo", "command": "cat",
                            "timeoutSeconds": 5})
        self.assertBad(r, "unknown field 'timeoutSeconds'")
        self.assertNotIn("tty-typo", self.sessions_named())
        self.assertNotIn("timeout-typo", self.sessions_named())
        s = self.create({"name": "pty-right", "command": "cat",
                         "pty": True})
        self.assertTrue(s["pty"])

    def test_small_bodies(self):
        s = self.create({"args": ["sleep", "1000"]})
        for suffix, body, name, hint in (
                ("/signal", {"signal": "INT", "force": True}, "force", None),
                ("/signal", {"sgnal": "INT"}, "sgnal", "signal"),
                ("/input", {"data": "x", "eof": True}, "eof", None),
                ("/input", {"data_base64": "eA=="}, "data_base64",
                 "dataBase64"),
                ("/resize", {"cols": 80, "rows": 24, "colums": 1}, "colums",
                 "cols")):
            r = self.d.request("POST", sess_path(s["id"], suffix), body)
            want = "unknown field '%s'" % name
            if hint:
                want += " (did you mean '%s'?)" % hint
            self.assertBad(r, want)
        self.assertEqual(self.get(s["id"])["state"], "running")

    async def test_exec_stream_start_misspelt(self):
        c = await self.open_stream()
        # on main the start was taken and the field ignored
        await c.send({"type": "start", "command": "pwd", "workdir": "/tmp"})
        await self.expect_ws_error(c, "unknown field 'workdir' (did you "
                                   "mean 'workDir'?)")
        await c.send({"type": "start", "command": "pwd", "pty": True})
        await self.expect_ws_error(c, "unknown field 'pty' (did you mean "
                                   "'tty'?)")
        await c.send({"type": "start", "command": "cat", "stdin": "x"})
        await self.expect_ws_error(c, contains=("'stdin'", "exec stream"))
        # the connection stays open: a good start runs
        await c.send({"type": "start", "command": "pwd", "workDir": "/tmp"})
        m = await c.recv_type("started")
        self.assertIsInstance(m.get("pid"), int)
        await c.recv_type("exit")
        self.assertEqual(c.output, b"/tmp\n")

    async def test_ws_messages_of_a_session(self):
        s = self.create({"args": ["cat"]})
        c = await self.attach(s["id"])
        for m, want in (
                ({"type": "stdin", "data": b"x", "dta": b"y"},
                 "unknown field 'dta' (did you mean 'data'?)"),
                ({"type": "eof", "now": True}, "unknown field 'now'"),
                ({"type": "resize", "cols": 80, "rows": 24, "Cols": 1},
                 "unknown field 'Cols' (did you mean 'cols'?)"),
                ({"type": "signal", "signal": "INT", "group": True},
                 "unknown field 'group'")):
            await c.send(m)
            await self.expect_ws_error(c, want)
        # still attached and working: nothing above reached the process
        await c.stdin(b"still here\n")
        await c.wait_output(rb"still here\n")
        self.assertEqual(c.output, b"still here\n")
        self.assertEqual(self.get(s["id"])["state"], "running")


class TestWrongTypes(StrictMixin, lt.DaemonPerClass):

    def test_rest_types_name_field_and_type(self):
        for path, body, want in (
                ("/v1/exec", {"command": "pwd", "workDir": 5},
                 "'workDir' must be a string, not an integer"),
                ("/v1/exec", {"command": "pwd", "timeoutSeconds": "1"},
                 "'timeoutSeconds' must be a number, not a string"),
                ("/v1/exec", {"command": "pwd", "env": ["A=1"]},
                 "'env' must be an object, not an array"),
                ("/v1/exec", {"command": "pwd", "cols": 80.5},
                 "'cols' must be an integer, not a number with a "
                 "fraction"),
                ("/v1/sessions", {"command": "cat", "pty": "yes"},
                 "'pty' must be true or false, not a string"),
                ("/v1/sessions", {"command": "cat", "bufferSize": True},
                 "'bufferSize' must be an integer, not a boolean")):
            self.assertBad(self.d.request("POST", path, body), want)
        # an integral float is an integer, as documented
        j = self.d.json("POST", "/v1/exec", {"args": ["true"], "cols": 80.0})
        self.assertEqual(j["exitCode"], 0)

    async def test_ws_types(self):
        s = self.create({"args": ["cat"], "pty": True})
        c = await self.attach(s["id"])
        await c.send({"type": "resize", "cols": "80", "rows": 24})
        await self.expect_ws_error(c, "'cols' must be an integer, not a "
                                   "string")
        await c.send({"type": "stdin", "data": 5})
        await self.expect_ws_error(c, "'data' must be bin or a string, not "
                                   "an integer")
        await c.send({"type": "signal", "signal": True})
        await self.expect_ws_error(c, "'signal' must be a signal name or "
                                   "number, not a boolean")
        c2 = await self.open_stream()
        await c2.send({"type": "start", "args": "ls"})
        await self.expect_ws_error(c2, "'args' must be an array, not a "
                                   "string")


class TestSignals(StrictMixin, lt.DaemonPerClass):

    def test_rest_rtmin_plus_3_and_its_exit(self):
        s = self.create({"args": ["sleep", "1000"]})
        self.signal(s["id"], "RTMIN+3")
        x = self.wait_state(s["id"])
        self.assertIsNone(x["exitCode"], x)
        # on main: null
        self.assertEqual(x["signal"], "RTMIN+3", x)

    def test_rtmax_minus_2_by_name_any_case(self):
        s = self.create({"args": ["sleep", "1000"]})
        self.signal(s["id"], "sigrtmax-2")
        x = self.wait_state(s["id"])
        self.assertEqual(x["signal"], "RTMAX-2", x)

    def test_exec_killed_by_a_realtime_signal(self):
        j = self.d.json("POST", "/v1/exec", {
            "args": ["bash", "-c", "kill -s RTMIN+3 $$"]})
        self.assertIsNone(j["exitCode"], j)
        self.assertEqual(j["signal"], "RTMIN+3", j)
        j = self.d.json("POST", "/v1/exec", {
            "args": ["bash", "-c", "kill -s RTMIN $$"]})
        self.assertEqual(j["signal"], "RTMIN", j)

    async def test_ws_signal_rtmin_plus_3(self):
        c = await self.open_stream()
        await c.send({"type": "start", "args": ["sleep", "1000"]})
        await c.recv_type("started")
        await c.send({"type": "signal", "signal": "RTMIN+3"})
        ex = await c.recv_type("exit")
        self.assertEqual(ex["signal"], "RTMIN+3", ex)
        self.assertIsNone(ex["exitCode"], ex)

    def test_out_of_range_realtime_names(self):
        s = self.create({"args": ["sleep", "1000"]})
        for sig in ("RTMIN+31", "RTMAX-31", "RTMIN-1", "RTMAX+1", "RTMIN+",
                    "RTMINIMUM"):
            r = self.d.request("POST", sess_path(s["id"], "/signal"),
                               {"signal": sig})
            self.assertBad(r)
        self.assertEqual(self.get(s["id"])["state"], "running")

    def test_integral_float_signal(self):
        s = self.create({"args": ["sleep", "1000"]})
        path = sess_path(s["id"], "/signal")
        for sig in (9.5, 0.0, 65.0):
            self.assertBad(self.d.request("POST", path, {"signal": sig}),
                           contains=("'signal'",))
        self.assertEqual(self.get(s["id"])["state"], "running")
        # on main: 400
        r = self.d.request("POST", path, {"signal": 9.0})
        self.assertEqual(r.status, 204, r)
        x = self.wait_state(s["id"])
        self.assertEqual(x["signal"], "KILL", x)

    def test_cli_kill_rtmin_plus_3(self):
        if not os.access(LODGE, os.X_OK):
            self.fail("lodge not found at %s (set LODGE_CLI)" % LODGE)
        s = self.create({"args": ["sleep", "1000"]})
        env = dict(os.environ, LODGE_RUNDIR=self.d.rundir,
                   LODGE_TEST_RUNDIR=self.d.rundir)
        env.pop("LODGE_TOKEN", None)
        # on main: "unknown signal 'RTMIN+3'"
        p = subprocess.run([LODGE, "kill", "-s", "RTMIN+3", s["id"]],
                           env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        x = self.wait_state(s["id"])
        self.assertEqual(x["signal"], "RTMIN+3", x)

    async def test_ws_integral_float_signal(self):
        s = self.create({"args": ["sleep", "1000"]})
        c = await self.attach(s["id"])
        await c.send({"type": "signal", "signal": 9.5})
        await self.expect_ws_error(c, contains=("'signal'",))
        await c.send({"type": "signal", "signal": 15.0})
        ex = await c.recv_type("exit")
        self.assertEqual(ex["signal"], "TERM", ex)


class TestMessagesAreUTF8(StrictMixin, lt.DaemonPerClass):

    async def _raw_error(self, c, raw):
        """Send raw bytes; the error reply must decode as UTF-8 msgpack."""
        await c.send_raw(raw)
        frame = await c.ws.recv()
        # on main: UnicodeDecodeError for an unknown type's bytes
        m = msgpack.unpackb(frame, raw=False)
        self.assertEqual(m["type"], "error", m)
        self.assertEqual(m["code"], "bad_request", m)
        return m["message"]

    async def test_ws_unknown_type_and_field_quoted_as_utf8(self):
        s = self.create({"args": ["cat"]})
        c = await self.attach(s["id"])
        # {"type": <str ff fe>}
        msg = await self._raw_error(c, b"\x81\xa4type\xa2\xff\xfe")
        self.assertEqual(msg, "unknown message type '\ufffd\ufffd'")
        # {"type": "eof", <str ff 00 z>: true}
        msg = await self._raw_error(c, b"\x82\xa4type\xa3eof\xa3\xff\x00z"
                                       b"\xc3")
        self.assertEqual(msg, "unknown field '\ufffd\ufffdz'")
        # an exec stream's start too
        c2 = await self.open_stream()
        msg = await self._raw_error(c2, b"\x82\xa4type\xa5start\xa2\xc3\x28"
                                        b"\xc3")
        self.assertEqual(msg, "unknown field '\ufffd('")
        await c.stdin(b"ok\n")
        await c.wait_output(rb"ok\n")

    def test_rest_path_quoted_as_utf8(self):
        r = rl.raw_request(self.d, rl.http_head(
            "GET", "/v1/%FF%FEx", self.d.token))[0]
        self.assertEqual(r.status, 404, r)
        # on main: the message was replaced by "invalid request"
        msg = r.json()["error"]["message"]
        self.assertEqual(msg, "no such path: /v1/\ufffd\ufffdx")


class TestHeadAndQuery(StrictMixin, lt.DaemonPerClass):

    def test_duplicate_authorization(self):
        d = self.d
        for extra in (["Authorization: Bearer " + d.token],
                      ["Authorization: Bearer wrong"],
                      ["authorization: Bearer " + d.token]):
            # on main the first one won: 200
            r, closed = rl.raw_request(d, rl.http_head(
                "GET", "/v1/health", d.token, extra))
            self.assertIsNotNone(r)
            self.assertEqual(r.status, 400, r)
            j = r.json()
            self.assertEqual(j["error"]["code"], "bad_request", j)
            self.assertIn("Authorization", j["error"]["message"], j)
            self.assertTrue(closed, "connection left open after a bad head")
        # on the Unix socket too, where no token is asked for
        r, _ = rl.raw_request(d, rl.http_head(
            "GET", "/v1/health", None, ["Authorization: a",
                                        "Authorization: b"]),
            unix_path=d.sock_path)
        self.assertEqual(r.status, 400, r)
        # one is fine
        r, _ = rl.raw_request(d, rl.http_head("GET", "/v1/health", d.token))
        self.assertEqual(r.status, 200, r)

    def test_since_alike_at_front_and_worker(self):
        s = self.create({"args": ["sh", "-c", "printf abcdef; exec sleep "
                                  "1000"]})
        self.wait_log(s["id"], rb"abcdef")
        wsock = self.d.session_sock(s["id"])

        def both(query):
            path = sess_path(s["id"], "/log") + "?" + query
            return (self.d.request("GET", path),
                    self.d.unix_request("GET", path, sock_path=wsock))
        for q in ("since=%d" % (SINCE_MAX + 1), "since=%d" % 2**64,
                  "since=%d" % (2**64 + 1), "since=1&since=2", "since=",
                  "since=-1", "since=%2B1", "since=1x"):
            front, worker = both(q)
            # on main the worker answered 200 to since >= 2^63
            m1 = self.assertBad(front)
            m2 = self.assertBad(worker)
            self.assertEqual(m1, m2, q)
            self.assertIn("'since'", m1)
        for q, body in (("since=%d" % SINCE_MAX, b""), ("since=3", b"def"),
                        ("since=%33", b"def"), ("%73ince=4", b"ef"),
                        ("since=0&other=1&readOnly", b"abcdef")):
            front, worker = both(q)
            self.assertEqual(front.status, 200, (q, front))
            self.assertEqual(worker.status, 200, (q, worker))
            self.assertEqual(front.body, body, q)
            self.assertEqual(worker.body, body, q)

    async def test_attach_since_refused_at_front_and_worker(self):
        s = self.create({"args": ["sleep", "1000"]})
        q = {"since": str(SINCE_MAX + 1)}
        status, body = await lt.ws_refused(
            self.d, sess_path(s["id"], "/attach"),
            {"Authorization": "Bearer " + self.d.token}, query=q)
        self.assertEqual(status, 400, body)
        # the worker socket refuses the upgrade (a bare close, documented)
        with self.assertRaises((websockets.exceptions.InvalidHandshake,
                                websockets.exceptions.ConnectionClosed,
                                ConnectionError, EOFError)):
            c = await WSClient.connect(self.d, s["id"], query=q,
                                       unix_path=self.d.session_sock(
                                           s["id"]))
            try:
                await c.recv_type("attached")
            finally:
                await c.close()
        # a valid since is taken by both
        c = await WSClient.connect(self.d, s["id"], query={
            "since": str(SINCE_MAX)},
            unix_path=self.d.session_sock(s["id"]))
        m = await c.recv_type("attached")
        await c.close()
        self.assertEqual(m["replayFrom"], m["replayTo"], m)

    def test_health_says_protocol(self):
        j = self.d.json("GET", "/v1/health")
        # on main: no "protocol"
        self.assertEqual(j.get("protocol"), 1, j)
        self.assertIs(type(j["protocol"]), int)
        self.assertIsInstance(j.get("version"), str, j)
        self.assertEqual(j.get("status"), "ok", j)


if __name__ == "__main__":
    lt.main()

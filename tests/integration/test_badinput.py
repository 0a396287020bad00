#!/usr/bin/python3
"""Names, authentication, malformed requests, routing errors, options:
lodge-protocol(7) AUTHENTICATION, ERROR REPLIES, REST CALLS.

Run: /usr/bin/python3 tests/integration/test_badinput.py
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import shutil
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
import reliability as rl  # noqa: E402
from lodgetest import WSClient, sess_path  # noqa: E402


class TestNames(lt.DaemonPerClass):

    async def test_name_rules(self):
        ok64 = "n" * 63 + "Z"
        s = self.create({"args": ["sleep", "1000"], "name": ok64})
        self.assertEqual(s["name"], ok64)
        self.assertEqual(self.get(ok64)["id"], s["id"])
        self.assertEqual(self.get(s["id"])["name"], ok64)

        s2 = self.create({"args": ["sleep", "1000"], "name": "a.B_c-9"})
        self.assertEqual(self.get("a.B_c-9")["id"], s2["id"])

        for bad in ("n" * 65, "a/b", "", "../x", "caf\u00e9", "a b",
                    "x\u0000y", "tab\t", "\u65e5\u672c", "a%2Fb", "a?b"):
            r = self.d.request("POST", "/v1/sessions",
                               {"args": ["true"], "name": bad})
            self.assertError(r, 400, "bad_request")
        r = self.d.request("POST", "/v1/sessions",
                           {"args": ["true"], "name": 42})
        self.assertError(r, 400, "bad_request")

        r = self.d.request("POST", "/v1/sessions",
                           {"args": ["sleep", "1000"], "name": "a.B_c-9"})
        self.assertError(r, 409, "conflict")
        names = [x.get("name") for x in
                 self.d.json("GET", "/v1/sessions")["sessions"]]
        self.assertEqual(sorted(names), sorted([ok64, "a.B_c-9"]),
                         "refused creates must not leave sessions")

    async def test_name_freed_by_delete(self):
        s = self.create({"args": ["sleep", "1000"], "name": "reuse"})
        r = self.d.request("DELETE", sess_path("reuse"))
        self.assertEqual(r.status, 204, r)
        s2 = self.create({"args": ["sleep", "1000"], "name": "reuse"})
        self.assertNotEqual(s2["id"], s["id"])


class TestAuth(lt.DaemonPerClass):

    def _401(self, r):
        return self.assertError(r, 401, "unauthorized")

    async def test_missing_and_wrong_token(self):
        d = self.d
        for method, path, body in (("GET", "/v1/sessions", None),
                                   ("GET", "/v1/health", None),
                                   ("POST", "/v1/sessions",
                                    {"args": ["true"]}),
                                   ("GET", "/no/such/path", None),
                                   ("DELETE", "/v1/sessions/x", None)):
            r_none = d.request(method, path, body, token=None)
            r_wrong = d.request(method, path, body, token="wrong-token")
            for r in (r_none, r_wrong):
                self._401(r)
            self.assertEqual(r_none.body, r_wrong.body,
                             "missing and wrong token must get the same "
                             "reply")
        self.assertEqual(d.json("GET", "/v1/sessions"), {"sessions": []},
                         "an unauthorised create made a session")
        self.assertEqual(d.request("GET", "/v1/health").status, 200)

    async def test_websocket_auth(self):
        d = self.d
        s = self.create({"args": ["cat"]})
        path = sess_path(s["id"], "/attach")
        st, body = await lt.ws_refused(d, path)
        self.assertEqual(st, 401, body)
        self.assertEqual(json.loads(body)["error"]["code"], "unauthorized")
        # an unknown session without a token is 401 too (auth first)
        st, _ = await lt.ws_refused(d, sess_path("nope", "/attach"))
        self.assertEqual(st, 401)

        c = await WSClient.connect(d, s["id"], token=None,
                                   query={"access_token": d.token},
                                   label="access_token")
        try:
            await c.handshake()
            await c.stdin(b"q\n")
            await c.wait_output(rb"q\n")
        finally:
            await c.close()
        c = await WSClient.connect(d, s["id"], label="header")
        try:
            await c.handshake()
        finally:
            await c.close()

    async def test_unix_socket_needs_no_token(self):
        d = self.d
        r = d.unix_request("GET", "/v1/health")
        self.assertEqual(r.status, 200, r)
        r = d.unix_request("POST", "/v1/sessions", {"args": ["cat"],
                                                    "name": "via-unix"})
        self.assertEqual(r.status, 201, r)
        s = r.json()
        self.addCleanup(self._delete_quietly, d, s["id"])
        self.assertEqual(d.unix_request(
            "GET", sess_path("via-unix")).json()["id"], s["id"])
        c = await WSClient.connect(d, "via-unix", unix_path=d.sock_path)
        try:
            await c.handshake()
            await c.stdin(b"u\n")
            await c.wait_output(rb"u\n")
        finally:
            await c.close()
        st = os.stat(d.sock_path)
        self.assertEqual(st.st_mode & 0o002, 0,
                         "the front's socket must not be world-writable")


class TestUnixPeers(lt.DaemonPerClass):
    """Unix sockets: access is the socket's mode and owner plus the peer's
    credentials (lodge-protocol(7) AUTHENTICATION, UNIX SOCKETS).  The
    runtime dir is made 0755, as systemd's RuntimeDirectory= makes
    /run/lodge."""

    async def test_worker_sockets_per_user(self):
        os.chmod(self.d.rundir, 0o755)
        mine = self.create({"args": ["sh", "-c", "echo nobody-out; "
                                     "exec sleep 1000"],
                            "user": "nobody", "workDir": "/tmp"})
        self.wait_log(mine["id"], rb"nobody-out")
        # the session's user reaches its own session's socket (another
        # user's: test_security.py)
        res = rl.run_json_as(65534, 65534, rl.UNIX_HTTP_CLIENT,
                             [self.d.session_sock(mine["id"]), "GET",
                              sess_path(mine["id"], "/log")])
        self.assertEqual(res.get("status"), 200, res)
        self.assertIn("nobody-out", res["body"])


class TestMalformed(lt.DaemonPerClass):

    async def test_bad_session_requests(self):
        d = self.d
        bad_bodies = [
            b"{not json", b"", b"[]", b"null", b"42", b'"str"',
            b'{"args": "sh"}', b'{"args": []}', b'{"args": ["a", 1]}',
            b'{"args": ["true"], "command": "true"}',
            b'{"command": 5}',
            b'{"args": ["true"], "cols": "80"}',
            b'{"args": ["true"], "pty": "yes"}',
            b'{"args": ["true"], "env": {"A": 1}}',
            b'{"args": ["true"], "env": ["A=1"]}',
            b'{"args": ["true"], "workDir": 7}',
            b'{"args": ["true"], "bufferSize": "big"}',
            b'{"args": ["true"], "user": false}',
            b'{"args": ["true"]',
            b'{"args": ["true"]} trailing',
        ]
        for body in bad_bodies:
            r = d.request("POST", "/v1/sessions", raw_body=body,
                          headers={"Content-Type": "application/json"})
            if body == b"":
                # an empty body is not a session request either
                self.assertIn(r.status, (400, 411), (body, r))
                if r.status == 400:
                    self.assertError(r, 400, "bad_request")
                continue
            self.assertError(r, 400, "bad_request")
        self.assertEqual(d.json("GET", "/v1/sessions"), {"sessions": []},
                         "a bad request created a session")
        # NUL inside an argument can never be exec'd faithfully
        r = d.request("POST", "/v1/sessions",
                      {"args": ["echo", "a\u0000b"]})
        self.assertIn(r.status, (400, 422), r)
        self.assertEqual(d.request("GET", "/v1/health").status, 200)

    async def test_bad_session_calls(self):
        d = self.d
        s = self.create({"args": ["cat"]})
        sid = s["id"]
        cases = [
            ("/input", b"{}"),
            ("/input", b'{"data": 5}'),
            ("/input", b'{"dataBase64": "!!!not base64"}'),
            ("/input", b"{oops"),
            ("/signal", b"{}"),
            ("/signal", b'{"signal": "NOPE"}'),
            ("/signal", b'{"signal": "SIGNOPE"}'),
            ("/signal", b'{"signal": ["INT"]}'),
            ("/signal", b'{"signal": 99999}'),
            ("/resize", b'{"cols": "x", "rows": 10}'),
            ("/resize", b'{"cols": 10}'),
            ("/resize", b"[]"),
        ]
        for suffix, body in cases:
            r = d.request("POST", sess_path(sid, suffix), raw_body=body,
                          headers={"Content-Type": "application/json"})
            self.assertError(r, 400, "bad_request")
        self.assertEqual(self.get(sid)["state"], "running")
        self.input(sid, "fine\n")
        self.wait_log(sid, rb"^fine\n$")

    async def test_routing_errors(self):
        d = self.d
        s = self.create({"args": ["cat"]})
        sid = s["id"]
        # "/" is the web terminal's (test_web.py)
        for method, path in (("GET", "/nope"),
                             ("GET", "/v1"), ("GET", "/v2/sessions"),
                             ("GET", "/v1/sessions/"),
                             ("GET", "/v1/health/"),
                             ("GET", sess_path(sid, "/bogus")),
                             ("GET", sess_path(sid, "/log/x")),
                             ("GET", "/v1/sessions/nope")):
            r = d.request(method, path)
            self.assertError(r, 404, "not_found")
        for method, path in (("DELETE", "/v1/health"),
                             ("POST", "/v1/health"),
                             ("PUT", "/v1/sessions"),
                             ("DELETE", "/v1/sessions"),
                             ("GET", "/v1/exec"),
                             ("POST", sess_path(sid)),
                             ("PUT", sess_path(sid)),
                             ("POST", sess_path(sid, "/log")),
                             ("GET", sess_path(sid, "/signal")),
                             ("GET", sess_path(sid, "/input")),
                             ("DELETE", sess_path(sid, "/resize"))):
            r = d.request(method, path)
            self.assertError(r, 405, "method_not_allowed")
        self.assertEqual(self.get(sid)["state"], "running")

    async def test_keep_alive(self):
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.d.port,
                                          timeout=lt.HTTP_TIMEOUT)
        auth = {"Authorization": "Bearer " + self.d.token}
        try:
            st, h, b = lt._do_request(conn, "GET", "/v1/health",
                                      headers=auth)
            self.assertEqual(st, 200)
            self.assertIn("content-length", h)
            st, h, b = lt._do_request(conn, "POST", "/v1/sessions",
                                      {"args": ["sleep", "1000"]},
                                      headers=auth)
            self.assertEqual(st, 201, b)
            sid = json.loads(b)["id"]
            self.d.note_session(json.loads(b))
            self.addCleanup(self._delete_quietly, self.d, sid)
            st, h, b = lt._do_request(conn, "GET", "/v1/nope", headers=auth)
            self.assertEqual(st, 404)
            self.assertIn("content-length", h)
            st, h, b = lt._do_request(conn, "DELETE", sess_path(sid),
                                      headers=auth)
            self.assertEqual(st, 204)
            st, h, b = lt._do_request(conn, "GET", "/v1/sessions",
                                      headers=auth)
            self.assertEqual(st, 200)
            self.assertEqual(json.loads(b), {"sessions": []})
        finally:
            conn.close()

    async def test_payload_too_large(self):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=30)
        try:
            s.sendall(("POST /v1/sessions HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer %s\r\n"
                       "Content-Type: application/json\r\n"
                       "Content-Length: %d\r\n\r\n{\"args\":["
                       % (self.d.token, 1 << 30)).encode())
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
            head, _, body = buf.partition(b"\r\n\r\n")
            clen = None
            for line in head.split(b"\r\n")[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    clen = int(v)
            while clen is not None and len(body) < clen:
                chunk = s.recv(4096)
                if not chunk:
                    break
                body += chunk
        finally:
            s.close()
        self.assertTrue(buf.startswith(b"HTTP/1.1 413"), buf[:300])
        self.assertEqual(json.loads(body)["error"]["code"],
                         "payload_too_large", body)
        self.assertEqual(self.d.request("GET", "/v1/health").status, 200)

    async def test_garbage_and_slow_clients(self):
        d = self.d
        # a few idle or half-sent connections must not block anybody
        idle = []
        for i in range(10):
            s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
            if i % 2:
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
            idle.append(s)
        try:
            for _ in range(3):
                self.assertEqual(d.request("GET", "/v1/health",
                                           timeout=30).status, 200)
            self.assertEqual(d.unix_request("GET", "/v1/health",
                                            timeout=30).status, 200)
        finally:
            for s in idle:
                s.close()
        # garbage: a TLS hello, binary junk, a bad version, huge headers
        junk = [bytes.fromhex("160301020001000100") + os.urandom(200),
                os.urandom(3000),
                b"GET /v1/health HTTP/9.9\r\nHost: x\r\n\r\n",
                b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: "
                + b"a" * 200000 + b"\r\n\r\n",
                b"GET /v1/%00%zz HTTP/1.1\r\nHost: x\r\n\r\n",
                b"\r\n\r\n\r\n"]
        for j in junk:
            s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
            try:
                try:
                    s.sendall(j)
                    s.shutdown(socket.SHUT_WR)
                    reply = s.recv(200)
                except (ConnectionResetError, BrokenPipeError):
                    reply = b""
            finally:
                s.close()
            if reply:
                self.assertRegex(reply, rb"^HTTP/1\.[01] [45]\d\d ",
                                 (j[:40], reply))
            self.assertEqual(d.request("GET", "/v1/health").status, 200,
                             "daemon unwell after %r" % j[:40])
        self.assertIsNone(d.proc.poll(), "the front died")


class TestOptions(lt.LodgeTestMixin, unittest.IsolatedAsyncioTestCase):

    def _run_short(self, args, timeout=15):
        """Run lodged with args that should make it exit; kill it if not.
        "{rundir}" in args becomes a fresh runtime dir."""
        rundir = tempfile.mkdtemp(prefix="lodge-test-opt-")
        args = [a.replace("{rundir}", rundir) for a in args]
        env = dict(os.environ, LODGE_TEST_RUNDIR=rundir)
        env.pop("LODGE_TOKEN", None)
        p = subprocess.Popen([lt.LODGED] + args, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=env,
                             stdin=subprocess.DEVNULL)
        try:
            out, err = p.communicate(timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            rc = None
        finally:
            for pid in lt.all_pids():
                e = lt.proc_environ(pid) or {}
                if e.get("LODGE_TEST_RUNDIR") == rundir:
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
            shutil.rmtree(rundir, ignore_errors=True)
        return rc, out.decode(errors="replace"), err.decode(errors="replace")

    async def test_help_and_version(self):
        rc, out, err = self._run_short(["--help"])
        self.assertEqual(rc, 0, (out, err))
        self.assertIn("--listen", out + err)
        rc, out, err = self._run_short(["--version"])
        self.assertEqual(rc, 0, (out, err))
        d = self.start_daemon()
        version = d.json("GET", "/v1/health")["version"]
        self.assertIn(version, out + err)

    async def test_no_auth_on_loopback(self):
        d = self.start_daemon(extra_args=["--no-auth"], auth=False)
        r = d.request("GET", "/v1/sessions", token=None)
        self.assertEqual(r.status, 200, r)

    async def test_token_file(self):
        fd, path = tempfile.mkstemp(prefix="lodge-test-tok-")
        os.write(fd, b"file-token-0123456789abcdef\n")
        os.close(fd)
        os.chmod(path, 0o600)
        self.addCleanup(os.unlink, path)
        d = self.start_daemon(token_file=path)
        self.assertEqual(d.token, "file-token-0123456789abcdef")
        self.assertEqual(d.request("GET", "/v1/sessions").status, 200)
        self.assertEqual(d.request("GET", "/v1/sessions",
                                   token="wrong").status, 401)

    async def test_token_env(self):
        d = self.start_daemon(env={"LODGE_TOKEN": "env-token-abcdef0123456"})
        self.assertEqual(d.token, "env-token-abcdef0123456")
        self.assertEqual(d.request("GET", "/v1/sessions").status, 200)
        self.assertEqual(d.request("GET", "/v1/sessions",
                                   token="nope").status, 401)

    def _write_token(self, path, token, mode=0o600):
        tmp = path + ".new"
        with open(tmp, "w") as f:
            f.write(token + "\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)

    def _reload(self, d, says):
        """SIGHUP the front; wait for its log to say what it did."""
        with open(d.logpath, "rb") as f:
            seen = len(f.read())
        d.proc.send_signal(signal.SIGHUP)

        def said():
            with open(d.logpath, "rb") as f:
                return says.encode() in f.read()[seen:]
        lt.wait_for(said, what="the front to log %r" % says)

    async def test_token_reload(self):
        """SIGHUP reads the token again from --token-file: the new one
        works, the old one is refused, a client attached with the old one
        stays; a file refused on reload keeps the token in use."""
        fd, path = tempfile.mkstemp(prefix="lodge-test-tok-")
        os.close(fd)
        self.addCleanup(os.unlink, path)
        self._write_token(path, "first-token-0123456789ab")
        d = self.start_daemon(token_file=path)
        s = d.json("POST", "/v1/sessions", {"args": ["cat"]}, expect=201)
        ws = await lt.WSClient.connect(d, s["id"])
        await ws.handshake()
        self._write_token(path, "second-token-0123456789ab")
        self._reload(d, "reload: token read from")
        self.assertEqual(d.request("GET", "/v1/sessions",
                                   token="second-token-0123456789ab").status,
                         200)
        self.assertEqual(d.request("GET", "/v1/sessions",
                                   token="first-token-0123456789ab").status,
                         401)
        await ws.stdin(b"still here\n")
        await ws.wait_output(b"still here\n")
        await ws.close()
        # a file others may read is refused: the token in use stays
        self._write_token(path, "third-token-0123456789abc", mode=0o644)
        self._reload(d, "reload: the token in use is kept")
        self.assertEqual(d.request("GET", "/v1/sessions",
                                   token="second-token-0123456789ab").status,
                         200)
        self.assertEqual(d.request("GET", "/v1/sessions",
                                   token="third-token-0123456789abc").status,
                         401)
        self.assertIsNone(d.proc.poll())

    async def test_token_reload_from_rundir(self):
        """Without --token-file, SIGHUP reads RUNDIR/token again; a token
        from LODGE_TOKEN is kept as it is."""
        d = self.start_daemon()
        path = os.path.join(d.rundir, "token")
        self._write_token(path, "rotated-token-0123456789")
        self._reload(d, "reload: token read from")
        self.assertEqual(d.request("GET", "/v1/sessions",
                                   token="rotated-token-0123456789").status,
                         200)
        e = self.start_daemon(env={"LODGE_TOKEN": "env-token-abcdef0123456"})
        self._reload(e, "came from LODGE_TOKEN; kept")
        self.assertEqual(e.request("GET", "/v1/sessions",
                                   token="env-token-abcdef0123456").status,
                         200)


if __name__ == "__main__":
    lt.main()

"""What a client without the token, or a web page, can make the front do.

The token is checked as soon as the request head is complete: no body is
read for a request that is refused, the refusal closes the connection, and
nothing a peer without the token sends is kept.  Where no token is asked
(--no-auth on TCP), the Host, Origin and Content-Type fields keep web pages
out: a page can make a browser send requests to a loopback port, but not
choose those.
"""

import json
import os
import socket
import subprocess
import tempfile
import time
import unittest

import lodgetest as lt


def rss_kib(pid, field="VmRSS"):
    return int(lt.proc_status(pid)[field].split()[0])


def raw_exchange(port, data, timeout=10.0, unix_path=None):
    """Send data, read until the server closes; (bytes, closed)."""
    if unix_path:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(unix_path)
    else:
        s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                return out, False
            except ConnectionResetError:
                return out, True
            if not b:
                return out, True
            out += b
    finally:
        s.close()


def status_of(reply):
    if not reply.startswith(b"HTTP/1.1 "):
        return None
    return int(reply[9:12])


def body_of(reply):
    return json.loads(reply.partition(b"\r\n\r\n")[2].decode())


def head(method, path, fields=()):
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: localhost"]
    lines += list(fields)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class TestUnauthenticated(lt.DaemonPerTest):

    def test_uploads_without_token_cost_no_memory(self):
        """50 peers without the token, each announcing 8 MB and sending
        4 MB: the front keeps none of it."""
        pid = self.d.proc.pid
        before = rss_kib(pid)
        hwm_before = rss_kib(pid, "VmHWM")
        socks = []
        chunk = b"x" * (4 * 1024 * 1024)
        try:
            for i in range(50):
                s = socket.create_connection(("127.0.0.1", self.d.port))
                s.settimeout(10)
                socks.append(s)
                s.sendall(head("POST", "/v1/exec", [
                    "Content-Type: application/json",
                    "Content-Length: %d" % (8 * 1024 * 1024)]))
                try:
                    s.sendall(chunk)
                except OSError:
                    pass        # refused and closed: what we want
            time.sleep(0.5)
            after = rss_kib(pid)
            hwm = rss_kib(pid, "VmHWM")
        finally:
            for s in socks:
                s.close()
        print("\n[preauth] front RSS %d KiB -> %d KiB, peak %d KiB -> "
              "%d KiB with 50 x 4 MB unauthenticated" % (
                  before, after, hwm_before, hwm))
        if lt.SANITIZED:
            return
        self.assertLess(hwm - max(hwm_before, before), 8 * 1024,
                        "the front kept unauthenticated bodies: peak %d "
                        "KiB, was %d KiB" % (hwm, hwm_before))
        self.assertLess(after - before, 8 * 1024)
        # and it still answers
        self.assertEqual(self.d.request("GET", "/v1/health").status, 200)

    def test_401_closes_the_connection(self):
        reply, closed = raw_exchange(self.d.port,
                                     head("GET", "/v1/health"))
        self.assertEqual(status_of(reply), 401, reply)
        self.assertEqual(body_of(reply)["error"]["code"], "unauthorized")
        self.assertIn(b"Connection: close", reply)
        self.assertTrue(closed, "a 401 left the connection open")

    def test_401_before_the_body(self):
        """The refusal comes as soon as the head is in, without waiting for
        the body announced (which is never sent)."""
        reply, closed = raw_exchange(self.d.port, head("POST", "/v1/exec", [
            "Content-Type: application/json",
            "Content-Length: 1000000"]))
        self.assertEqual(status_of(reply), 401, reply)
        self.assertTrue(closed)

    def test_401_reaches_a_client_that_sent_its_body(self):
        """A small request sent whole (curl's way) gets its 401, not a
        reset, although the body was never read."""
        body = json.dumps({"command": "echo hi"}).encode()
        for _ in range(20):
            reply, closed = raw_exchange(self.d.port, head(
                "POST", "/v1/exec", ["Content-Type: application/json",
                                     "Content-Length: %d" % len(body)])
                + body)
            self.assertEqual(status_of(reply), 401, reply)
            self.assertTrue(closed)

    def test_refused_with_token_before_the_body(self):
        """With the token, a refusal that needs no body (unknown path, bad
        method, body too large) does not wait for it, and closes."""
        auth = "Authorization: Bearer " + self.d.token
        for method, path, want in (("POST", "/v1/nothing", 404),
                                   ("PUT", "/v1/exec", 405),
                                   ("POST", "/v1/exec/stream", 405)):
            reply, closed = raw_exchange(self.d.port, head(method, path, [
                auth, "Content-Type: application/json",
                "Content-Length: 1000000"]))
            self.assertEqual(status_of(reply), want, (method, path, reply))
            self.assertTrue(closed, (method, path))
        reply, closed = raw_exchange(self.d.port, head("POST", "/v1/exec", [
            auth, "Content-Type: application/json",
            "Content-Length: %d" % (64 * 1024 * 1024)]))
        self.assertEqual(status_of(reply), 413, reply)
        self.assertTrue(closed)
        # a refusal without a body keeps the connection
        s = socket.create_connection(("127.0.0.1", self.d.port))
        s.settimeout(10)
        try:
            s.sendall(head("GET", "/v1/nothing", [auth]) +
                      head("GET", "/v1/health", [auth]))
            got = b""
            while got.count(b"HTTP/1.1 ") < 2 or not got.endswith(b"}"):
                b = s.recv(65536)
                self.assertTrue(b, "closed after a 404 without a body: %r"
                                % got)
                got += b
            self.assertIn(b"HTTP/1.1 404", got)
            self.assertIn(b"HTTP/1.1 200", got)
        finally:
            s.close()

    def test_form_post_with_token_works(self):
        """curl -d sends a form content type; with the token it runs."""
        r = subprocess.run(
            ["curl", "-sS", "-H", "Authorization: Bearer " + self.d.token,
             "-d", '{"command":"echo hi"}',
             "http://127.0.0.1:%d/v1/exec" % self.d.port],
            capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["stdout"], "hi\n", r.stdout)
        # and without the token, curl gets its 401
        r = subprocess.run(
            ["curl", "-sS", "-d", '{"command":"echo hi"}',
             "http://127.0.0.1:%d/v1/exec" % self.d.port],
            capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["error"]["code"],
                         "unauthorized")


class TestNoAuthBrowser(lt.DaemonPerClass):
    """--no-auth on loopback: what a web page could send is refused."""

    daemon_args = ["--no-auth", "--allow-host", "lodge.test"]

    def exec_marker(self, headers, raw=None):
        fd, marker = tempfile.mkstemp(prefix="lodge-preauth-")
        os.close(fd)
        os.unlink(marker)
        body = json.dumps({"command": "touch " + marker}).encode()
        r = self.d.request("POST", "/v1/exec", raw_body=body if raw is None
                           else raw, token=None, headers=headers)
        ran = os.path.exists(marker)
        if ran:
            os.unlink(marker)
        return r, ran

    def test_host_names_this_server(self):
        port = self.d.port
        for host in ("evil.example", "evil.example:%d" % port,
                     "127.0.0.1.evil.example:%d" % port, "[::2]:%d" % port,
                     "lodge.test.evil:%d" % port):
            r, ran = self.exec_marker({"Host": host,
                                       "Content-Type": "application/json"})
            self.assertEqual(r.status, 403, (host, r))
            self.assertIn("Host", r.json()["error"]["message"])
            self.assertFalse(ran, host)
            r = self.d.request("GET", "/v1/sessions", token=None,
                               headers={"Host": host})
            self.assertEqual(r.status, 403, (host, r))
        for host in ("localhost:%d" % port, "127.0.0.1:%d" % port,
                     "LOCALHOST", "127.1.2.3:%d" % port, "[::1]:%d" % port,
                     "lodge.test:%d" % port, "Lodge.Test"):
            r, ran = self.exec_marker({"Host": host,
                                       "Content-Type": "application/json"})
            self.assertEqual(r.status, 200, (host, r))
            self.assertTrue(ran, host)

    async def test_origin_refused_on_every_request(self):
        origin = {"Origin": "https://evil.example"}
        r, ran = self.exec_marker(dict(origin,
                                       **{"Content-Type": "application/json"}))
        self.assertEqual(r.status, 403, r)
        self.assertFalse(ran)
        for path in ("/v1/sessions", "/v1/health"):
            r = self.d.request("GET", path, token=None, headers=origin)
            self.assertEqual(r.status, 403, (path, r))
            self.assertEqual(r.json()["error"]["code"], "forbidden")
        st, body = await lt.ws_refused(self.d, "/v1/exec/stream",
                                       headers=origin)
        self.assertEqual(st, 403, body)
        # programs send no Origin
        r = self.d.request("GET", "/v1/health", token=None)
        self.assertEqual(r.status, 200, r)

    def test_simple_bodies_refused(self):
        for ctype in ("text/plain", "text/plain;charset=UTF-8",
                      "application/x-www-form-urlencoded",
                      "multipart/form-data; boundary=x", None,
                      "application/jsonp", "application/json-seq"):
            h = {} if ctype is None else {"Content-Type": ctype}
            r, ran = self.exec_marker(h)
            self.assertEqual(r.status, 415, (ctype, r))
            self.assertIn("application/json", r.json()["error"]["message"])
            self.assertFalse(ran, ctype)
        for ctype in ("application/json", "application/json; charset=utf-8",
                      "Application/JSON"):
            r, ran = self.exec_marker({"Content-Type": ctype})
            self.assertEqual(r.status, 200, (ctype, r))
            self.assertTrue(ran, ctype)
        # a POST with no body at all is a simple request too
        r = self.d.request("POST", "/v1/sessions", raw_body=b"", token=None)
        self.assertEqual(r.status, 415, r)

    def test_unix_socket_not_host_checked(self):
        r = self.d.unix_request("GET", "/v1/health",
                                headers={"Host": "evil.example"})
        self.assertEqual(r.status, 200, r)
        r = self.d.unix_request("POST", "/v1/exec",
                                raw_body=b'{"command":"true"}',
                                headers={"Host": "evil.example",
                                         "Content-Type": "text/plain"})
        self.assertEqual(r.status, 200, r)


class TestOriginWithToken(lt.DaemonPerClass):
    daemon_args = ["--allow-origin", "https://console.example.com"]

    def test_rest_calls_checked_too(self):
        for path in ("/v1/sessions", "/v1/health"):
            r = self.d.request("GET", path,
                               headers={"Origin": "https://evil.example"})
            self.assertEqual(r.status, 403, (path, r))
            r = self.d.request("GET", path, headers={
                "Origin": "https://console.example.com"})
            self.assertEqual(r.status, 200, (path, r))
        # a Host is not checked where the token is asked
        r = self.d.request("GET", "/v1/health", headers={"Host": "any.name"})
        self.assertEqual(r.status, 200, r)


if __name__ == "__main__":
    unittest.main()

"""The browser terminal's files (--web-root, --no-web) and the Origin rule.

lodged serves the page's static files under /ui/ on its TCP listeners:
GET and HEAD only, regular files below the root only (no listing, no dot
segments, no symbolic link out of the root), with a Content-Security-Policy
that allows no inline script, and validators for a cheap reload.  The files
need no token; every API call still does.  A browser request whose Origin
is not the server's own is refused unless --allow-origin lists it.
"""

import os
import shutil
import socket
import tempfile
import unittest

import lodgetest as lt


def make_root():
    """A web root with a page, a script, a style, an image, a directory, a
    symbolic link inside and two pointing out, a FIFO; and a secret beside
    it that must never be served."""
    top = tempfile.mkdtemp(prefix="lodge-test-web-")
    root = os.path.join(top, "root")
    os.makedirs(os.path.join(root, "assets"))
    files = {
        "index.html": b"<!DOCTYPE html><title>lodge</title>page\n",
        "assets/app.js": b"console.log('app');\n",
        "assets/app.css": b"body { margin: 0 }\n",
        "shot.png": b"\x89PNG\r\n\x1a\n" + b"\0" * 8,
        "data.bin": b"\0\1\2",
    }
    for name, data in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(data)
    with open(os.path.join(top, "secret"), "wb") as f:
        f.write(b"SECRET-OUTSIDE-ROOT\n")
    os.symlink("app.js", os.path.join(root, "assets", "same.js"))
    os.symlink("../secret", os.path.join(root, "out"))
    os.symlink(top, os.path.join(root, "updir"))
    os.symlink("/etc/passwd", os.path.join(root, "passwd"))
    os.mkfifo(os.path.join(root, "fifo"))
    return top, root, files


def raw(port, data, timeout=10.0):
    """Send data, read until the server closes or goes quiet."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    out = b""
    try:
        s.sendall(data)
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            out += b
    finally:
        s.close()
    return out


def parse(reply):
    """(status, {lower name: value}, body) of one raw reply."""
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        fields[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), fields, body


TOP, ROOT, FILES = make_root()


class TestWebFiles(lt.DaemonPerClass):
    daemon_args = ["--web-root", ROOT]

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(TOP, ignore_errors=True)

    def get(self, path, method="GET", headers=None):
        return self.d.request(method, path, token=None, headers=headers)

    def test_files_need_no_token_and_have_their_type(self):
        types = {
            "/ui/": ("index.html", "text/html; charset=utf-8"),
            "/ui/index.html": ("index.html", "text/html; charset=utf-8"),
            "/ui/assets/app.js": ("assets/app.js",
                                  "text/javascript; charset=utf-8"),
            "/ui/assets/app.css": ("assets/app.css",
                                   "text/css; charset=utf-8"),
            "/ui/shot.png": ("shot.png", "image/png"),
            "/ui/data.bin": ("data.bin", "application/octet-stream"),
            # a link that stays inside the root is followed
            "/ui/assets/same.js": ("assets/app.js",
                                   "text/javascript; charset=utf-8"),
        }
        for path, (name, ctype) in types.items():
            r = self.get(path)
            self.assertEqual(r.status, 200, (path, r))
            self.assertEqual(r.body, FILES[name], path)
            self.assertEqual(r.headers.get("content-type"), ctype, path)
        # the API still asks for the token
        r = self.get("/v1/sessions")
        self.assertEqual(r.status, 401, r)

    def test_security_fields_on_every_reply(self):
        for path in ("/ui/", "/ui/assets/app.js", "/ui/nothing", "/"):
            r = self.get(path)
            csp = r.headers.get("content-security-policy") or ""
            self.assertIn("default-src 'none'", csp, path)
            self.assertIn("script-src 'self';", csp, path)
            self.assertNotIn("unsafe-eval", csp, path)
            script = [d for d in csp.split(";")
                      if d.strip().startswith("script-src")]
            self.assertEqual(script, [" script-src 'self'"], path)
            self.assertIn("frame-ancestors 'none'", csp, path)
            self.assertIn("connect-src 'self'", csp, path)
            self.assertEqual(r.headers.get("x-content-type-options"),
                             "nosniff", path)
            self.assertEqual(r.headers.get("referrer-policy"),
                             "no-referrer", path)

    def test_root_sends_the_browser_to_the_page(self):
        for path in ("/", "/ui"):
            r = self.get(path)
            self.assertEqual(r.status, 302, (path, r))
            self.assertEqual(r.headers.get("location"), "/ui/", path)

    def test_validators_and_not_modified(self):
        r = self.get("/ui/assets/app.js")
        etag = r.headers.get("etag")
        self.assertTrue(etag and etag.startswith('"'), r.headers)
        self.assertTrue(r.headers.get("last-modified", "").endswith("GMT"))
        r2 = self.get("/ui/assets/app.js", headers={"If-None-Match": etag})
        self.assertEqual(r2.status, 304, r2)
        self.assertEqual(r2.body, b"")
        self.assertEqual(r2.headers.get("etag"), etag)
        r3 = self.get("/ui/assets/app.js",
                      headers={"If-None-Match": '"other"'})
        self.assertEqual(r3.status, 200, r3)
        self.assertEqual(r3.body, FILES["assets/app.js"])

    def test_head_sends_no_body_and_keeps_the_connection(self):
        port = self.d.port
        out = raw(port, b"HEAD /ui/index.html HTTP/1.1\r\nHost: x\r\n\r\n"
                  b"GET /ui/assets/app.js HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
        first, _, rest = out.partition(b"\r\n\r\n")
        st, f, _ = parse(first + b"\r\n\r\n")
        self.assertEqual(st, 200, out)
        self.assertEqual(int(f["content-length"]), len(FILES["index.html"]))
        self.assertIn("script-src 'self'", f["content-security-policy"])
        # the next bytes are the second reply, not a body
        self.assertTrue(rest.startswith(b"HTTP/1.1 200 "), out)
        st2, _, body2 = parse(rest)
        self.assertEqual(body2, FILES["assets/app.js"])

    def test_only_get_and_head(self):
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            r = self.d.request(method, "/ui/index.html", token=None,
                               raw_body=b"")
            self.assertEqual(r.status, 405, (method, r))
            self.assertEqual(r.json()["error"]["code"], "method_not_allowed")

    def test_nothing_outside_the_root(self):
        port = self.d.port
        for target in (b"/ui/../secret", b"/ui/assets/../../secret",
                       b"/ui/%2e%2e/secret", b"/ui/%2E%2E/secret",
                       b"/ui/assets/%2e%2e%2f%2e%2e%2fsecret",
                       b"/ui/./index.html", b"/ui/%00", b"/ui/index.html%00",
                       b"/ui//etc/passwd"):
            out = raw(port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n"
                      b"Connection: close\r\n\r\n")
            st, _, body = parse(out)
            self.assertIn(st, (400, 404), (target, out))
            self.assertNotIn(b"SECRET", body, target)
            self.assertNotIn(b"root:", body, target)
        # links out of the root, a directory, a FIFO, nothing at all
        for path in ("/ui/out", "/ui/updir/secret", "/ui/passwd",
                     "/ui/assets/", "/ui/assets", "/ui/fifo", "/ui/nothing",
                     "/ui/index.html/x"):
            r = self.get(path)
            self.assertEqual(r.status, 404, (path, r))
            self.assertNotIn(b"SECRET", r.body, path)
            self.assertNotIn(b"app.js", r.body, path)    # no listing
            self.assertNotIn(b"root:", r.body, path)
        # and the front still serves
        self.assertEqual(self.get("/ui/").status, 200)

    def test_api_paths_stay_the_api(self):
        r = self.d.request("GET", "/v1/nothing")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["error"]["code"], "not_found")
        r = self.d.request("GET", "/v1/health")
        self.assertEqual(r.status, 200, r)

    def test_unix_socket_has_no_page(self):
        r = self.d.unix_request("GET", "/ui/")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["error"]["code"], "not_found")


class TestWebRootMissing(lt.DaemonPerClass):
    daemon_args = ["--web-root", "/nonexistent/lodge-web"]

    def test_a_clear_404_page_and_the_api_works(self):
        r = self.d.request("GET", "/ui/", token=None)
        self.assertEqual(r.status, 404, r)
        self.assertTrue(r.headers.get("content-type").startswith(
            "text/html"), r.headers)
        self.assertIn(b"--web-root", r.body)
        self.assertEqual(self.d.request("GET", "/v1/health").status, 200)


class TestNoWeb(lt.DaemonPerClass):
    daemon_args = ["--web-root", ROOT, "--no-web"]

    def test_no_page(self):
        r = self.d.request("GET", "/ui/index.html", token=None)
        self.assertEqual(r.status, 401, r)
        r = self.d.request("GET", "/ui/index.html")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.json()["error"]["code"], "not_found")
        self.assertNotIn(b"page", r.body)


class TestOrigin(lt.DaemonPerClass):
    """Without --allow-origin only the server's own origin passes."""

    async def test_own_origin_only(self):
        d = self.d
        own = "http://127.0.0.1:%d" % d.port
        s = self.create({"args": ["cat"]})
        attach = lt.sess_path(s["id"], "/attach")
        r = d.request("GET", "/v1/sessions", headers={"Origin": own})
        self.assertEqual(r.status, 200, r)
        r = d.request("GET", "/v1/sessions",
                      headers={"Origin": own.upper().replace("HTTP", "http")})
        self.assertEqual(r.status, 200, r)
        for origin in ("http://evil.example", "https://127.0.0.1:%d" % d.port,
                       "http://127.0.0.1:%d" % (d.port + 1),
                       "http://localhost:%d" % d.port, "null", ""):
            r = d.request("GET", "/v1/sessions", headers={"Origin": origin})
            self.assertEqual(r.status, 403, (origin, r))
            self.assertEqual(r.json()["error"]["code"], "forbidden")
            st, body = await lt.ws_refused(
                d, attach, query={"access_token": d.token},
                headers={"Origin": origin})
            self.assertEqual(st, 403, (origin, body))
        # the own origin is the Host the request names
        r = d.request("GET", "/v1/sessions", headers={
            "Origin": own, "Host": "other.example:%d" % d.port})
        self.assertEqual(r.status, 403, r)
        r = d.request("GET", "/v1/sessions", headers={
            "Origin": "http://other.example:%d" % d.port,
            "Host": "other.example:%d" % d.port})
        self.assertEqual(r.status, 200, r)
        # a page's WebSocket: the own origin and access_token
        c = await lt.WSClient.open(d, attach, {"access_token": d.token},
                                   {"Origin": own}, "own-origin")
        try:
            await c.handshake()
            await c.stdin(b"own-origin\n")
            await c.wait_output(rb"own-origin\n")
        finally:
            await c.close()
        # programs send no Origin at all
        self.assertEqual(d.request("GET", "/v1/sessions").status, 200)


if __name__ == "__main__":
    lt.main()

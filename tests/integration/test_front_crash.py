#!/usr/bin/python3
"""The front may die at any moment: lodge-protocol(7) UNIX SOCKETS,
lodged(8) Processes and Restarts.

Run: /usr/bin/python3 tests/integration/test_front_crash.py
"""

import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
from lodgetest import WSClient, sess_path, wait_for  # noqa: E402


def raw_unix_http(path, request_path):
    """A hand-written HTTP/1.1 GET over AF_UNIX; returns (status, headers,
    body)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(lt.HTTP_TIMEOUT)
    s.connect(path)
    try:
        s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n"
                   "Connection: close\r\n\r\n" % request_path).encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError("connection closed in the head: %r"
                                     % buf)
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if "content-length" in headers:
            n = int(headers["content-length"])
            while len(body) < n:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
            body = body[:n]
        else:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        return status, headers, body
    finally:
        s.close()


class TestFrontCrash(lt.DaemonPerTest):

    async def test_kill9_with_attached_client(self):
        d = self.d
        s = self.bash_session(name="survivor")
        sid, pid = s["id"], s["pid"]
        worker = lt.proc_stat(pid)["ppid"]
        e = self.create({"args": ["sh", "-c", "read x; echo bye; exit 7"],
                         "name": "exits-while-down"})

        a = await WSClient.connect(d, sid, label="A(tcp)")
        u = u2 = n = None
        try:
            await a.handshake()
            await a.stdin(b"echo before-$((1+1))\n")
            await a.wait_output(rb"before-2\r?\n")

            d.kill9()

            self.assertTrue(lt.proc_exists(worker), "the worker died with "
                            "the front")
            self.assertTrue(lt.proc_exists(pid), "the child died with the "
                            "front")
            with self.assertRaises(OSError):
                d.request("GET", "/v1/health", timeout=5)

            # the attached client keeps working, offsets stay contiguous
            await a.stdin(b"echo after-$((10+1))\n")
            await a.wait_output(rb"after-11\r?\n")

            # attach through the worker's own socket, no token
            ssock = d.session_sock(sid)
            self.assertTrue(os.path.exists(ssock), ssock)
            u = await WSClient.connect(d, sid, unix_path=ssock,
                                       label="U(worker sock)")
            att, gap, replay = await u.handshake()
            self.assertIsNone(gap)
            self.assertEqual(att["session"]["id"], sid)
            self.assertIn(b"after-11", replay)
            await u.stdin(b"echo viaunix-$((4*4))\n")
            await u.wait_output(rb"viaunix-16\r?\n")
            await a.wait_output(rb"viaunix-16\r?\n")

            # log over the worker socket, by id and by name
            for ref in (sid, "survivor"):
                st, hdrs, body = raw_unix_http(ssock,
                                               sess_path(ref, "/log"))
                self.assertEqual(st, 200, (ref, hdrs, body[:300]))
                self.assertIn(b"viaunix-16", body)
                self.assertEqual(int(hdrs["lodge-log-end"])
                                 - int(hdrs["lodge-log-start"]), len(body))
            # the worker serves its own session only
            st, _, body = raw_unix_http(ssock,
                                        sess_path("exits-while-down", "/log"))
            self.assertEqual(st, 404, body)
            self.assertEqual(json.loads(body)["error"],
                             {"code": "not_found",
                              "message": "no such session on this socket"})

            # a session that exits while the front is down
            u2 = await WSClient.connect(d, e["id"],
                                        unix_path=d.session_sock(e["id"]),
                                        label="U2")
            await u2.handshake()
            await u2.stdin(b"x\n")
            ex = await u2.recv_type("exit")
            self.assertEqual(ex.get("exitCode"), 7, ex)
            code, _ = await u2.expect_close()
            self.assertEqual(code, 1000)
            self.assertEqual(u2.output, b"bye\n")

            # restart the front: it finds the workers again
            d.restart()
            lst = d.json("GET", "/v1/sessions")["sessions"]
            byid = {x["id"]: x for x in lst}
            self.assertIn(sid, byid, lst)
            self.assertEqual(byid[sid]["name"], "survivor")
            self.assertEqual(byid[sid]["pid"], pid)
            self.assertEqual(byid[sid]["state"], "running")
            self.assertTrue(byid[sid]["pty"])
            self.assertIn(e["id"], byid, lst)
            self.assertEqual(byid[e["id"]]["name"], "exits-while-down")
            g = self.get("exits-while-down")
            self.assertEqual(g["state"], "exited", g)
            self.assertEqual(g["exitCode"], 7, g)
            self.assertEqual(g["pid"], e["pid"])
            self.assertEqual(d.json("GET", "/v1/health")["sessions"], 2)

            g = self.get("survivor")
            self.assertGreaterEqual(g["outputBytes"], a.end_offset)
            self.assertEqual(g["clients"], 2, "A and U are still attached")

            # REST input through the new front reaches both clients
            self.input("survivor", "echo restarted-$((20+2))\n")
            await a.wait_output(rb"restarted-22\r?\n")
            await u.wait_output(rb"restarted-22\r?\n")

            # a new attach through the new front
            n = await WSClient.connect(d, sid, label="N(tcp, new front)")
            att, gap, replay = await n.handshake()
            self.assertIn(b"restarted-22", replay)
            await n.stdin(b"echo newfront-$((5*5))\n")
            for c in (a, u, n):
                await c.wait_output(rb"newfront-25\r?\n")
            m = min(a.end_offset, n.end_offset)
            self.assertEqual(a.slice(0, m), n.slice(0, m),
                             "A (attached across the crash) and N disagree")
            for c in (a, u, n):
                self.assertEqual([m for m in c.messages
                                  if m["type"] in ("error", "gap", "exit")],
                                 [], c.label)
        finally:
            for c in (a, u, u2, n):
                if c is not None:
                    await c.close()

        # the restarted front can still delete the old session
        r = d.request("DELETE", sess_path("survivor"))
        self.assertEqual(r.status, 204, r)
        self.assertGone(pid)
        wait_for(lambda: not lt.proc_exists(worker), 10,
                 what="worker to exit after delete")

    async def test_restart_without_clients(self):
        d = self.d
        s1 = self.create({"args": ["cat"], "name": "one"})
        s2 = self.create({"args": ["sleep", "1000"], "pty": True})
        self.input("one", "hello\n")
        self.wait_log("one", rb"hello\n")
        old_front = d.proc.pid
        d.kill9()
        self.assertFalse(lt.proc_exists(old_front))
        d.restart()
        # the front's Unix socket works again (stale socket file replaced)
        r = d.unix_request("GET", "/v1/sessions")
        self.assertEqual(r.status, 200, r)
        ids = {x["id"]: x for x in r.json()["sessions"]}
        self.assertEqual(set(ids), {s1["id"], s2["id"]})
        self.assertEqual(ids[s2["id"]]["pid"], s2["pid"])
        self.assertEqual(ids[s1["id"]]["outputBytes"], 6)
        self.assertEqual(self.log("one").body, b"hello\n")
        # a worker that answers its hello at once is not reported silent
        wait_for(lambda: all(x["responsive"] for x in
                             d.json("GET", "/v1/sessions")["sessions"]),
                 20, what="both workers to answer the new front")
        with open(d.logpath, "rb") as f:
            since_start = f.read().rsplit(b"==== start #", 1)[1]
        self.assertNotIn(b"not responding", since_start)
        self.input("one", "again\n")
        self.wait_log("one", rb"hello\nagain\n")
        # names stay unique across the restart
        r = d.request("POST", "/v1/sessions", {"args": ["true"],
                                               "name": "one"})
        self.assertError(r, 409, "conflict")
        s3 = self.create({"args": ["sleep", "1000"], "name": "three"})
        self.assertNotIn(s3["id"], (s1["id"], s2["id"]))
        # kill the new front too and restart again: still all there
        d.kill9()
        d.restart()
        names = sorted(str(x.get("name")) for x in
                       d.json("GET", "/v1/sessions")["sessions"])
        self.assertIn("one", names)
        self.assertIn("three", names)
        self.assertEqual(len(names), 3)

    async def test_sigterm_front_keeps_sessions(self):
        """A clean stop of the front (systemd restart, KillMode=process)
        leaves sessions and attached clients running."""
        d = self.d
        s = self.create({"args": ["cat"], "name": "kept"})
        c = await WSClient.connect(d, s["id"])
        try:
            await c.handshake()
            await c.stdin(b"a\n")
            await c.wait_output(rb"a\n")
            d.proc.terminate()
            d.proc.wait(timeout=30)
            self.assertTrue(lt.proc_exists(s["pid"]),
                            "SIGTERM of the front killed the session")
            await c.stdin(b"b\n")
            await c.wait_output(rb"a\nb\n")
            d.restart()
            g = self.get("kept")
            self.assertEqual((g["id"], g["pid"], g["state"]),
                             (s["id"], s["pid"], "running"))
            self.assertEqual(g["outputBytes"], 4)
            self.input("kept", "c\n")
            await c.wait_output(rb"a\nb\nc\n")
        finally:
            await c.close()

    async def test_unix_socket_attach_through_front(self):
        """The CLI path: attach over RUNDIR/lodged.sock, no token, then the
        front dies and the connection lives on."""
        d = self.d
        s = self.create({"args": ["cat"]})
        c = await WSClient.connect(d, s["id"], unix_path=d.sock_path,
                                   label="cli")
        try:
            await c.handshake()
            await c.stdin(b"one\n")
            await c.wait_output(rb"one\n")
            d.kill9()
            await c.stdin(b"two\n")
            await c.wait_output(rb"one\ntwo\n")
            self.assertEqual(c.output, b"one\ntwo\n")
        finally:
            await c.close()
        d.restart()
        self.assertEqual(self.log(s["id"]).body, b"one\ntwo\n")


if __name__ == "__main__":
    lt.main()

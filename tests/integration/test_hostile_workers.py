#!/usr/bin/python3
"""A session's code can stop or slow its own worker (same user): nothing the
worker does, or fails to do, may hang the front or take it down.

lodged.8 "Restarts" and "Unresponsive workers"; lodge-protocol.7 DELETE,
GET .../wait, the session object's "responsive".

Run: /usr/bin/python3 tests/integration/test_hostile_workers.py
"""

import errno
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
from lodgetest import sess_path, wait_for  # noqa: E402

# A front that answers a call on a stopped worker at all answers it within
# its deadline (5 s, with the grace time for DELETE); these bounds are
# generous so that a loaded machine does not fail them, and far below
# "never", which is what a hang gives.
BOUND = 25


def worker_of(s):
    return lt.proc_stat(s["pid"])["ppid"]


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def fill_backlog(path, limit=400):
    """Connect to a (stopped) listener until its backlog is full."""
    out = []
    for _ in range(limit):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(path)
        except BlockingIOError:
            c.close()
            break
        except OSError as e:
            c.close()
            if e.errno == errno.EAGAIN:
                break
            raise
        out.append(c)
    return out


ATTACH = ("GET %s HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
          "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")


class TestHostileWorkers(lt.DaemonPerTest):

    def stopped_session(self, **extra):
        body = {"args": ["sleep", "1000"]}
        body.update(extra)
        s = self.create(body)
        w = worker_of(s)
        os.kill(w, signal.SIGSTOP)
        self.addCleanup(self._cont, w)
        wait_for(lambda: lt.proc_stat(w)["state"] == "T",
                 what="the worker to stop")
        return s, w

    @staticmethod
    def _cont(pid):
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass

    def timed(self, method, path, body=None, **kw):
        t0 = time.monotonic()
        r = self.d.request(method, path, body, timeout=BOUND + 20, **kw)
        return r, time.monotonic() - t0

    def assertGoneAll(self, s, w):
        self.assertGone(s["pid"])
        wait_for(lambda: not lt.proc_exists(w), what="the worker to exit")
        self.assertFalse(os.path.exists(self.d.session_sock(s["id"])))

    def test_stopped_worker_with_full_backlog_survives_restart(self):
        """Rediscovery never waits on a worker: the new front serves at
        once, lists the session marked, and DELETE ends it."""
        d = self.d
        s, w = self.stopped_session(name="frozen")
        conns = fill_backlog(d.session_sock(s["id"]))
        self.addCleanup(lambda: [c.close() for c in conns])
        self.assertGreater(len(conns), 100, "backlog not filled")
        d.kill9()
        d.restart()         # fails (not ready in 10 s) if discovery blocks
        h = d.json("GET", "/v1/health", timeout=BOUND)
        self.assertEqual(h["sessions"], 1, h)
        lst = d.json("GET", "/v1/sessions", timeout=BOUND)["sessions"]
        self.assertEqual([x["id"] for x in lst], [s["id"]], lst)
        self.assertEqual(lst[0]["name"], "frozen")
        self.assertEqual(lst[0]["state"], "running")
        self.assertIs(lst[0]["responsive"], False, lst[0])
        r, took = self.timed("GET", sess_path("frozen"))
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json()["responsive"], False)
        self.assertLess(took, BOUND)
        # the name stays taken
        r = d.request("POST", "/v1/sessions",
                      {"args": ["true"], "name": "frozen"})
        self.assertError(r, 409, "conflict")
        r, took = self.timed("DELETE", sess_path("frozen"))
        self.assertEqual(r.status, 204, r)
        self.assertLess(took, BOUND)
        self.assertGoneAll(s, w)
        self.assertEqual(d.json("GET", "/v1/sessions")["sessions"], [])
        self.assertEqual(os.listdir(os.path.join(d.rundir, "registry")), [])

    def test_slow_worker_at_restart_is_kept(self):
        """A worker stopped (no backlog games) while the front restarts is
        kept, and answers again once it runs."""
        d = self.d
        s, w = self.stopped_session(name="slow")
        d.kill9()
        d.restart()
        lst = d.json("GET", "/v1/sessions", timeout=BOUND)["sessions"]
        self.assertEqual([x["id"] for x in lst], [s["id"]], lst)
        os.kill(w, signal.SIGCONT)

        def fresh():
            g = self.get("slow")
            return g["responsive"] is True and g
        g = wait_for(fresh, BOUND, what="the worker to answer again")
        self.assertEqual(g["state"], "running")
        self.assertEqual(d.request("POST", sess_path("slow", "/signal"),
                                   {"signal": "CONT"}).status, 204)

    def test_get_signal_delete_on_stopped_worker(self):
        """Every call on a stopped worker answers within its deadline."""
        d = self.d
        s, w = self.stopped_session()
        r, took = self.timed("GET", sess_path(s["id"]))
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json()["responsive"], False, r)
        self.assertEqual(r.json()["state"], "running")
        self.assertLess(took, BOUND)
        # marked: the list says so, and other calls are refused at once
        lst = d.json("GET", "/v1/sessions")["sessions"]
        self.assertIs(lst[0]["responsive"], False, lst)
        r, took = self.timed("POST", sess_path(s["id"], "/signal"),
                             {"signal": "INT"})
        j = self.assertError(r, 503, "unavailable")
        self.assertIn("not responding", j["error"]["message"])
        r, took = self.timed("POST", sess_path(s["id"], "/input"),
                             {"data": "x"})
        self.assertError(r, 503, "unavailable")
        r, took = self.timed("DELETE", sess_path(s["id"]))
        self.assertEqual(r.status, 204, r)
        self.assertLess(took, BOUND)
        self.assertGoneAll(s, w)
        self.assertEqual(d.request("GET", sess_path(s["id"])).status, 404)

    def test_delete_of_stopped_worker_first_call(self):
        """DELETE as the first call on a stopped worker: its deadline
        passes, then the front ends the session itself."""
        s, w = self.stopped_session()
        r, took = self.timed("DELETE", sess_path(s["id"]))
        self.assertEqual(r.status, 204, r)
        self.assertLess(took, BOUND)
        self.assertGoneAll(s, w)

    def test_attach_flood_to_stopped_worker(self):
        """2,000 attach requests to a stopped worker: few descriptors are
        queued, the rest are refused with 503, and the front serves."""
        d = self.d
        s, w = self.stopped_session()
        front = d.proc.pid
        before = fd_count(front)
        path = sess_path(s["id"], "/attach")
        socks, peak, cut = [], 0, 0
        try:
            for i in range(2000):
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.connect(d.sock_path)
                try:
                    c.sendall((ATTACH % path).encode())
                except OSError:
                    # past --max-connections the front answers 503 and
                    # closes before reading: refused too
                    cut += 1
                    c.close()
                    continue
                socks.append(c)
                if i % 200 == 199:
                    peak = max(peak, fd_count(front))
            # the refused ones get their answer; read what comes in 10 s
            replies, pending = {}, {c.fileno(): c for c in socks}
            poll = select.poll()
            for fd in pending:
                poll.register(fd, select.POLLIN)
            deadline = time.monotonic() + 10
            while pending and time.monotonic() < deadline:
                for fd, _ in poll.poll(500):
                    poll.unregister(fd)
                    replies[fd] = pending.pop(fd).recv(4096)
                peak = max(peak, fd_count(front))
            h = d.json("GET", "/v1/health", timeout=BOUND)
            self.assertEqual(h["status"], "ok")
            refused = [b for b in replies.values()
                       if b.startswith(b"HTTP/1.1 503")]
            self.assertGreaterEqual(len(refused) + cut, 2000 - 64,
                                    "most attaches are refused")
            self.assertTrue([b for b in refused if b"not responding" in b],
                            refused[:3])
            # the front holds no descriptor for a queued attach: once the
            # refused connections have lingered (2 s, conn.c), its count is
            # back near where it was, whatever the clients keep open
            time.sleep(3)
            settled = fd_count(front)
            self.assertLess(settled - before, 40, (before, peak, settled))
        finally:
            for c in socks:
                c.close()
        r, took = self.timed("DELETE", sess_path(s["id"]))
        self.assertEqual(r.status, 204, r)
        self.assertGoneAll(s, w)
        wait_for(lambda: fd_count(front) <= before + 2,
                 what="the front's descriptors to come back")

    def test_create_with_stopped_worker_answers(self):
        """A worker that never says "created" (here: the workers forked
        ahead, stopped): the create call gets 503 in bounded time."""
        d = self.d

        def forked_ahead():
            w = [p for p in lt.descendants_of(d.proc.pid)
                 if lt.read_text("/proc/%d/cmdline" % p).startswith(
                     "lodged: waiting")]
            return len(w) >= 2 and w       # the pool holds two
        waiting = wait_for(forked_ahead, what="two workers forked ahead")
        for p in waiting:
            os.kill(p, signal.SIGSTOP)
            self.addCleanup(self._cont, p)
        r, took = self.timed("POST", "/v1/sessions",
                             {"args": ["sleep", "1000"]})
        j = self.assertError(r, 503, "unavailable")
        self.assertIn("not responding", j["error"]["message"])
        self.assertLess(took, BOUND)
        self.assertEqual(d.json("GET", "/v1/health")["status"], "ok")
        for p in waiting:
            os.kill(p, signal.SIGCONT)
        # the worker, running again, starts the session: it is listed
        wait_for(lambda: d.json("GET", "/v1/sessions")["sessions"],
                 BOUND, what="the late session to be listed")

    def test_removed_socket_does_not_hide_a_session(self):
        """A removed ID.sock: a restarted front still finds the session
        (and puts the socket back); its name stays taken."""
        d = self.d
        s = self.create({"args": ["sleep", "1000"], "name": "hidden"})
        sock = d.session_sock(s["id"])
        os.unlink(sock)
        d.kill9()
        d.restart()

        def listed():
            lst = d.json("GET", "/v1/sessions")["sessions"]
            return lst and lst[0]["responsive"] and lst
        lst = wait_for(listed, BOUND, what="the session to be found")
        self.assertEqual(lst[0]["id"], s["id"])
        self.assertEqual(lst[0]["name"], "hidden")
        self.assertTrue(os.path.exists(sock), "ID.sock is put back")
        r = d.request("POST", "/v1/sessions",
                      {"args": ["true"], "name": "hidden"})
        self.assertError(r, 409, "conflict")
        self.assertEqual(self.get("hidden")["pid"], s["pid"])
        r = d.request("DELETE", sess_path("hidden"))
        self.assertEqual(r.status, 204, r)
        self.assertGone(s["pid"])

    def test_wait_route(self):
        d = self.d
        s = self.create({"args": ["sh", "-c", "sleep 1; exit 3"]})
        t0 = time.monotonic()
        r = d.request("GET", sess_path(s["id"], "/wait?timeout=30"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["state"], "exited", r)
        self.assertEqual(r.json()["exitCode"], 3, r)
        self.assertLess(time.monotonic() - t0, 30)
        # an exited session answers at once
        r = d.request("GET", sess_path(s["id"], "/wait"))
        self.assertEqual(r.json()["exitCode"], 3, r)
        # the timeout: the state at that time
        s2 = self.create({"args": ["sleep", "1000"]})
        t0 = time.monotonic()
        r = d.request("GET", sess_path(s2["id"], "/wait?timeout=0.5"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["state"], "running", r)
        self.assertGreaterEqual(time.monotonic() - t0, 0.5)
        r = d.request("GET", sess_path(s2["id"], "/wait?timeout=0"))
        self.assertEqual(r.json()["state"], "running", r)
        for bad in ("-1", "x", "3601", "", "1e2", "nan", "0x10", "1.5.5",
                    "+1", "%201"):
            r = d.request("GET", sess_path(s2["id"], "/wait?timeout=" + bad))
            self.assertError(r, 400, "bad_request")
        self.assertError(d.request("GET", sess_path("nosuch", "/wait")),
                         404, "not_found")
        self.assertError(d.request("POST", sess_path(s2["id"], "/wait")),
                         405, "method_not_allowed")
        # a waiter sees a delete's exit
        box = {}

        def waiter():
            box["r"] = d.request("GET", sess_path(s2["id"],
                                                  "/wait?timeout=60"))
        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.3)
        self.assertEqual(d.request("DELETE", sess_path(s2["id"])).status,
                         204)
        t.join(BOUND)
        self.assertFalse(t.is_alive())
        self.assertEqual(box["r"].status, 200, box["r"])
        self.assertEqual(box["r"].json()["state"], "exited")
        self.assertEqual(box["r"].json()["signal"], "HUP")

    def test_many_concurrent_deletes_all_answered(self):
        """40 DELETEs of one session at once: every one gets 204."""
        d = self.d
        # ignores SIGHUP, so the delete takes its 0.5 s to SIGTERM
        s = self.create({"args": ["sh", "-c", "trap '' HUP; sleep 1000"]})
        time.sleep(0.2)
        results = []
        lock = threading.Lock()

        def one():
            try:
                r = d.request("DELETE", sess_path(s["id"]), timeout=BOUND)
                st = r.status
            except Exception as e:      # a timeout is a failure
                st = repr(e)
            with lock:
                results.append(st)
        threads = [threading.Thread(target=one) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(BOUND + 5)
        self.assertEqual(results, [204] * 40, results)
        self.assertGone(s["pid"])


# A worker of a newer lodged (control protocol 99), as a process of its
# own: it answers hello for session ID and prints every frame it gets.
FAKE_WORKER = r"""
import msgpack, os, socket, struct, sys
path, sid = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(8)
print("ready", flush=True)
def frames(c):
    buf = b""
    while True:
        d = c.recv(65536)
        if not d:
            return
        buf += d
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
            n = struct.unpack(">I", buf[:4])[0]
            yield msgpack.unpackb(buf[4:4 + n])
            buf = buf[4 + n:]
while True:
    c, _ = srv.accept()
    print("connection", flush=True)
    if c.recv(1) != b"\0":
        c.close()
        continue
    for m in frames(c):
        print("frame", m.get("type"), m.get("proto"), flush=True)
        if m.get("type") == "hello":
            r = msgpack.packb({"type": "reply", "id": m["id"],
                "status": 200, "proto": 99, "adoptAcks": True,
                "session": {"id": sid, "name": "newer", "pid": 0,
                            "state": "running", "user": "root"}})
            c.sendall(struct.pack(">I", len(r)) + r)
    c.close()
"""


class TestNewerWorker(lt.DaemonPerTest):
    """lodged.8 "Restarts": a front refuses a worker that speaks a newer
    control protocol than its own: it logs it, sends it nothing more, lists
    the session as not responding, answers calls on it with 503 naming the
    versions, and leaves it running until a DELETE ends it."""

    def test_newer_worker_is_refused_and_left_running(self):
        sid = "f00dfeedf00dfeedf00dfeedf00dfeed"
        self.d.kill9()
        fake = subprocess.Popen(
            ["/usr/bin/python3", "-c", FAKE_WORKER,
             self.d.session_sock(sid), sid],
            stdout=subprocess.PIPE, text=True)
        self.addCleanup(fake.stdout.close)
        self.addCleanup(fake.wait)
        self.addCleanup(lambda: fake.poll() is None and fake.kill())
        lines = []

        def read_lines():
            for line in fake.stdout:
                lines.append(line.split())
        self.assertEqual(fake.stdout.readline(), "ready\n")
        threading.Thread(target=read_lines, daemon=True).start()
        self.d.restart()
        wait_for(lambda: "control protocol 99, newer than this lodged's"
                 in lt.read_text(self.d.logpath),
                 timeout=BOUND, what="the refusal in the log")
        r = self.d.json("GET", "/v1/sessions")
        mine = [x for x in r["sessions"] if x["id"] == sid]
        self.assertEqual(len(mine), 1, r)
        self.assertFalse(mine[0]["responsive"])
        for method, path, body in (
                ("POST", sess_path(sid, "/input"), {"data": "x"}),
                ("POST", sess_path(sid, "/signal"), {"signal": "INT"}),
                ("POST", sess_path(sid, "/resize"), {"cols": 9, "rows": 9}),
                ("GET", sess_path(sid, "/log"), None)):
            r = self.d.request(method, path, body)
            self.assertEqual(r.status, 503, (path, r.body))
            self.assertIn(b"control protocol 99", r.body)
        r = self.d.request("GET", sess_path(sid))
        self.assertEqual(r.status, 200)
        self.assertFalse(r.json()["responsive"])
        # It was asked who it is, with the front's version, and nothing else.
        self.assertEqual(lines, [["connection"], ["frame", "hello", "1"]])
        self.assertIsNone(fake.poll())
        self.assertTrue(os.path.exists(self.d.session_sock(sid)))
        # DELETE ends it by its pid, as any silent worker.
        r = self.d.request("DELETE", sess_path(sid), timeout=BOUND + 20)
        self.assertEqual(r.status, 204, r.body)
        self.assertIsNotNone(fake.wait(timeout=BOUND))
        self.assertFalse(os.path.exists(self.d.session_sock(sid)))


if __name__ == "__main__":
    lt.main()

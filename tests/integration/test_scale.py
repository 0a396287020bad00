#!/usr/bin/python3
"""Many sessions (lodge-protocol(7) LIMITS, lodged(8) SCALE): DELETE
answers at once, with a few hundred sessions open; a create past the
kernel's pseudo-terminal limit is 503 `unavailable` naming kernel.pty.max,
and nothing else is disturbed; the front's memory per session is bounded.

The limit test lowers /proc/sys/kernel/pty/max for a moment and restores it
(in a cleanup too): it needs root and a writable /proc/sys, and is skipped,
saying why, without them.

Run: LODGED=$PWD/lodged /usr/bin/python3 tests/integration/test_scale.py
"""

import fcntl
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
from lodgetest import WSClient, sess_path  # noqa: E402

PTY_MAX = "/proc/sys/kernel/pty/max"
PTY_NR = "/proc/sys/kernel/pty/nr"
PTY_LOCK = "/tmp/lodge-test-pty-max.lock"
SESSIONS = 200


class Client:
    """One keep-alive connection, as an SDK holds it."""

    def __init__(self, d):
        self.d = d
        self.c = http.client.HTTPConnection("127.0.0.1", d.port,
                                            timeout=lt.HTTP_TIMEOUT)
        self.h = {"Authorization": "Bearer " + d.token,
                  "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        self.c.request(method, path, None if body is None else
                       json.dumps(body), self.h)
        r = self.c.getresponse()
        return r.status, r.read()

    def close(self):
        self.c.close()


def proc_number(pid, name, key):
    """The number after "key:" in /proc/PID/name."""
    with open("/proc/%d/%s" % (pid, name)) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/%s" % (key, pid, name))


def rss_kb(pid):
    return proc_number(pid, "status", "VmRSS")


def minor_faults(pid):
    """The process's minor page faults so far (/proc/PID/stat, field 10)."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def read_calls(pid):
    return proc_number(pid, "io", "syscr")


def template_of(front):
    """The front's template, once it has named itself (it does so after
    its exec, which takes a while under ASan)."""
    def find():
        for p in lt.children_of(front):
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    if f.read().startswith(b"lodged: template"):
                        return p
            except OSError:
                pass
        return None
    return lt.wait_for(find, 30, interval=0.05,
                       what="a template under %d" % front)


class TestManySessions(lt.DaemonPerTest):
    daemon_args = ["--max-sessions", str(SESSIONS + 16)]

    def make(self, cl, n, body):
        ids = []
        for _ in range(n):
            st, b = cl.call("POST", "/v1/sessions", body)
            self.assertEqual(st, 201, b)
            s = json.loads(b)
            self.d.note_session(s)
            ids.append(s["id"])
        return ids

    async def test_delete_answers_at_once(self):
        # Each session's cat exits on SIGHUP: its DELETE is answered on
        # the SIGCHLD that empties the group (a few ms), not at a poll or
        # a grace step.  A generous bound, not a speed test: the median
        # of 200 under 50 ms (150 under ASan), with 200 sessions open.
        cl = Client(self.d)
        self.addCleanup(cl.close)
        ids = self.make(cl, SESSIONS, {"args": ["cat"]})
        st, b = cl.call("GET", "/v1/sessions")
        self.assertEqual(st, 200, b)
        self.assertEqual(len(json.loads(b)["sessions"]), SESSIONS)
        took = []
        for sid in ids:
            t0 = time.monotonic()
            st, b = cl.call("DELETE", sess_path(sid))
            took.append((time.monotonic() - t0) * 1000)
            self.assertEqual(st, 204, b)
        took.sort()
        self.assertLess(took[len(took) // 2], 150.0 if lt.SANITIZED else
                        50.0, "DELETE p50 %.1f ms "
                        "(p90 %.1f)" % (took[len(took) // 2],
                                        took[len(took) * 9 // 10]))
        st, b = cl.call("GET", "/v1/sessions")
        self.assertEqual(json.loads(b), {"sessions": []})

    async def test_reaped_worker_group_removed_alone(self):
        # The template removes a reaped worker's group by its name: a few
        # reads a delete (its signal, the front's message), where a look
        # at every group on each reap read /proc/PID/stat of all of them
        # (20 deletes among 200 sessions: over 4,000, two a group).  The
        # bound leaves room for two sweeps of all groups, which follow a
        # reap by a few seconds.
        cl = Client(self.d)
        self.addCleanup(cl.close)
        ids = self.make(cl, SESSIONS, {"args": ["cat"]})
        workers = []
        for sid in ids[:20]:
            st, b = cl.call("GET", sess_path(sid))
            workers.append(lt.proc_stat(json.loads(b)["pid"])["ppid"])
        tmpl = template_of(self.d.proc.pid)
        before = read_calls(tmpl)
        for sid in ids[:20]:
            st, b = cl.call("DELETE", sess_path(sid))
            self.assertEqual(st, 204, b)
        lt.wait_for(lambda: not any(os.path.exists("/proc/%d" % w)
                                    for w in workers),
                    what="the deleted sessions' workers reaped")
        reads = read_calls(tmpl) - before
        self.assertLess(reads, 20 * 10 + 5 * SESSIONS,
                        "the template read %d times for 20 deletes" % reads)
        for sid in ids[20:]:
            st, b = cl.call("DELETE", sess_path(sid))
            self.assertEqual(st, 204, b)

    async def test_front_memory_per_session(self):
        # The front keeps each session's object as text, a few fields
        # beside it, and no receive buffer while its worker is quiet:
        # a bound of 8 kB per session (measured: about 2).  A jansson
        # tree and a 64 KiB buffer per link were 22 kB.
        if lt.SANITIZED:
            self.skipTest("RSS means nothing under ASan (quarantine)")
        cl = Client(self.d)
        self.addCleanup(cl.close)
        ids = self.make(cl, 10, {"args": ["cat"]})
        time.sleep(0.2)
        before = rss_kb(self.d.proc.pid)
        ids += self.make(cl, SESSIONS - 10, {"args": ["cat"]})
        # GETs and lists go through the same cached text
        for sid in ids[:20]:
            st, b = cl.call("GET", sess_path(sid))
            self.assertEqual(st, 200, b)
            self.assertEqual(json.loads(b)["id"], sid)
        st, b = cl.call("GET", "/v1/sessions")
        self.assertEqual(len(json.loads(b)["sessions"]), SESSIONS)
        time.sleep(0.2)
        per = (rss_kb(self.d.proc.pid) - before) / (SESSIONS - 10)
        self.assertLess(per, 8.0, "front RSS grew %.1f kB per session" % per)
        for sid in ids:
            st, b = cl.call("DELETE", sess_path(sid))
            self.assertEqual(st, 204, b)


class TestLinksAboveLwsTable(lt.DaemonPerTest):
    """The front's links to its workers are on its libuv loop, not in
    libwebsockets' descriptor table, and numbered above it, so the table
    covers the clients' descriptors only: lws walks all of it at each
    close (lodged(8) SCALE)."""

    daemon_args = ["--max-connections", "32"]

    async def test_links_numbered_above_the_clients(self):
        cl = Client(self.d)
        self.addCleanup(cl.close)
        ids = []
        for _ in range(20):
            st, b = cl.call("POST", "/v1/sessions", {"args": ["cat"]})
            self.assertEqual(st, 201, b)
            ids.append(json.loads(b)["id"])
        fddir = "/proc/%d/fd" % self.d.proc.pid
        high = [int(n) for n in os.listdir(fddir) if int(n) >= 32 + 256
                and os.readlink(os.path.join(fddir, n)).startswith(
                    "socket:")]
        self.assertGreaterEqual(len(high), 20, sorted(
            int(n) for n in os.listdir(fddir)))
        # Every session still answers, through its link.
        for sid in ids:
            st, b = cl.call("POST", sess_path(sid, "/input"),
                            {"data": "ping\n"})
            self.assertEqual(st, 204, b)
        for sid in ids:
            lt.wait_for(lambda: cl.call("GET", sess_path(sid, "/log")) ==
                        (200, b"ping\n"), what="the echo of %s" % sid)
            st, b = cl.call("DELETE", sess_path(sid))
            self.assertEqual(st, 204, b)
        st, b = cl.call("GET", "/v1/sessions")
        self.assertEqual(json.loads(b), {"sessions": []})


def blocked_poll_timeout(pid):
    """The timeout in ms of the poll() the process sleeps in, or None
    while it is not in one (x86-64's /proc/PID/syscall: poll is 7)."""
    with open("/proc/%d/syscall" % pid) as f:
        fields = f.read().split()
    if len(fields) < 4 or fields[0] != "7":
        return None
    ms = int(fields[3], 16) & 0xffffffff
    return ms - (1 << 32) if ms >= 1 << 31 else ms


def ctx_switches(pid):
    return (proc_number(pid, "status", "voluntary_ctxt_switches") +
            proc_number(pid, "status", "nonvoluntary_ctxt_switches"))


class TestIdleWorkerSleeps(lt.DaemonPerTest):
    """An idle session's worker sleeps until something happens to it: no
    periodic timer of libwebsockets' wakes it (lodged(8) SCALE).  On
    x86-64 the timeout of the poll() each worker sleeps in is read from
    /proc/PID/syscall (lws's 30 s one is the wakeup this guards against);
    elsewhere the workers' context switches are counted over 35 s."""

    async def test_idle_workers_do_not_wake(self):
        cl = Client(self.d)
        self.addCleanup(cl.close)
        ids = []
        for body in ({"args": ["cat"]}, {"args": ["cat"], "pty": True}):
            st, b = cl.call("POST", "/v1/sessions", body)
            self.assertEqual(st, 201, b)
            ids.append(json.loads(b)["id"])
        # A client that came and went leaves no timer behind either.
        c = await WSClient.connect(self.d, ids[1])
        self.assertEqual((await c.recv())["type"], "attached")
        await c.close()
        template = template_of(self.d.proc.pid)
        workers = [p for p in lt.children_of(template)
                   if open("/proc/%d/cmdline" % p, "rb").read().startswith(
                       b"lodged: session")]
        self.assertEqual(len(workers), 2, workers)
        if os.uname().machine == "x86_64":
            for w in workers:
                # A reading of 0 (a poll that returns at once) is busy.
                ms = lt.wait_for(lambda: blocked_poll_timeout(w),
                                 what="worker %d asleep in poll" % w)
                self.assertTrue(ms == -1 or ms > 3600 * 1000,
                                "worker %d sleeps %d ms at most" % (w, ms))
        else:
            time.sleep(2)
            before = [ctx_switches(w) for w in workers]
            time.sleep(35)
            after = [ctx_switches(w) for w in workers]
            self.assertEqual(before, after, "idle workers woke")
        for sid in ids:
            st, b = cl.call("DELETE", sess_path(sid))
            self.assertEqual(st, 204, b)


class TestTemplateWalksSeldom(lt.DaemonPerTest):
    """The template looks at all its children (waitpid(-1), a walk of
    every session's worker in the kernel, under the lock every fork and
    exit takes) at most once a second under a stream of exec calls; each
    command is reaped by its pid.  Counted with strace: 3 s of exec calls
    made a walk every 100 ms before, about 30."""

    async def test_walks_once_a_second_at_most(self):
        strace = shutil.which("strace")
        if strace is None:
            self.skipTest("needs strace to count the template's waitpid")
        cl = Client(self.d)
        self.addCleanup(cl.close)
        template = template_of(self.d.proc.pid)
        out = tempfile.NamedTemporaryFile(prefix="lodge-walks-",
                                          delete=False)
        out.close()
        self.addCleanup(os.unlink, out.name)
        tr = subprocess.Popen([strace, "-qq", "-e", "trace=wait4", "-o",
                               out.name, "-p", str(template)],
                              stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: tr.poll() is None and tr.kill())
        lt.wait_for(lambda: traced_by(template) == tr.pid,
                    what="strace attached to the template")
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < 3.0:
            st, b = cl.call("POST", "/v1/exec", {"args": ["/bin/true"]})
            self.assertEqual(st, 200, b)
            n += 1
            time.sleep(0.02)
        took = time.monotonic() - t0
        time.sleep(1.5)      # the last walk due
        tr.terminate()
        tr.wait()
        with open(out.name) as f:
            calls = f.read().splitlines()
        walks = 0
        prev = False
        for line in calls:
            walk = line.startswith("wait4(-1,")
            walks += walk and not prev
            prev = walk
        self.assertGreater(n, 20, "exec calls made")
        self.assertLessEqual(walks, int(took) + 3,
                             "%d walks in %.1f s of %d exec calls: %s" %
                             (walks, took, n, calls[:20]))


def traced_by(pid):
    return proc_number(pid, "status", "TracerPid")


class TestPagedList(lt.DaemonPerTest):
    """GET /v1/sessions?limit=N&after=ID: pages in id order that add up
    to the whole list, "next" on every page but the last."""

    async def test_pages(self):
        ids = sorted(self.create({"args": ["cat"]})["id"] for _ in range(7))
        whole = self.d.json("GET", "/v1/sessions")
        self.assertEqual([s["id"] for s in whole["sessions"]], ids)
        self.assertNotIn("next", whole)
        got, after, pages = [], None, []
        while True:
            q = "?limit=3" + ("&after=" + after if after else "")
            page = self.d.json("GET", "/v1/sessions" + q)
            pages.append(page)
            self.assertLessEqual(len(page["sessions"]), 3, page)
            got += page["sessions"]
            if "next" not in page:
                break
            self.assertEqual(page["next"], page["sessions"][-1]["id"])
            after = page["next"]
        self.assertEqual([len(p["sessions"]) for p in pages], [3, 3, 1])
        self.assertEqual(got, whole["sessions"])
        # A page that ends with the last session says so.
        self.assertEqual(self.d.json("GET", "/v1/sessions?limit=7"), whole)
        # after need not name a session: what sorts after it.
        page = self.d.json("GET", "/v1/sessions?limit=100&after=" +
                           ids[3][:-1])
        self.assertEqual([s["id"] for s in page["sessions"]], ids[3:])
        page = self.d.json("GET", "/v1/sessions?limit=2&after=" + ids[-1])
        self.assertEqual(page, {"sessions": []})
        long_ref = ids[1] + "z" * (64 - len(ids[1]))
        page = self.d.json("GET", "/v1/sessions?limit=100&after=" +
                           long_ref)
        self.assertEqual([s["id"] for s in page["sessions"]], ids[2:])

    async def test_bad_queries(self):
        self.create({"args": ["cat"]})
        for q in ("limit=0", "limit=-1", "limit=x", "limit=", "limit=1e3",
                  "limit=100001", "limit=99999999999999999999",
                  "after=abc", "limit=2&after=", "limit=2&after=a%2Fb",
                  "limit=2&after=" + "a" * 65):
            r = self.d.request("GET", "/v1/sessions?" + q)
            self.assertEqual(r.status, 400, (q, r))
            self.assertEqual(r.json()["error"]["code"], "bad_request", q)
        # and the daemon lists as before
        self.assertEqual(len(self.d.json("GET", "/v1/sessions")["sessions"]),
                         1)


class TestCachedList(lt.DaemonPerTest):
    """The whole list is sent from a cache, built again only once a
    session is created, deleted or changes (lodge-protocol(7) GET
    /v1/sessions); a page is built for each call and leaves it alone."""

    def built(self):
        text = self.d.request("GET", "/metrics").body.decode()
        m = re.search(r"^lodged_session_lists_built_total (\d+)$", text,
                      re.M)
        self.assertIsNotNone(m, text)
        return int(m.group(1))

    def listed(self):
        return {s["id"]: s for s in
                self.d.json("GET", "/v1/sessions")["sessions"]}

    def same_as_its_get(self, sid):
        # The list's entry is what GET of the session says, field for field.
        one = self.d.json("GET", sess_path(sid))
        return self.listed().get(sid) == one

    async def test_renewed_on_every_change(self):
        a = self.create({"args": ["cat"]})["id"]
        b = self.create({"args": ["cat"]})["id"]
        n = self.built()
        first = self.d.request("GET", "/v1/sessions").body
        for _ in range(3):
            self.assertEqual(self.d.request("GET", "/v1/sessions").body,
                             first)
        self.assertEqual(self.built(), n + 1, "built once, then cached")
        self.assertEqual(sorted(self.listed()), sorted([a, b]))
        self.d.json("GET", "/v1/sessions?limit=1")
        self.assertEqual(self.built(), n + 2, "a page is built")
        self.assertEqual(self.d.request("GET", "/v1/sessions").body, first)
        self.assertEqual(self.built(), n + 2, "a page leaves the cache")
        # A client comes and goes: each list says so.
        c = await WSClient.connect(self.d, a)
        lt.wait_for(lambda: self.d.json("GET", sess_path(a))["clients"] ==
                    1, what="the attach counted")
        self.assertTrue(self.same_as_its_get(a), self.listed())
        await c.close()
        lt.wait_for(lambda: self.listed()[a]["clients"] == 0,
                    what="the list to show the client gone")
        self.assertTrue(self.same_as_its_get(a), self.listed())
        # Output, an exit, a create and a delete.
        self.d.json("POST", sess_path(a, "/input"), {"data": "hi\n"},
                    expect=204)
        lt.wait_for(lambda: self.listed()[a]["outputBytes"] == 3,
                    what="the list to count a's output")
        e = self.create({"args": ["sh", "-c", "exit 3"]})["id"]
        lt.wait_for(lambda: self.listed()[e]["state"] == "exited",
                    what="the list to show e exited")
        self.assertEqual(self.listed()[e]["exitCode"], 3)
        self.assertTrue(self.same_as_its_get(e), self.listed())
        self.d.request("DELETE", sess_path(b))
        self.assertEqual(sorted(self.listed()), sorted([a, e]))
        n = self.built()
        self.listed()
        self.assertEqual(self.built(), n, "cached again once all is still")

    async def test_built_in_memory_the_front_holds(self):
        # The block a whole list is built in is kept as long as the list
        # while sessions are created, its pages touched: the first build
        # after the creates takes no page fault for it (at 10,000 sessions
        # it took 729, one every 4 kB).  Sessions with long arguments make
        # a list of 2.4 MB from a few of them.  (Under ASan, its own
        # bookkeeping took 81 faults here; a build in a new block, 588.)
        for k in range(24):
            self.create({"args": ["sh", "-c", "exec cat",
                                  chr(97 + k) * 100000]})
        time.sleep(0.2)
        before = minor_faults(self.d.proc.pid)
        body = self.d.request("GET", "/v1/sessions").body
        faults = minor_faults(self.d.proc.pid) - before
        self.assertGreater(len(body), 2400000)
        self.assertEqual(len(json.loads(body)["sessions"]), 24)
        pages = len(body) // 4096
        self.assertLess(faults, pages // 4,
                        "%d page faults building a list of %d pages" %
                        (faults, pages))


class TestListNeverStale(lt.DaemonPerTest):
    """Each kind of change to a session shows in the very next list, even
    with the list cached just before it: its state and exit code, its
    clients coming and going, its output, a resize (cols, rows), a create
    and a delete.  The entry is what GET of the session says, field for
    field, and a page of the list says the same as the whole.  (No field
    of a session is renamed in place: a session's name is fixed at its
    create.)"""

    def listed(self):
        return {s["id"]: s for s in
                self.d.json("GET", "/v1/sessions")["sessions"]}

    def paged(self):
        out, after = {}, ""
        while True:
            q = "/v1/sessions?limit=2" + ("&after=" + after if after else "")
            page = self.d.json("GET", q)
            out.update({s["id"]: s for s in page["sessions"]})
            if "next" not in page:
                return out
            after = page["next"]

    def cache(self):
        # Built, then sent from the cache: the change must replace it.
        first = self.d.request("GET", "/v1/sessions").body
        self.assertEqual(self.d.request("GET", "/v1/sessions").body, first)

    def shows(self, sid, pred, what):
        """Once the session's own GET shows the change (pred), the next
        list must, with no wait: the front has the object then."""
        lt.wait_for(lambda: pred(self.get(sid)), what=what)
        one = self.get(sid)
        whole = self.listed()
        self.assertIn(sid, whole, what)
        self.assertEqual(whole[sid], one, what)
        self.assertTrue(pred(whole[sid]), what)
        self.assertEqual(self.paged(), whole, what + ": pages and whole")
        return whole

    async def test_sent_whole_to_a_slow_reader(self):
        # A list larger than the socket's buffers (tcp_wmem's 4 MB at
        # most), to a reader that waits before it takes any: the front
        # sends it from where it lies over many writes, and it arrives
        # whole and in order.
        for k in range(48):
            self.create({"args": ["sh", "-c", "exec cat",
                                  chr(97 + k % 26) * 100000]})
        want = self.d.request("GET", "/v1/sessions").body
        self.assertGreater(len(want), 4 << 20)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(lt.HTTP_TIMEOUT)
        s.connect(("127.0.0.1", self.d.port))
        self.addCleanup(s.close)
        s.sendall(("GET /v1/sessions HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer %s\r\n\r\n" %
                   self.d.token).encode())
        got = b""
        while b"\r\n\r\n" not in got:
            got += s.recv(4096)
        head, body = got.split(b"\r\n\r\n", 1)
        n = int(re.search(rb"Content-Length: (\d+)", head).group(1))
        self.assertEqual(n, len(want))
        time.sleep(0.5)
        while len(body) < n:
            body += s.recv(65536)
        self.assertEqual(body, want)

    async def test_every_change_shows(self):
        a = self.create({"args": ["cat"]})["id"]
        p = self.create({"args": ["cat"], "pty": True, "cols": 80,
                         "rows": 24})["id"]
        self.create({"args": ["cat"]})
        self.cache()
        c = await WSClient.connect(self.d, a)
        self.shows(a, lambda s: s["clients"] == 1, "a client attached")
        self.cache()
        await c.close()
        self.shows(a, lambda s: s["clients"] == 0, "the client gone")
        self.cache()
        self.d.json("POST", sess_path(a, "/input"), {"data": "hi\n"},
                    expect=204)
        self.shows(a, lambda s: s["outputBytes"] == 3, "a's output")
        self.cache()
        self.d.json("POST", sess_path(p, "/resize"),
                    {"cols": 120, "rows": 40}, expect=204)
        self.shows(p, lambda s: (s["cols"], s["rows"]) == (120, 40),
                   "the resize")
        self.cache()
        e = self.create({"args": ["sh", "-c", "read x; exit 7"]})["id"]
        self.shows(e, lambda s: s["state"] == "running", "e created")
        self.cache()
        self.d.json("POST", sess_path(e, "/input"), {"data": "\n"},
                    expect=204)
        w = self.shows(e, lambda s: s["state"] == "exited", "e exited")
        self.assertEqual(w[e]["exitCode"], 7, w[e])
        self.cache()
        self.d.json("POST", sess_path(a, "/signal"), {"signal": "KILL"},
                    expect=204)
        w = self.shows(a, lambda s: s["state"] == "exited", "a killed")
        self.cache()
        self.d.request("DELETE", sess_path(e))
        w = self.listed()
        self.assertNotIn(e, w, "the deleted session")
        self.assertEqual(self.paged(), w)


class TestPtyLimit(lt.DaemonPerTest):
    """kernel.pty.max lowered to the PTYs in use, for as long as it takes
    one create: the create gets 503 naming the limit; pipe sessions, a
    PTY session made before, and creates after the limit is restored all
    work as before."""

    def lower_pty_max(self):
        """Lower kernel.pty.max to the PTYs in use; returns the function
        that puts it back (a cleanup too).  Other runs of this test on the
        machine wait on a lock, so none saves a value another lowered."""
        if os.geteuid() != 0:
            self.skipTest("needs root to lower %s" % PTY_MAX)
        lock = open(PTY_LOCK, "a")
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(PTY_MAX) as f:
                saved = f.read().strip()
            with open(PTY_MAX, "w") as f:
                f.write(saved + "\n")
        except OSError as e:
            lock.close()
            self.skipTest("cannot write %s here: %s" % (PTY_MAX, e))

        def restore():
            if lock.closed:
                return
            try:
                with open(PTY_MAX, "w") as f:
                    f.write(saved + "\n")
            finally:
                lock.close()
        self.addCleanup(restore)
        with open(PTY_NR) as f:
            nr = int(f.read())
        with open(PTY_MAX, "w") as f:
            f.write("%d\n" % nr)
        return restore

    async def test_create_past_the_pty_limit(self):
        before = self.create({"args": ["cat"], "pty": True})
        pipe = self.create({"args": ["cat"]})
        n0 = self.d.json("GET", "/v1/health")["sessions"]
        restore = self.lower_pty_max()
        try:
            r = self.d.request("POST", "/v1/sessions",
                               {"args": ["cat"], "pty": True})
            during = self.create({"args": ["cat"]})
        finally:
            restore()
        self.assertEqual(r.status, 503, r)
        err = r.json()["error"]
        self.assertEqual(err["code"], "unavailable", err)
        self.assertIn("kernel.pty.max", err["message"], err)
        self.assertNotIn("No space left", err["message"], err)

        # Nothing else disturbed: the failed session left nothing behind,
        # the others answer, and a PTY create works again.
        self.assertEqual(self.d.json("GET", "/v1/health")["sessions"],
                         n0 + 1)
        listed = {s["id"] for s in
                  self.d.json("GET", "/v1/sessions")["sessions"]}
        self.assertEqual(listed, {before["id"], pipe["id"], during["id"]})
        socks = os.listdir(os.path.join(self.d.rundir, "sessions"))
        self.assertEqual(len([x for x in socks if x.endswith(".sock")]), 3,
                         socks)
        after = self.create({"args": ["cat"], "pty": True})
        for s in (before, pipe, during, after):
            self.assertEqual(self.get(s["id"])["state"], "running")
        ws = await WSClient.connect(self.d, before["id"])
        try:
            await ws.handshake()
            await ws.stdin(b"still here\n")
            await ws.wait_output(rb"still here")
        finally:
            await ws.close()


if __name__ == "__main__":
    lt.main()

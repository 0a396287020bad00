#!/usr/bin/python3
"""What lodged trusts (lodged(8) FILES, Runtime directory; SECURITY
CONSIDERATIONS): a runtime directory, a sessions/ directory or a token file
that another user made or can change is refused at start, with a message
saying why; a failed token write leaves nothing behind; the token never
reaches the memory of a worker; the ring budget (--buffer-budget).

Run: LODGED=$PWD/lodged /usr/bin/python3 tests/integration/test_trust.py
"""

import os
import resource
import shutil
import signal
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
import reliability as rl  # noqa: E402

NOBODY = rl.NOBODY_UID
TOKEN = "planted-token-0123456789abcdef"


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def run_briefly(rundir, args=(), timeout=15, preexec=None):
    """Start lodged on rundir; (exit status, or None if it kept running;
    its output).  Whatever it started is killed."""
    return rl.run_lodged_briefly(
        ["--foreground", "--listen", "127.0.0.1:%d" % lt.free_port(),
         "--runtime-dir", rundir] + list(args), timeout=timeout,
        rundir=rundir, preexec=preexec)


class TestPlantedRuntimeDir(unittest.TestCase):

    def tmpdir(self):
        d = tempfile.mkdtemp(prefix="lodge-test-trust-")
        self.addCleanup(shutil.rmtree, d, True)
        return d

    def plant_token(self, d, uid=NOBODY):
        path = os.path.join(d, "token")
        with open(path, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(path, 0o600)
        os.chown(path, uid, -1)
        return path

    def assert_refused(self, rundir, words, args=(), what=""):
        rc, out = run_briefly(rundir, args)
        self.assertIsNotNone(rc, "lodged started on %s%s: %r"
                             % (what, rundir, out))
        self.assertEqual(rc, 1, out)
        for w in words:
            self.assertIn(w, out, "the refusal does not say %r: %r"
                          % (w, out))
        return out

    def test_dir_owned_by_another_user_is_refused(self):
        # another user made the directory first and wrote its token there
        d = self.tmpdir()
        self.plant_token(d)
        os.chown(d, NOBODY, -1)
        os.chmod(d, 0o700)
        self.assert_refused(d, [d, "owned by another user"])
        self.assertEqual(os.listdir(d), ["token"], "lodged wrote into it")
        self.assertEqual(mode(d), 0o700)

    def test_token_owned_by_another_user_is_refused(self):
        d = self.tmpdir()
        path = self.plant_token(d)
        self.assert_refused(d, [path, "owned by another user"])
        # --token-file too: another user's file is refused, even at 0600
        tf = os.path.join(self.tmpdir(), "tok")
        with open(tf, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(tf, 0o600)
        os.chown(tf, NOBODY, -1)
        self.assert_refused(self.tmpdir(), [tf, "owned by another user"],
                            args=["--token-file", tf])

    def test_dir_writable_by_others_is_refused(self):
        for m in (0o770, 0o707, 0o777, 0o730, 0o703):
            d = self.tmpdir()
            os.chmod(d, m)
            self.assert_refused(d, [d, "writable by"],
                                what="a directory of mode %o: " % m)
            self.assertEqual(os.listdir(d), [], "mode %o: lodged wrote "
                             "into it" % m)
        # a directory above, writable by others and not sticky
        top = self.tmpdir()
        os.chmod(top, 0o777)
        self.assert_refused(os.path.join(top, "run"), [top, "writable by"])
        self.assertEqual(os.listdir(top), [])
        # ... or owned by another user
        os.chmod(top, 0o755)
        os.chown(top, NOBODY, -1)
        self.assert_refused(os.path.join(top, "run"),
                            [top, "owned by another user"])
        self.assertEqual(os.listdir(top), [])

    def test_sessions_link_is_refused_and_its_target_untouched(self):
        target = self.tmpdir()
        os.chmod(target, 0o700)
        d = self.tmpdir()
        os.symlink(target, os.path.join(d, "sessions"))
        self.assert_refused(d, [os.path.join(d, "sessions"),
                                "symbolic link"])
        self.assertEqual(mode(target), 0o700, "the link's target was "
                         "chmod'ed")
        self.assertEqual(os.listdir(target), [])
        # a sessions/ of another user's, or open to others, likewise
        os.unlink(os.path.join(d, "sessions"))
        sd = os.path.join(d, "sessions")
        os.mkdir(sd, 0o711)
        os.chown(sd, NOBODY, -1)
        self.assert_refused(d, [sd, "owned by another user"])
        os.chown(sd, 0, -1)
        os.chmod(sd, 0o733)
        self.assert_refused(d, [sd, "writable by"])
        self.assertEqual(os.listdir(sd), [])

    def test_own_dir_still_works(self):
        # what the harness does: mkdtemp (ours, 0700); it becomes 0711
        d = self.tmpdir()
        rc, out = run_briefly(d, timeout=3)
        self.assertIsNone(rc, out)
        self.assertEqual(mode(d), 0o711)
        self.assertEqual(mode(os.path.join(d, "sessions")), 0o711)
        self.assertEqual(mode(os.path.join(d, "token")), 0o600)

    def test_failed_token_write_leaves_nothing(self):
        # a full disk, as the token is written: files limited to 0 bytes
        def no_file_space():
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        d = self.tmpdir()
        rc, out = run_briefly(d, preexec=no_file_space)
        self.assertEqual(rc, 1, out)
        self.assertNotIn("token.new", os.listdir(d))
        self.assertNotIn("token", os.listdir(d))
        # a token.new left by some earlier start is not in the way
        with open(os.path.join(d, "token.new"), "w") as f:
            f.write("x")
        rc, out = run_briefly(d, timeout=3)
        self.assertIsNone(rc, out)
        self.assertNotIn("token.new", os.listdir(d))
        with open(os.path.join(d, "token")) as f:
            self.assertEqual(len(f.read().strip()), 64)


def process_memory_holds(pid, needle):
    """True if needle is in the readable memory of pid (regions over 1 GiB,
    a sanitizer's shadow, are skipped)."""
    found = False
    with open("/proc/%d/maps" % pid) as maps, \
            open("/proc/%d/mem" % pid, "rb", 0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            lo, hi = (int(x, 16) for x in addr.split("-"))
            if perms[0] != "r" or hi - lo > 1 << 30 or "[vvar]" in line:
                continue
            tail = b""
            for off in range(lo, hi, 1 << 20):
                try:
                    mem.seek(off)
                    chunk = mem.read(min(1 << 20, hi - off))
                except OSError:
                    break
                if needle in tail + chunk:
                    found = True
                tail = chunk[-len(needle):]
    return found


class TestTokenNotInWorkers(lt.LodgeTestMixin,
                            unittest.IsolatedAsyncioTestCase):
    """The token of a TCP client never reaches a worker: the front takes
    the head out of the socket and passes it on without the token."""

    def setUp(self):
        self.secret = "trust-" + os.urandom(16).hex()
        fd, self.tf = tempfile.mkstemp(prefix="lodge-test-tok-")
        os.write(fd, (self.secret + "\n").encode())
        os.close(fd)
        self.addCleanup(os.unlink, self.tf)
        self.d = self.start_daemon(token_file=self.tf)

    def lodged_processes(self):
        """Every process of the daemon but the front: the template, the
        workers waiting in its pool, session and exec-stream workers and
        what they run."""
        d = self.d
        pids = set(lt.pids_holding_sockets(
            lt.unix_socket_inodes(d.rundir + "/sessions/")))
        for pid in lt.all_pids():
            env = lt.proc_environ(pid) or {}
            if env.get("LODGE_TEST_RUNDIR") == d.rundir:
                pids.add(pid)
        pids.update(lt.descendants_of(d.proc.pid))
        for pid in list(pids):
            pids.update(lt.descendants_of(pid))
        pids.discard(d.proc.pid)
        return sorted(p for p in pids if lt.proc_exists(p))

    def assert_no_token(self, what):
        pids = self.lodged_processes()
        self.assertTrue(pids, "no process of lodged's found")
        needle = self.secret.encode()
        holders = [p for p in pids if process_memory_holds(p, needle)]
        self.assertEqual(holders, [], "%s: the token is in the memory of "
                         "%s" % (what, ", ".join(
                             "%d (%s)" % (p, lt.proc_stat(p)["comm"])
                             for p in holders)))
        # the front does hold it: the search finds what is there
        self.assertTrue(process_memory_holds(self.d.proc.pid, needle))

    def session(self):
        s = self.create({"args": ["sh", "-c", "echo hi; sleep 1000"],
                         "user": "nobody", "workDir": "/tmp"})
        return s["id"]

    def auth(self):
        return {"Authorization": "Bearer " + self.secret}

    async def test_attach(self):
        sid = self.session()
        # the token in the header, then in access_token
        a1 = await lt.WSClient.open(self.d, lt.sess_path(sid, "/attach"),
                                    {}, self.auth(), "attach-header")
        self.addAsyncCleanup(a1.close)
        m = await a1.recv()
        self.assertEqual(m["type"], "attached", m)
        a2 = await lt.WSClient.open(
            self.d, lt.sess_path(sid, "/attach"),
            {"access_token": self.secret, "since": 0}, {}, "attach-query")
        self.addAsyncCleanup(a2.close)
        m = await a2.recv()
        self.assertEqual(m["type"], "attached", m)
        self.assert_no_token("two clients attached")
        await a1.close()
        await a2.close()
        self.assert_no_token("after the attached clients left")

    async def test_log(self):
        sid = self.session()
        r = self.d.request("GET", lt.sess_path(sid, "/log"), token=None,
                           headers=self.auth())
        self.assertEqual(r.status, 200, r)
        r = self.d.request("GET", lt.sess_path(sid, "/log") + "?since=0&"
                           "access_token=" + self.secret, token=None)
        self.assertEqual(r.status, 200, r)
        self.assertIn(b"hi", r.body)
        self.assert_no_token("log read")

    async def test_exec_stream(self):
        for q, h in (({}, self.auth()), ({"access_token": self.secret}, {})):
            c = await lt.WSClient.open(self.d, "/v1/exec/stream", q, h,
                                       "exec")
            self.addAsyncCleanup(c.close)
            await c.send({"type": "start", "args": ["sleep", "1000"],
                          "user": "nobody", "workDir": "/tmp"})
            m = await c.recv()
            self.assertEqual(m["type"], "started", m)
        self.assert_no_token("exec streams running")


class TestBufferBudget(lt.DaemonPerTest):
    """--buffer-budget: the rings of all sessions together."""

    RING = 256 * 1024
    daemon_args = ("--buffer-budget", str(4 * 256 * 1024))

    def fill(self):
        return [self.create({"args": ["sleep", "1000"],
                             "bufferSize": self.RING}) for _ in range(4)]

    def assert_full(self, size=RING):
        r = self.d.request("POST", "/v1/sessions", {
            "args": ["sleep", "1000"], "bufferSize": size})
        self.assertEqual(r.status, 503, r)
        err = r.json()["error"]
        self.assertEqual(err["code"], "unavailable")
        self.assertIn("--buffer-budget", err["message"])
        self.assertIn(str(4 * self.RING), err["message"])

    def assert_intact(self, sessions):
        listed = {s["id"]: s for s in
                  self.d.json("GET", "/v1/sessions")["sessions"]}
        self.assertEqual(sorted(listed), sorted(s["id"] for s in sessions))
        for s in sessions:
            self.assertEqual(self.get(s["id"])["state"], "running")

    def test_creates_past_the_budget_are_refused(self):
        sessions = self.fill()
        self.assert_full()
        self.assert_full(4096)
        self.assert_intact(sessions)
        # what a deleted session held is free again
        r = self.d.request("DELETE", lt.sess_path(sessions[0]["id"]))
        self.assertEqual(r.status, 204, r)
        self.assert_full(self.RING + 4096)
        sessions[0] = self.create({"args": ["sleep", "1000"],
                                   "bufferSize": self.RING})
        self.assert_full()
        self.assert_intact(sessions)

    def test_budget_is_rebuilt_by_a_new_front(self):
        sessions = self.fill()
        self.d.kill9()
        self.d.restart()
        self.assert_full()
        self.assert_intact(sessions)


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/python3
"""lodged under a real systemd: a minimal Debian 12 root (contrib/nspawn-
root.sh) boots systemd as PID 1 in systemd-nspawn, with the build's
`make install` bound in at /usr/local, and the tests drive lodged.service
and lodged.socket there with systemctl, as an operator would.

The container shares the host's network, so the harness reaches lodged's TCP
listener (a drop-in gives it a free port) from outside, and its Unix socket
through /proc/PID/root.  Needs root, systemd-nspawn and debootstrap; where
the kernel refuses the namespaces nspawn needs, the tests skip and say so.
"""

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lodgetest as lt  # noqa: E402

SRCDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILDDIR = os.path.dirname(os.path.abspath(lt.LODGED))
ROOT = os.environ.get("LODGE_NSPAWN_ROOT", "/var/tmp/lodge-nspawn-root")


def cgroup2_mount():
    with open("/proc/mounts") as f:
        for line in f:
            dev, path, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return path
    return None


class Container:
    """systemd booted in systemd-nspawn, in a cgroup of its own that is
    emptied and removed afterwards."""

    def __init__(self, root, usr_local, logpath):
        self.root, self.usr_local, self.logpath = root, usr_local, logpath
        self.proc = None
        self.cgroup = None
        self.pid1 = None

    def start(self):
        base = cgroup2_mount()
        if base:
            self.cgroup = os.path.join(base, "lodge-nspawn-%d" % os.getpid())
            os.makedirs(self.cgroup, exist_ok=True)
        cg = self.cgroup

        def enter_cgroup():
            if cg:
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write("0")
        log = open(self.logpath, "wb")
        self.proc = subprocess.Popen(
            ["systemd-nspawn", "--quiet", "--register=no", "--keep-unit",
             "--console=pipe", "--volatile=overlay", "-D", self.root,
             "--bind-ro=%s:/usr/local" % self.usr_local, "-b"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            preexec_fn=enter_cgroup, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise unittest.SkipTest(
                    "systemd-nspawn cannot boot a container here (exit %s): "
                    "%s" % (self.proc.returncode, self.log_tail()))
            # nspawn's child becomes systemd by exec: wait for that
            self.pid1 = None
            for kid in lt.children_of(self.proc.pid):
                if lt.read_text("/proc/%d/comm" % kid).strip() == "systemd":
                    self.pid1 = kid
            if self.pid1 is not None:
                r = self.run("systemctl", "is-system-running", check=False)
                if r.stdout.strip() in ("running", "degraded"):
                    return
            time.sleep(0.1)
        raise AssertionError("the container's systemd did not reach running: "
                             + self.log_tail())

    def log_tail(self):
        try:
            with open(self.logpath, errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def run(self, *argv, check=True, timeout=60):
        r = subprocess.run(["nsenter", "-t", str(self.pid1), "-a"] +
                           list(argv), capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("%s: exit %d\n%s%s" % (
                " ".join(argv), r.returncode, r.stdout, r.stderr))
        return r

    def path(self, p):
        """p inside the container, as the host reaches it."""
        return "/proc/%d/root%s" % (self.pid1, p)

    def write(self, p, text):
        os.makedirs(os.path.dirname(self.path(p)), exist_ok=True)
        with open(self.path(p), "w") as f:
            f.write(text)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)   # halts the container
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.cgroup and os.path.isdir(self.cgroup):
            for _ in range(100):
                try:
                    with open(os.path.join(self.cgroup, "cgroup.procs")) as f:
                        pids = [int(x) for x in f.read().split()]
                except OSError:
                    break
                if not pids:
                    break
                for p in pids:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.05)
            # the container's own sub-cgroups first
            for d, _, _ in sorted(os.walk(self.cgroup), reverse=True):
                try:
                    os.rmdir(d)
                except OSError:
                    pass


class SystemdLodged(lt.Lodged):
    """The harness's client side, pointed at lodged.service's instance in
    the container (started and stopped by systemctl, not by the harness)."""

    def __init__(self, container, port):
        super().__init__()
        shutil.rmtree(self.rundir, ignore_errors=True)
        self.c = container
        self.port = port
        self.rundir = container.path("/run/lodge")

    def read_token(self):
        with open(os.path.join(self.rundir, "token")) as f:
            self.token = f.read().strip()
        return self.token

    def stop(self):
        pass


class TestSystemdBoot(lt.LodgeTestMixin, unittest.IsolatedAsyncioTestCase):

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (systemd-nspawn)")
        for tool in ("systemd-nspawn", "debootstrap", "nsenter"):
            if shutil.which(tool) is None:
                raise AssertionError("%s is missing (contrib/deps.sh test)"
                                     % tool)
        subprocess.run(["sh", os.path.join(SRCDIR, "contrib",
                                           "nspawn-root.sh"), ROOT],
                       check=True, stdout=subprocess.DEVNULL, timeout=900)
        cls.tmp = tempfile.mkdtemp(prefix="lodge-nspawn-")
        dest = os.path.join(cls.tmp, "inst")
        subprocess.run(["make", "-s", "-C", BUILDDIR, "install",
                        "DESTDIR=" + dest], check=True, timeout=300,
                       stdout=subprocess.DEVNULL)
        cls.usr_local = os.path.join(dest, "usr", "local")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.c = Container(ROOT, self.usr_local,
                           os.path.join(self.tmp, "nspawn-%s.log" % self.id()))
        self.addCleanup(self.c.stop)
        await asyncio.get_running_loop().run_in_executor(None, self.c.start)
        self.port = lt.free_port()
        self.sport = lt.free_port()
        self.c.write("/etc/systemd/system/lodged.service.d/test.conf",
                     "[Service]\nExecStart=\nExecStart=/usr/local/sbin/lodged"
                     " --foreground --runtime-dir /run/lodge --listen "
                     "127.0.0.1:%d\n" % self.port)
        self.c.write("/etc/systemd/system/lodged.socket.d/test.conf",
                     "[Socket]\nListenStream=\nListenStream=127.0.0.1:%d\n"
                     % self.sport)
        self.c.run("systemctl", "daemon-reload")
        self.d = SystemdLodged(self.c, self.port)

    def systemctl(self, *args, check=True):
        return self.c.run("systemctl", *args, check=check)

    def main_pid(self):
        return int(self.systemctl("show", "-P", "MainPID",
                                  "lodged.service").stdout)

    def wait_active(self, old_pid=None):
        def ok():
            st = self.systemctl("is-active", "lodged.service",
                                check=False).stdout.strip()
            return st == "active" and self.main_pid() not in (0, old_pid)
        lt.wait_for(ok, timeout=30, what="lodged.service active")
        self.d.read_token()
        lt.wait_for(lambda: self.health() == 200, timeout=10,
                    what="health on TCP")

    def health(self):
        try:
            return self.d.request("GET", "/v1/health", timeout=5).status
        except OSError:
            return None

    def journal(self):
        r = self.c.run("journalctl", "-u", "lodged.service", "-o", "json",
                       "--no-pager")
        return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]

    async def test_start_notify_journal(self):
        """systemctl start reaches active through Type=notify (start
        returns only after READY=1); health answers on TCP and on the Unix
        socket; the journal holds the start-up lines at priority info, with
        no name or pid of lodged's own in the text."""
        self.systemctl("start", "lodged.service")
        self.assertEqual(self.systemctl("show", "-P", "Type",
                                        "lodged.service").stdout.strip(),
                         "notify")
        # start returned: READY=1 came, so the listeners are up now
        self.d.read_token()
        self.assertEqual(self.d.request("GET", "/v1/health").status, 200)
        r = self.d.unix_request("GET", "/v1/health")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual(r.json()["status"], "ok")
        lines = [j for j in self.journal()
                 if j.get("_PID") == str(self.main_pid())]
        msgs = {j["MESSAGE"]: j["PRIORITY"] for j in lines}
        want = "listening on 127.0.0.1:%d" % self.port
        self.assertIn(want, msgs, msgs)
        self.assertEqual(msgs[want], "6")
        # systemctl reload reads RUNDIR/token again: a rotated token
        tok = self.c.path("/run/lodge/token")
        with open(tok + ".new", "w") as f:
            f.write("rotated-by-the-operator-0123\n")
        os.chmod(tok + ".new", 0o600)
        os.replace(tok + ".new", tok)
        self.systemctl("reload", "lodged.service")
        lt.wait_for(lambda: self.d.request(
            "GET", "/v1/sessions",
            token="rotated-by-the-operator-0123").status == 200,
            timeout=10, what="the rotated token to work")
        self.assertEqual(self.systemctl("is-active", "lodged.service")
                         .stdout.strip(), "active")

    async def test_sessions_survive_restart_and_kill(self):
        """Sessions survive systemctl restart and systemctl kill -s KILL
        (then Restart=on-failure) with their ids, pids and rings; a client
        attached throughout keeps its offsets contiguous."""
        self.systemctl("start", "lodged.service")
        self.wait_active()
        counter = ("i=0; while :; do echo line $i; i=$((i+1)); "
                   "sleep 0.02; done")
        s = self.d.json("POST", "/v1/sessions",
                        {"name": "counter", "command": counter}, expect=201)
        cat = self.d.json("POST", "/v1/sessions",
                          {"name": "cat", "args": ["cat"], "pty": True},
                          expect=201)
        ws = await lt.WSClient.connect(self.d, s["id"])
        await ws.handshake()
        await ws.wait_output(b"line 5")
        for how in (("restart", "lodged.service"),
                    ("kill", "-s", "KILL", "lodged.service")):
            old = self.main_pid()
            self.systemctl(*how)
            await asyncio.get_running_loop().run_in_executor(
                None, self.wait_active, old)
            mark = ws.end_offset
            await ws.wait_output(b"line", since=mark)
            got = {x["id"]: x for x in self.d.json(
                "GET", "/v1/sessions")["sessions"]}
            self.assertEqual(set(got), {s["id"], cat["id"]}, how)
            self.assertEqual(got[s["id"]]["pid"], s["pid"], how)
            self.assertEqual(got[cat["id"]]["pid"], cat["pid"], how)
            self.assertEqual(got[s["id"]]["state"], "running", how)
        # the client saw one contiguous stream (WSClient checks offsets)
        out = ws.output
        self.assertTrue(out.startswith(b"line 0\n"), out[:40])
        nums = [int(x.split()[1]) for x in out.decode().splitlines()[:-1]]
        self.assertEqual(nums, list(range(len(nums))))
        # and the ring still holds the first lines
        st, hdrs, body = self.d.request("GET", "/v1/sessions/counter/log")
        self.assertEqual(st, 200)
        self.assertTrue(body.startswith(b"line 0\n"), body[:40])
        await ws.close()
        # the workers run in a scope of their own, not in the service
        with open("/proc/%d/cgroup" % self.worker_host_pid(s)) as f:
            cg = f.read()
        self.assertIn("lodge-workers-", cg)
        self.assertNotIn("lodged.service", cg)

    def worker_host_pid(self, s):
        """The host pid of the session's worker: the parent of its child,
        whose container pid the session object gives."""
        r = self.c.run("ps", "-o", "ppid=", "-p", str(s["pid"]))
        wpid = int(r.stdout)
        for p in lt.descendants_of(self.c.pid1):
            try:
                with open("/proc/%d/status" % p) as f:
                    for line in f:
                        if line.startswith("NSpid:"):
                            if int(line.split()[-1]) == wpid:
                                return p
            except OSError:
                pass
        raise AssertionError("worker of %s not found" % s["id"])

    async def test_stop_keeps_sessions(self):
        """systemctl stop lodged stops the front only (lodged(8)): sessions
        run on in their scope and the next start finds them; stopping the
        scope ends them."""
        self.systemctl("start", "lodged.service")
        self.wait_active()
        s = self.d.json("POST", "/v1/sessions",
                        {"name": "keep", "args": ["sleep", "600"]},
                        expect=201)
        self.systemctl("stop", "lodged.service")
        self.assertNotEqual(self.health(), 200)
        self.assertEqual(self.c.run("kill", "-0", str(s["pid"]),
                                    check=False).returncode, 0)
        self.systemctl("start", "lodged.service")
        self.wait_active()
        got = self.d.json("GET", "/v1/sessions/keep")
        self.assertEqual(got["pid"], s["pid"])
        scopes = self.systemctl("list-units", "--plain", "--no-legend",
                                "lodge-workers-*.scope").stdout
        self.assertIn("lodge-workers-", scopes)
        self.systemctl("stop", "lodge-workers-*.scope")
        lt.wait_for(lambda: self.c.run("kill", "-0", str(s["pid"]),
                                       check=False).returncode != 0,
                    timeout=20, what="session child gone with its scope")

    async def test_watchdog_restarts_a_stuck_front(self):
        """WatchdogSec=: the front's pings from its event loop keep it
        running past many intervals; a front whose loop stops (SIGSTOP)
        misses them and is restarted, its sessions kept."""
        self.c.write("/etc/systemd/system/lodged.service.d/watchdog.conf",
                     "[Service]\nWatchdogSec=4s\nTimeoutAbortSec=2s\n")
        self.c.run("systemctl", "daemon-reload")
        self.systemctl("start", "lodged.service")
        self.wait_active()
        self.assertEqual(self.systemctl("show", "-P", "WatchdogUSec",
                                        "lodged.service").stdout.strip(),
                         "4s")
        s = self.d.json("POST", "/v1/sessions",
                        {"name": "kept", "args": ["sleep", "600"]},
                        expect=201)
        old = self.main_pid()
        # three intervals without a restart: the pings arrive
        await asyncio.sleep(12)
        self.assertEqual(self.main_pid(), old)
        self.assertEqual(self.systemctl("show", "-P", "NRestarts",
                                        "lodged.service").stdout.strip(),
                         "0")
        self.c.run("kill", "-STOP", str(old))
        await asyncio.get_running_loop().run_in_executor(
            None, self.wait_active, old)
        self.assertEqual(self.systemctl("show", "-P", "NRestarts",
                                        "lodged.service").stdout.strip(),
                         "1")
        msgs = [j.get("MESSAGE", "") for j in self.journal()]
        self.assertTrue(any("Watchdog timeout" in m for m in msgs),
                        msgs[-20:])
        got = self.d.json("GET", "/v1/sessions/kept")
        self.assertEqual(got["pid"], s["pid"])
        self.assertEqual(got["state"], "running")

    async def test_socket_activation(self):
        """lodged.socket: the first connection starts the service; the
        socket stays open across a restart of the service."""
        self.systemctl("start", "lodged.socket")
        self.assertEqual(self.systemctl("is-active", "lodged.service",
                                        check=False).stdout.strip(),
                         "inactive")
        self.d.port = self.sport
        # the first connection (unauthenticated: no token yet) starts it
        lt.wait_for(lambda: self.health() is not None, timeout=30,
                    what="an answer on the activation socket")
        self.wait_active()
        old = self.main_pid()
        self.systemctl("restart", "lodged.service")
        self.wait_active(old)
        self.assertEqual(self.systemctl("is-active", "lodged.socket")
                         .stdout.strip(), "active")
        self.assertEqual(self.health(), 200)


UPGRADE_FROM = os.environ.get("LODGE_UPGRADE_FROM", "00296bd")


def install_build(commit, dest, log):
    """Build lodge at commit (from this repository's history) and install
    it under dest/usr/local, as make install would on the machine."""
    src = os.path.join(os.path.dirname(dest), "src-" + commit)
    os.makedirs(src, exist_ok=True)
    archive = subprocess.run(["git", "-C", SRCDIR, "archive", commit],
                             capture_output=True, timeout=120)
    if archive.returncode != 0:
        raise AssertionError("commit %s is not in this clone's history "
                             "(LODGE_UPGRADE_FROM): %s"
                             % (commit, archive.stderr.decode()))
    subprocess.run(["tar", "-x", "-C", src], input=archive.stdout,
                   check=True)
    for argv in (["autoreconf", "-fi"], ["./configure", "-q"],
                 ["make", "-s", "-j2", "lodged", "lodged-worker", "lodge"],
                 ["make", "-s", "install", "DESTDIR=" + dest]):
        subprocess.run(argv, cwd=src, check=True, stdout=log, stderr=log,
                       timeout=600)


class TestUpgrade(TestSystemdBoot):
    """Sessions started by an earlier build's lodged stay reachable after
    the new build is installed over it and the service restarts."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.new_usr_local = cls.usr_local
        old = os.path.join(cls.tmp, "old")
        with open(os.path.join(cls.tmp, "old-build.log"), "wb") as log:
            install_build(UPGRADE_FROM, old, log)
        # the container's /usr/local: the old build now, the new one later
        cls.usr_local = os.path.join(cls.tmp, "usr-local")
        shutil.copytree(os.path.join(old, "usr", "local"), cls.usr_local,
                        symlinks=True)

    def install_new(self):
        """make install of the new build over the old: new files replace
        the old ones (new inodes), as install(1) does."""
        for d, _, files in os.walk(self.new_usr_local):
            rel = os.path.relpath(d, self.new_usr_local)
            os.makedirs(os.path.join(self.usr_local, rel), exist_ok=True)
            for f in files:
                dst = os.path.join(self.usr_local, rel, f)
                tmp = dst + ".new"
                shutil.copy2(os.path.join(d, f), tmp)
                os.replace(tmp, dst)

    # the other tests of the class run against the old build: skip them
    test_start_notify_journal = None
    test_sessions_survive_restart_and_kill = None
    test_stop_keeps_sessions = None
    test_socket_activation = None

    async def test_upgrade_with_live_sessions(self):
        self.systemctl("start", "lodged.service")
        self.wait_active()
        sh = self.d.json("POST", "/v1/sessions", {
            "name": "old-shell", "args": ["sh", "-c", "echo before; "
                                          "exec cat"]}, expect=201)
        pty = self.d.json("POST", "/v1/sessions", {
            "name": "old-pty", "args": ["cat"], "pty": True}, expect=201)
        self.wait_log(sh["id"], "before")
        self.install_new()
        self.c.run("systemctl", "daemon-reload")
        old = self.main_pid()
        self.systemctl("restart", "lodged.service")
        self.wait_active(old)
        health = self.d.json("GET", "/v1/health")
        self.assertIn("protocol", health, "the new build is not running")
        got = {x["id"]: x for x in self.d.json("GET",
                                                "/v1/sessions")["sessions"]}
        self.assertEqual(set(got), {sh["id"], pty["id"]})
        for s in (sh, pty):
            self.assertEqual(got[s["id"]]["pid"], s["pid"])
        # log, attach (replay, input echoed), signal and delete work
        st, _, body = self.d.request("GET", "/v1/sessions/old-shell/log")
        self.assertEqual(st, 200, body)
        self.assertTrue(body.startswith(b"before\n"), body)
        ws = await lt.WSClient.connect(self.d, sh["id"])
        await ws.handshake()
        await ws.stdin(b"after\n")
        await ws.wait_output(b"before\nafter\n")
        r = self.d.request("POST", "/v1/sessions/old-shell/signal",
                           {"signal": "TERM"})
        self.assertEqual(r.status, 204, r.body)
        m = await ws.recv_type("exit")
        self.assertEqual(m["signal"], "TERM")
        r = self.d.request("DELETE", "/v1/sessions/old-pty")
        self.assertEqual(r.status, 204, r.body)
        self.assertEqual(self.d.request(
            "GET", "/v1/sessions/old-pty").status, 404)
        lt.wait_for(lambda: self.c.run("kill", "-0", str(pty["pid"]),
                                       check=False).returncode != 0,
                    timeout=20, what="the deleted session's child gone")


if __name__ == "__main__":
    unittest.main(verbosity=2)

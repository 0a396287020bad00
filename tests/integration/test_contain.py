#!/usr/bin/python3
"""Containment: every process lodged starts ends when it should.

DELETE ends everything a session started (nohup, HUP-ignoring, setsid and
job-control descendants too), an exec timeout and a dropped exec stream
end everything their command started, a command in flight dies with the
front or template that runs it, a session's child dies with its worker,
PATH is looked up as the user, and a non-root peer is held to its own
process limit and to the per-user cap (lodged.8, CONTAINMENT).

Every test runs twice: with a cgroup per session and command (where the
kernel and lodged's cgroup allow it), and with --no-cgroup (the process
tree of a subreaper).  The second class skips nothing; where the tree
guarantees less (a template or worker killed with SIGKILL), it asserts
what it does guarantee.

Run: LODGED=/path/to/lodged /usr/bin/python3 tests/integration/test_contain.py
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

import msgpack

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
from lodgetest import WSClient, proc_exists, proc_stat, wait_for  # noqa: E402

STREAM = "/v1/exec/stream"

# Starts five kinds of descendants that outlive a plain process-group
# kill, each writing its pid to $F (the last line is "ready").
ESCAPERS = r"""
F="$1"
nohup sleep 1001 >/dev/null 2>&1 & echo $! >>"$F"
sh -c 'trap "" HUP TERM; exec sleep 1002' </dev/null >/dev/null 2>&1 &
echo $! >>"$F"
setsid sh -c 'echo $$ >>"$0"; exec sleep 1003' "$F" </dev/null >/dev/null 2>&1 &
( sh -c 'echo $$ >>"$0"; trap "" HUP; exec sleep 1004' "$F" \
    </dev/null >/dev/null 2>&1 & )
set -m
sleep 1005 </dev/null >/dev/null 2>&1 & echo $! >>"$F"
set +m
while [ "$(wc -l <"$F")" -lt 5 ]; do sleep 0.05; done
echo ready >>"$F"
"""
NPIDS = 5

# Forks 30 children (each sleeps 2 s) or until fork fails; prints how many.
FORKER = r"""
import os, time
n = 0
for _ in range(30):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    n += 1
print(n)
"""


def cgroup_v2_usable():
    """As lodged decides: a cgroup2 mount and cgroup.kill, as root."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/mountinfo") as f:
            return any(" - cgroup2 " in line for line in f)
    except OSError:
        return False


def cgroup_base(pid):
    """BASE/lodge for the processes of pid's cgroup, or None."""
    mnt = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if " - cgroup2 " in line:
                mnt = line.split()[4]
    if mnt is None:
        return None
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            if line.startswith("0::/"):
                own = line[3:].strip()
                return os.path.join(mnt + ("" if own == "/" else own),
                                    "lodge")
    return None


def alive(pids):
    return [p for p in pids if proc_exists(p)]


class ContainMixin:
    """Helpers; the classes below give the daemon's arguments."""

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="lodge-contain-")
        os.chmod(self.tmp, 0o777)
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self._pids = []
        self.addCleanup(self._kill_leftovers)

    def _kill_leftovers(self):
        for p in self._pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass

    def pidfile(self, name="pids"):
        path = os.path.join(self.tmp, name)
        with open(path, "w"):
            pass
        os.chmod(path, 0o666)
        return path

    def read_pids(self, path, n=NPIDS, timeout=lt.DEFAULT_TIMEOUT,
                  running=True):
        """Wait for n pids and the "ready" line; return the pids (all
        running, unless running=False)."""
        box = {}

        def ready():
            with open(path) as f:
                lines = f.read().split()
            if "ready" not in lines or len(lines) < n + 1:
                return False
            box["p"] = [int(x) for x in lines if x != "ready"]
            return True
        wait_for(ready, timeout=timeout, what="pids in %s" % path)
        pids = box["p"]
        self._pids.extend(pids)
        if running:
            self.assertEqual(alive(pids), pids, "all started and running")
        return pids

    def wait_gone(self, pids, what, timeout=lt.DEFAULT_TIMEOUT):
        try:
            wait_for(lambda: not alive(pids), timeout=timeout, what=what)
        except AssertionError:
            left = alive(pids)
            raise AssertionError("%s: still running: %s" % (what, [
                (p, lt.read_text("/proc/%d/cmdline" % p))
                for p in left])) from None

    def template_pid(self, d=None):
        d = d or self.d
        for p in lt.children_of(d.proc.pid):
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    if b"template" in f.read():
                        return p
            except OSError:
                pass
        self.fail("no template among the front's children")



# A client run as nobody over the Unix socket: opens N exec streams that
# each run `sleep 60` (with `ulimit -u` applied first, when given) and
# reports what each got.  Then it holds them while a POST /v1/exec is
# tried, and closes them.
NOBODY_STREAMS = r"""
import asyncio, http.client, json, resource, socket, sys
import msgpack, websockets
path, n = sys.argv[1], int(sys.argv[2])
exec_args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else ["true"]
if len(sys.argv) > 4:       # as `ulimit -u` would
    lim = int(sys.argv[4])
    resource.setrlimit(resource.RLIMIT_NPROC, (lim, lim))

class UnixConn(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)

async def one():
    try:
        ws = await websockets.unix_connect(path, "ws://localhost/v1/exec/stream",
                                           open_timeout=30)
    except websockets.exceptions.InvalidStatusCode as e:
        return ws_refused(e), None
    await ws.send(msgpack.packb({"type": "start", "workDir": "/",
                                 "args": ["sleep", "60"]}))
    m = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 30))
    return m, ws

def ws_refused(e):
    return {"type": "refused", "status": e.status_code}

async def main():
    got, open_ = [], []
    for _ in range(n):
        m, ws = await one()
        got.append({"type": m["type"], "code": m.get("code"),
                    "status": m.get("status"),
                    "message": m.get("message")})
        if ws is not None:
            open_.append(ws)
    c = UnixConn("localhost", timeout=60)
    c.request("POST", "/v1/exec", json.dumps({"args": exec_args,
                                              "workDir": "/"}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    body = json.loads(r.read() or b"{}")
    for ws in open_:
        await ws.close()
    print(json.dumps({"streams": got, "exec": [r.status, body]}))

asyncio.run(main())
"""


class ContainTests(ContainMixin):

    # ------------------------------------------------ DELETE

    async def test_delete_ends_every_descendant(self):
        f = self.pidfile()
        s = self.create({"args": ["sh", "-c", ESCAPERS + "exec sleep 1000",
                                  "sh", f]})
        pids = self.read_pids(f)
        r = self.d.request("DELETE", lt.sess_path(s["id"]), timeout=60)
        self.assertEqual(r.status, 204, r)
        # 204 only once all are gone: no waiting here
        self.assertEqual(alive(pids), [], "after DELETE's 204")

    async def test_delete_of_an_exited_session_ends_its_leftovers(self):
        f = self.pidfile()
        s = self.create({"args": ["sh", "-c", ESCAPERS, "sh", f]})
        pids = self.read_pids(f)
        self.wait_state(s["id"], "exited")
        self.assertEqual(alive(pids), pids, "they outlive the child")
        r = self.d.request("DELETE", lt.sess_path(s["id"]), timeout=60)
        self.assertEqual(r.status, 204, r)
        self.assertEqual(alive(pids), [], "after DELETE's 204")

    async def test_delete_of_a_pty_session(self):
        f = self.pidfile()
        s = self.create({"args": ["sh", "-c", ESCAPERS + "exec sleep 1000",
                                  "sh", f], "pty": True})
        pids = self.read_pids(f)
        r = self.d.request("DELETE", lt.sess_path(s["id"]), timeout=60)
        self.assertEqual(r.status, 204, r)
        self.assertEqual(alive(pids), [], "after DELETE's 204")

    # ------------------------------------------------ exec

    async def test_exec_timeout_ends_every_descendant(self):
        f = self.pidfile()
        r = self.d.request("POST", "/v1/exec", {
            "args": ["sh", "-c", ESCAPERS + "exec sleep 1000", "sh", f],
            "timeoutSeconds": 3}, timeout=60)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["timedOut"], r.json())
        pids = self.read_pids(f, timeout=1, running=False)
        self.wait_gone(pids, "after the exec timeout")

    async def test_exec_without_timeout_ends_leftovers_with_the_call(self):
        f = self.pidfile()
        r = self.d.request("POST", "/v1/exec", {
            "args": ["sh", "-c", ESCAPERS, "sh", f]}, timeout=60)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["exitCode"], 0, r.json())
        pids = self.read_pids(f, timeout=1, running=False)
        if not self.cgroups:
            # The tree cannot find a process that left the command's
            # session and whose parent exited before the call ended: it
            # went to init (lodged.8, CONTAINMENT).
            left = [p for p in pids if lt.read_text(
                "/proc/%d/cmdline" % p) == "sleep\x001003\x00"]
            self.assertEqual(len(left), 1, "the setsid orphan")
            pids = [p for p in pids if p not in left]
        self.wait_gone(pids, "after the exec reply")

    async def test_exec_stream_drop_ends_every_descendant(self):
        f = self.pidfile()
        c = await WSClient.open(self.d, STREAM, {}, {
            "Authorization": "Bearer " + self.d.token}, "exec")
        await c.send({"type": "start", "args": [
            "sh", "-c", ESCAPERS + "exec sleep 1000", "sh", f]})
        m = await c.recv()
        self.assertEqual(m["type"], "started", m)
        pids = self.read_pids(f) + [m["pid"]]
        self._pids.append(m["pid"])
        c.ws.transport.abort()      # dropped, no close handshake
        await asyncio.sleep(0.2)    # the loop closes the socket
        self.wait_gone(pids, "after the stream dropped")

    async def test_exec_stream_end_ends_leftovers(self):
        f = self.pidfile()
        c = await WSClient.open(self.d, STREAM, {}, {
            "Authorization": "Bearer " + self.d.token}, "exec")
        self.addAsyncCleanup(c.close)
        await c.send({"type": "start", "args": ["sh", "-c", ESCAPERS,
                                                "sh", f]})
        m = await c.recv_type("exit")
        self.assertEqual(m["exitCode"], 0, m)
        pids = self.read_pids(f, timeout=1, running=False)
        self.wait_gone(pids, "after the stream's exit")

    # ------------------------------------------------ the front and template

    def exec_in_flight(self):
        """A daemon of its own running a 12 s exec with a 3 s timeout (the
        command's pid last in the pid file): (d, pidfile, call, pids)."""
        f = self.pidfile()
        d = self.start_daemon(extra_args=self.daemon_args)
        loop = asyncio.get_running_loop()
        call = loop.run_in_executor(None, lambda: d.request(
            "POST", "/v1/exec", {"args": ["sh", "-c", ESCAPERS +
                                          "echo $$ >>\"$1\"; sleep 12",
                                          "sh", f],
                                 "timeoutSeconds": 3}, timeout=60))
        return d, f, call, self.read_pids(f, n=NPIDS + 1)

    async def test_exec_in_flight_dies_with_the_front(self):
        d, f, call, pids = self.exec_in_flight()
        d.kill9()
        try:
            await call
        except Exception:
            pass        # the connection died with the front
        self.wait_gone(pids, "after the front was killed")

    async def test_exec_in_flight_dies_with_front_and_template(self):
        d, f, call, pids = self.exec_in_flight()
        with open(f) as fh:
            command = int([x for x in fh.read().split() if x != "ready"][-1])
        template = self.template_pid(d)
        os.kill(template, signal.SIGKILL)
        d.kill9()
        try:
            await call
        except Exception:
            pass
        # the command itself: its parent-death signal
        self.wait_gone([command], "the command after its template died")
        d.restart()
        if self.cgroups:
            # the rest: the new template sweeps the dead one's groups
            self.wait_gone(pids, "after a new template started")

    async def test_worker_sigkill_takes_child_and_descendants(self):
        f = self.pidfile()
        s = self.create({"args": ["sh", "-c", ESCAPERS +
                                  "echo $$ >>\"$1\"; exec sleep 1000",
                                  "sh", f]})
        pids = self.read_pids(f, n=NPIDS + 1)
        child = s["pid"]
        worker = proc_stat(child)["ppid"]
        self.assertIn(b"session", open("/proc/%d/cmdline" % worker,
                                       "rb").read())
        os.kill(worker, signal.SIGKILL)
        self.wait_gone([child], "the child after its worker was killed")
        if self.cgroups:
            self.wait_gone(pids, "the descendants after the worker was "
                           "killed")
            group = os.path.join(cgroup_base(self.template_pid()),
                                 "s%d" % worker)
            wait_for(lambda: not os.path.isdir(group),
                     what="%s removed" % group)

    async def test_groups_are_removed(self):
        template = self.template_pid()
        base = cgroup_base(template)
        # a session deleted, an exec call that leaves processes behind, an
        # exec stream: each group goes once its processes have
        s = self.create({"args": ["sleep", "1000"]})
        worker = proc_stat(s["pid"])["ppid"]
        group = os.path.join(base or "/nonexistent", "s%d" % worker)
        self.assertEqual(os.path.isdir(group), self.cgroups, group)
        r = self.d.request("DELETE", lt.sess_path(s["id"]), timeout=60)
        self.assertEqual(r.status, 204, r)
        r = self.d.request("POST", "/v1/exec", {
            "args": ["sh", "-c", "nohup sleep 1000 >/dev/null 2>&1 &"]})
        self.assertEqual(r.status, 200, r)
        c = await WSClient.open(self.d, STREAM, {}, {
            "Authorization": "Bearer " + self.d.token}, "exec")
        await c.send({"type": "start", "args": ["sleep", "0.5"]})
        m = await c.recv_type("started")
        stream = proc_stat(m["pid"])["ppid"]
        m = await c.recv_type("exit")
        self.assertEqual(m["exitCode"], 0, m)
        await c.close()
        mine = ("s%d" % worker, "t%d" % stream)

        def ours():
            try:
                names = os.listdir(base) if base else []
            except FileNotFoundError:
                names = []
            return [n for n in names if n in mine or
                    n.startswith("x%d." % template)]
        wait_for(lambda: not ours(), what="the groups removed (%s: %s)"
                 % (base, ours()))

    # ------------------------------------------------ PATH as the user

    async def test_exec_path_lookup_as_the_user(self):
        hidden = tempfile.mkdtemp(prefix="lodge-hidden-")
        self.addCleanup(shutil.rmtree, hidden, ignore_errors=True)
        os.chmod(hidden, 0o700)
        prog = os.path.join(hidden, "lodge-secret-prog")
        with open(prog, "w") as fh:
            fh.write("#!/bin/sh\necho secret\n")
        os.chmod(prog, 0o755)
        env = {"PATH": hidden + ":/usr/bin:/bin"}

        def run(name):
            r = self.d.request("POST", "/v1/exec", {
                "args": [name], "user": "nobody", "workDir": "/",
                "env": env})
            self.assertEqual(r.status, 422, r)
            e = r.json()["error"]
            self.assertEqual(e["code"], "spawn_failed", e)
            return e["message"].replace(name, "NAME")
        there = run("lodge-secret-prog")
        missing = run("lodge-no-such-prog")
        self.assertEqual(there, missing, "the reply tells whether a file "
                         "exists in a directory the user cannot read")
        # and root still finds it, by the same PATH
        r = self.d.request("POST", "/v1/exec", {"args": ["lodge-secret-prog"],
                                                "env": env})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["stdout"], "secret\n")

    async def test_session_path_lookup_as_the_user_too(self):
        hidden = tempfile.mkdtemp(prefix="lodge-hidden-")
        self.addCleanup(shutil.rmtree, hidden, ignore_errors=True)
        os.chmod(hidden, 0o700)
        env = {"PATH": hidden + ":/usr/bin:/bin"}
        r = self.d.request("POST", "/v1/sessions", {
            "args": ["lodge-no-such-prog"], "user": "nobody",
            "workDir": "/", "env": env})
        self.assertEqual(r.status, 422, r)
        self.assertIn("cannot execute 'lodge-no-such-prog'",
                      r.json()["error"]["message"])

    # ------------------------------------------------ limits of a peer

    def open_unix_socket_to_nobody(self):
        os.chmod(self.d.rundir, 0o755)
        os.chmod(self.d.sock_path, 0o666)

    async def test_nobody_is_held_to_its_own_process_limit(self):
        self.open_unix_socket_to_nobody()
        limit, tries = 12, 30
        p = subprocess.run(
            ["/usr/bin/python3", "-c", NOBODY_STREAMS, self.d.sock_path,
             str(tries), json.dumps(["/usr/bin/python3", "-c", FORKER]),
             str(limit)],
            user=65534, group=65534, extra_groups=[], cwd="/",
            capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        out = json.loads(p.stdout)
        started = [m for m in out["streams"] if m["type"] == "started"]
        refused = [m for m in out["streams"] if m["type"] != "started"]
        self.assertLess(len(started), limit,
                        "more processes than `ulimit -u %d` allows: %r"
                        % (limit, out))
        self.assertGreater(len(started), 0, out)
        self.assertTrue(refused, out)
        for m in refused:
            self.assertEqual((m["type"], m["code"]), ("error",
                                                      "spawn_failed"), m)
            self.assertIn("Resource temporarily unavailable",
                          m["message"], m)
        # a POST /v1/exec that forks, while the streams are held: it
        # cannot start, or cannot fork past the limit
        status, body = out["exec"]
        if status == 200:
            self.assertLess(int(body["stdout"]), limit, body)
        else:
            self.assertEqual((status, body["error"]["code"]),
                             (422, "spawn_failed"), body)
            self.assertIn("Resource temporarily unavailable",
                          body["error"]["message"])

    async def test_per_user_cap_on_execs_and_streams(self):
        d = self.start_daemon(extra_args=self.daemon_args +
                              ("--max-execs-per-user", "3"))
        os.chmod(d.rundir, 0o755)
        os.chmod(d.sock_path, 0o666)
        p = subprocess.run(
            ["/usr/bin/python3", "-c", NOBODY_STREAMS, d.sock_path, "5"],
            user=65534, group=65534, extra_groups=[], cwd="/",
            capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        out = json.loads(p.stdout)
        kinds = [m["type"] for m in out["streams"]]
        self.assertEqual(kinds, ["started"] * 3 + ["refused"] * 2, out)
        self.assertEqual([m["status"] for m in out["streams"][3:]],
                         [503, 503], out)
        self.assertEqual(out["exec"][0], 503, out)
        self.assertEqual(out["exec"][1]["error"]["code"], "unavailable")
        self.assertIn("at most 3", out["exec"][1]["error"]["message"])
        # root is not capped: four at once over TCP
        loop = asyncio.get_running_loop()
        calls = [loop.run_in_executor(None, lambda: d.request(
            "POST", "/v1/exec", {"args": ["sleep", "1"]}, timeout=60))
            for _ in range(4)]
        for r in await asyncio.gather(*calls):
            self.assertEqual(r.status, 200, r)
        # the streams closed: nobody may run again
        p = subprocess.run(
            ["/usr/bin/python3", "-c", NOBODY_STREAMS, d.sock_path, "1"],
            user=65534, group=65534, extra_groups=[], cwd="/",
            capture_output=True, timeout=120)
        out = json.loads(p.stdout)
        self.assertEqual([m["type"] for m in out["streams"]], ["started"],
                         out)


class TestContainCgroup(ContainTests, lt.DaemonPerClass):
    """A cgroup per session and command."""
    daemon_args = ()
    cgroups = True

    @classmethod
    def setUpClass(cls):
        if not cgroup_v2_usable():
            raise AssertionError("this machine has no cgroup v2: run "
                                 "TestContainTree only")
        super().setUpClass()


class TestContainTree(ContainTests, lt.DaemonPerClass):
    """--no-cgroup: the subreaper's tree."""
    daemon_args = ("--no-cgroup",)
    cgroups = False


if __name__ == "__main__":
    lt.main()

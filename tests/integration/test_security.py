#!/usr/bin/python3
"""Security (lodged(8) SECURITY CONSIDERATIONS,
FILES, Runtime directory): the token file's mode, the 401 reply that is
the same for every wrong token, modes and owners in RUNDIR, session ids,
a session's worker running as the session's user, children that inherit
no descriptor of lodged's, --no-auth off loopback, --allow-origin, and
the Unix-socket peer rules (a client run as nobody).

Run: LODGED=$PWD/lodged /usr/bin/python3 tests/integration/test_security.py
"""

import asyncio
import grp
import json
import os
import re
import random
import shutil
import stat
import string
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
import reliability as rl  # noqa: E402
from lodgetest import WSClient, sess_path, wait_for  # noqa: E402

NOBODY = rl.NOBODY_UID
NOGROUP = grp.getgrnam("nogroup").gr_gid


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def token_file(content, perm):
    fd, path = tempfile.mkstemp(prefix="lodge-test-tok-")
    os.write(fd, content)
    os.close(fd)
    os.chmod(path, perm)
    return path


# ------------------------------------------------------------ start-up

class TestStartupRefusals(lt.LodgeTestMixin,
                          unittest.IsolatedAsyncioTestCase):

    async def test_token_file_readable_by_others_is_refused(self):
        tok = b"0123456789abcdef-secret-token\n"
        for perm in (0o644, 0o640, 0o604, 0o660, 0o606, 0o620, 0o602):
            path = token_file(tok, perm)
            self.addCleanup(os.unlink, path)
            rc, out = rl.run_lodged_briefly([
                "--foreground", "--listen", "127.0.0.1:%d" % lt.free_port(),
                "--runtime-dir", "{rundir}", "--token-file", path])
            self.assertIsNotNone(rc, "lodged started with a token file of "
                                 "mode %o" % perm)
            self.assertEqual(rc, 1, "mode %o: exit %s, %r" % (perm, rc, out))
            self.assertIn(os.path.basename(path), out,
                          "mode %o: the refusal does not name the file: %r"
                          % (perm, out))
        # a symbolic link to a good file is refused too
        good = token_file(tok, 0o600)
        self.addCleanup(os.unlink, good)
        link = good + ".link"
        os.symlink(good, link)
        self.addCleanup(os.unlink, link)
        rc, out = rl.run_lodged_briefly([
            "--foreground", "--listen", "127.0.0.1:%d" % lt.free_port(),
            "--runtime-dir", "{rundir}", "--token-file", link])
        self.assertEqual(rc, 1, out)
        self.assertTrue(out.strip())
        # too short a token
        short = token_file(b"short\n", 0o600)
        self.addCleanup(os.unlink, short)
        rc, out = rl.run_lodged_briefly([
            "--foreground", "--listen", "127.0.0.1:%d" % lt.free_port(),
            "--runtime-dir", "{rundir}", "--token-file", short])
        self.assertEqual(rc, 1, out)
        # mode 0600: it starts and the token works
        d = self.start_daemon(token_file=good)
        self.assertEqual(d.token, "0123456789abcdef-secret-token")
        self.assertEqual(d.request("GET", "/v1/health").status, 200)

    async def test_generated_token_file_readable_by_others_is_refused(self):
        rundir = tempfile.mkdtemp(prefix="lodge-test-sec-")
        self.addCleanup(shutil.rmtree, rundir, True)
        path = os.path.join(rundir, "token")
        with open(path, "w") as f:
            f.write("a-token-of-sufficient-length-0123\n")
        os.chmod(path, 0o644)
        p = subprocess.run(
            [lt.LODGED, "--foreground", "--listen",
             "127.0.0.1:%d" % lt.free_port(), "--runtime-dir", rundir],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=15,
            env=dict({k: v for k, v in os.environ.items()
                      if k != "LODGE_TOKEN"}, LODGE_TEST_RUNDIR=rundir))
        lt.reap_rundir(rundir)
        self.assertEqual(p.returncode, 1, p)
        self.assertTrue((p.stdout + p.stderr).strip())

    async def test_no_auth_refused_off_loopback(self):
        for listens in (["0.0.0.0:%d" % lt.free_port()],
                        ["[::]:%d" % lt.free_port()],
                        ["127.0.0.1:%d" % lt.free_port(),
                         "0.0.0.0:%d" % lt.free_port()]):
            args = ["--foreground", "--no-auth", "--runtime-dir", "{rundir}"]
            for x in listens:
                args += ["--listen", x]
            rc, out = rl.run_lodged_briefly(args)
            self.assertIsNotNone(rc, "--no-auth on %s kept running" % listens)
            self.assertNotEqual(rc, 0, out)
            self.assertIn("no-auth", out, "no message naming --no-auth: %r"
                          % out)
        # and without --no-auth, 0.0.0.0 is fine (with the token)
        d = self.start_daemon(extra_args=["--listen", "0.0.0.0:%d"
                                          % lt.free_port()])
        self.assertEqual(d.request("GET", "/v1/health").status, 200)
        self.assertEqual(d.request("GET", "/v1/health", token=None).status,
                         401)
        # on loopback (--listen localhost too) it is accepted
        d2 = self.start_daemon(extra_args=["--no-auth", "--listen",
                                           "localhost:%d" % lt.free_port()],
                               auth=False)
        self.assertEqual(d2.request("GET", "/v1/health", token=None).status,
                         200)


# ------------------------------------------------------------ tokens

class TestToken(lt.DaemonPerClass):

    def test_wrong_tokens_of_every_length_get_the_same_401(self):
        d = self.d
        real = d.token
        self.assertEqual(len(real), 64)
        base = d.request("GET", "/v1/sessions", token=None)
        self.assertError(base, 401, "unauthorized")
        rng = random.Random(5)
        wrong = [""]
        for n in range(1, 150):
            wrong.append("".join(rng.choice(string.ascii_letters +
                                            string.digits) for _ in range(n)))
        for k in range(len(real)):      # right length, one byte off
            c = "0" if real[k] != "0" else "1"
            wrong.append(real[:k] + c + real[k + 1:])
        wrong += [real[:-1], real + "0", real.upper() if real.upper() != real
                  else real.lower(), real + " x", real + "x" * 200]

        def strip(h):
            return {k: v for k, v in h.items() if k not in ("date",)}
        for i, w in enumerate(wrong):
            for where in ("header", "query"):
                if where == "header":
                    r = d.request("GET", "/v1/sessions", token=None,
                                  headers={"Authorization": "Bearer " + w})
                else:
                    r = d.request("GET", "/v1/sessions?access_token=" +
                                  urllib.parse.quote(w), token=None)
                self.assertEqual(r.status, 401, (i, len(w), where, r))
                self.assertEqual(r.body, base.body, (i, len(w), where))
                self.assertEqual(strip(r.headers), strip(base.headers),
                                 (i, len(w), where))
        for h in ({"Authorization": "Bearer"},
                  {"Authorization": "Bearer "},
                  {"Authorization": "Basic " + real},
                  {"Authorization": real},
                  {"Authorization": "Token " + real}):
            r = d.request("GET", "/v1/sessions", token=None, headers=h)
            self.assertEqual((r.status, r.body), (401, base.body), h)
        # the scheme is not case-sensitive; the right token works
        for scheme in ("Bearer", "bearer", "BEARER"):
            r = d.request("GET", "/v1/sessions", token=None,
                          headers={"Authorization": scheme + " " + real})
            self.assertEqual(r.status, 200, (scheme, r))
        r = d.request("GET", "/v1/sessions?access_token=" + real, token=None)
        self.assertEqual(r.status, 200, r)
        r = d.request("GET", "/v1/sessions?access_token=%20" + real,
                      token=None)
        self.assertEqual((r.status, r.body), (401, base.body))

    async def test_wrong_tokens_on_upgrades(self):
        d = self.d
        s = self.create({"args": ["cat"]})
        path = sess_path(s["id"], "/attach")
        st0, body0 = await lt.ws_refused(d, path)
        self.assertEqual(st0, 401)
        for w in ("x", d.token[:-1], d.token[:-1] + "g", d.token + "0",
                  "y" * 200):
            st, body = await lt.ws_refused(
                d, path, headers={"Authorization": "Bearer " + w})
            self.assertEqual((st, body), (401, body0), w)
            st, body = await lt.ws_refused(d, "/v1/exec/stream",
                                           query={"access_token": w})
            self.assertEqual((st, body), (401, body0), w)


# ------------------------------------------------- files, ids, processes

class TestRuntimeFiles(lt.DaemonPerClass):

    def test_rundir_and_socket_modes(self):
        d = self.d
        st = os.stat(d.rundir)
        self.assertEqual(mode(d.rundir), 0o711)
        self.assertEqual(st.st_uid, 0)
        tok = os.path.join(d.rundir, "token")
        self.assertEqual(mode(tok), 0o600)
        self.assertEqual(os.stat(tok).st_uid, 0)
        self.assertTrue(stat.S_ISREG(os.lstat(tok).st_mode))
        sock = d.sock_path
        self.assertTrue(stat.S_ISSOCK(os.lstat(sock).st_mode))
        self.assertEqual(mode(sock), 0o660)
        self.assertEqual(os.stat(sock).st_uid, 0)
        self.assertEqual(os.stat(sock).st_gid, os.getegid())
        sdir = os.path.join(d.rundir, "sessions")
        self.assertEqual(mode(sdir), 0o711)
        self.assertEqual(os.stat(sdir).st_uid, 0)
        mine = self.create({"args": ["sleep", "1000"]})
        other = self.create({"args": ["sleep", "1000"], "user": "nobody",
                             "workDir": "/tmp"})
        for s, uid in ((mine, 0), (other, NOBODY)):
            p = d.session_sock(s["id"])
            self.assertTrue(stat.S_ISSOCK(os.lstat(p).st_mode))
            self.assertEqual(mode(p), 0o600, p)
            self.assertEqual(os.stat(p).st_uid, uid, p)
        # every file in RUNDIR is one of those
        self.assertEqual(sorted(os.listdir(d.rundir)),
                         ["lodged.sock", "registry", "sessions", "token"])
        self.assertEqual(sorted(os.listdir(sdir)),
                         sorted([mine["id"] + ".sock",
                                 other["id"] + ".sock"]))
        # the front's records: its own, closed to everyone else
        rdir = os.path.join(d.rundir, "registry")
        self.assertEqual(mode(rdir), 0o700)
        self.assertEqual(os.stat(rdir).st_uid, 0)
        self.assertEqual(sorted(os.listdir(rdir)),
                         sorted(s["id"] + ext for s in (mine, other)
                                for ext in (".json", ".sock")))
        for s in (mine, other):
            rec = os.path.join(rdir, s["id"] + ".json")
            self.assertEqual(mode(rec), 0o600)
            self.assertEqual(os.stat(rec).st_uid, 0)

    async def test_rundir_mode_is_reset_and_socket_group(self):
        # (one writable by others is refused: test_trust.py)
        rundir = tempfile.mkdtemp(prefix="lodge-test-run-")
        os.chmod(rundir, 0o755)
        d = lt.Lodged(extra_args=["--socket-group", "nogroup"])
        os.rmdir(d.rundir)
        os.rename(rundir, d.rundir)
        self._own.append(d)
        d.start()
        self.assertEqual(mode(d.rundir), 0o711, "a present RUNDIR is set "
                         "to 0711")
        self.assertEqual(mode(d.sock_path), 0o660)
        self.assertEqual(os.stat(d.sock_path).st_gid, NOGROUP)
        self.assertEqual(os.stat(d.sock_path).st_uid, 0)
        rc, out = rl.run_lodged_briefly([
            "--foreground", "--listen", "127.0.0.1:%d" % lt.free_port(),
            "--runtime-dir", "{rundir}", "--socket-group",
            "no-such-group-xyz"])
        self.assertEqual(rc, 1, out)
        self.assertIn("no-such-group-xyz", out)

    def test_session_ids(self):
        d = self.d
        ids = []
        for i in range(200):
            r = d.request("POST", "/v1/sessions", {"args": ["true"]})
            self.assertEqual(r.status, 201, r)
            ids.append(r.json()["id"])
            r = d.request("DELETE", sess_path(ids[-1]))
            self.assertEqual(r.status, 204, r)
        for i in ids:
            self.assertRegex(i, r"^[0-9a-f]{32}$")
        self.assertEqual(len(set(ids)), 200, "repeated session ids")
        # 128 random bits: every bit position is set in about half of them
        # (expect 100 of 200, sd 7; a counter or a timestamp fails this)
        for bit in range(128):
            n = sum((int(i, 16) >> bit) & 1 for i in ids)
            self.assertTrue(55 <= n <= 145, "bit %d is set in %d of 200 "
                            "ids" % (bit, n))
        prefixes = {i[:8] for i in ids}
        self.assertEqual(len(prefixes), 200, "ids share prefixes")

    def test_worker_runs_as_the_session_user(self):
        d = self.d
        s = self.create({"args": ["sleep", "1000"], "user": "nobody",
                         "workDir": "/tmp"})
        self.assertEqual(s["user"], "nobody")
        child = s["pid"]
        worker = lt.proc_stat(child)["ppid"]
        self.assertEqual(rl.title(worker), "lodged: session " + s["id"])
        self.assertEqual(rl.uid_line(worker), [NOBODY] * 4,
                         "the worker does not run as nobody")
        self.assertEqual(rl.gid_line(worker), [NOGROUP] * 4)
        self.assertEqual(rl.uid_line(child), [NOBODY] * 4)
        self.assertEqual(rl.gid_line(child), [NOGROUP] * 4)
        # nobody's groups (initgroups): its own group only
        self.assertIn(lt.proc_status(child)["Groups"], ("", str(NOGROUP)),
                      "nobody's process has root's supplementary groups")
        self.assertIn(lt.proc_status(worker)["Groups"], ("", str(NOGROUP)))
        self.assertEqual(lt.proc_status(worker)["CapEff"],
                         "0000000000000000", "the worker kept capabilities")
        sock = d.session_sock(s["id"])
        self.assertEqual(os.stat(sock).st_uid, NOBODY)
        self.assertEqual(mode(sock), 0o600)
        # a root session's worker stays root
        r = self.create({"args": ["sleep", "1000"]})
        self.assertEqual(rl.uid_line(lt.proc_stat(r["pid"])["ppid"])[0], 0)

    def test_process_titles(self):
        d = self.d
        s = self.create({"args": ["sleep", "1000"], "name": "titled"})
        worker = lt.proc_stat(s["pid"])["ppid"]
        tmpl = rl.template_pid(d.proc.pid)
        for pid, want in ((d.proc.pid, "lodged: front"),
                          (tmpl, "lodged: template"),
                          (worker, "lodged: session %s titled" % s["id"])):
            ps = subprocess.run(["ps", "-o", "args=", "-p", str(pid)],
                                capture_output=True, text=True).stdout.strip()
            # libbsd's setproctitle leaves a '.' where the original
            # arguments ended, after the padding; the title is the rest.
            ps = re.sub(r"\s+\.$", "", ps)
            self.assertEqual(ps, want, "ps shows %r for %d" % (ps, pid))


class TestNoInheritedFds(lt.DaemonPerClass):
    """Every process started for a client has fds 0, 1 and 2 only, and no
    token in its environment."""

    daemon_env = {"LODGE_TOKEN": "env-token-must-not-leak-0123456789"}

    @classmethod
    def setUpClass(cls):
        super(lt.DaemonPerClass, cls).setUpClass()
        cls.d = lt.Lodged(env=cls.daemon_env)
        try:
            cls.d.start()
        except BaseException:
            cls.d.stop()
            raise

    # x86_64 and aarch64 numbers of the calls a finished startup waits in
    WAITING = {"35", "230", "61", "101", "260", "115"}

    def check_fds(self, pid, what):
        # The program opens files of its own while it starts (the loader a
        # library, sleep's setlocale a locale file: seen here between two
        # reads of its fds), so its fds are read once it has started and
        # waits: sleep in clock_nanosleep, a shell in wait4.  An inherited
        # descriptor would be there still.
        def waiting():
            try:
                with open("/proc/%d/syscall" % pid) as f:
                    return f.read().split()[0] in self.WAITING
            except (OSError, IndexError):
                return False
        wait_for(waiting, 30, what="%s: to wait in a sleep or wait4" % what)
        self.assertEqual(rl.fd_list(pid), [0, 1, 2], "%s: fds %r" % (
            what, rl.fd_links(pid)))
        env = lt.proc_environ(pid) or {}
        self.assertNotIn("LODGE_TOKEN", env, what)
        for v in env.values():
            self.assertNotIn(self.daemon_env["LODGE_TOKEN"], v, what)
        self.assertNotIn("LODGE_TEST_RUNDIR", env, what)

    def test_session_children(self):
        for body in ({"args": ["sleep", "1000"]},
                     {"args": ["sleep", "1000"], "pty": True},
                     {"command": "exec sleep 1000"},
                     {"args": ["sleep", "1000"], "user": "nobody",
                      "workDir": "/tmp"}):
            s = self.create(body)
            wait_for(lambda: rl.title(s["pid"]) == "sleep", 10,
                     what="the child to exec")
            self.check_fds(s["pid"], repr(body))
        # the shell's own view
        s = self.create({"command": "ls /proc/$$/fd; exec sleep 1000"})
        self.wait_log(s["id"], r"^0\n1\n2\n$")

    def test_exec_children(self):
        d = self.d
        # "; true": so that the shell cannot exec ls in its own place
        ls = "ls /proc/$$/fd; true"
        for body in ({"command": ls},
                     {"args": ["sh", "-c", ls]},
                     {"args": ["sh", "-c", ls], "stdin": "some input"},
                     {"args": ["sh", "-c", ls], "user": "nobody",
                      "workDir": "/tmp"},
                     {"args": ["sh", "-c", ls], "timeoutSeconds": 30}):
            r = d.json("POST", "/v1/exec", body)
            self.assertEqual(r["stdout"].split(), ["0", "1", "2"],
                             (body, r))
        r = d.json("POST", "/v1/exec", {"args": ["env"]})
        self.assertNotIn(self.daemon_env["LODGE_TOKEN"], r["stdout"])
        self.assertNotIn("LODGE_TEST_RUNDIR", r["stdout"])

    async def test_exec_stream_children(self):
        d = self.d
        for tty in (False, True):
            ws = await WSClient.open(d, "/v1/exec/stream", {}, {
                "Authorization": "Bearer " + d.token}, "stream")
            try:
                await ws.send({"type": "start", "tty": tty, "args": [
                    "sh", "-c", "ls -1 /proc/$$/fd; echo; env; sleep 1000"]})
                st = await ws.recv_type("started")
                await ws.wait_output(rb"\nHOME=")
                self.check_fds(st["pid"], "exec stream tty=%s" % tty)
                out = ws.output.replace(b"\r\n", b"\n")
                self.assertTrue(out.startswith(b"0\n1\n2\n"), out[:100])
                self.assertNotIn(self.daemon_env["LODGE_TOKEN"].encode(), out)
            finally:
                await ws.close()


# ------------------------------------------------------------ origins

class TestAllowOrigin(lt.DaemonPerClass):
    daemon_args = ["--allow-origin", "https://console.example.com",
                   "--allow-origin", "http://localhost:3000"]

    async def test_origins(self):
        d = self.d
        s = self.create({"args": ["cat"]})
        attach = sess_path(s["id"], "/attach")
        auth = {"Authorization": "Bearer " + d.token}
        for origin in ("https://evil.example.com",
                       "https://console.example.com.evil.net",
                       "http://console.example.com",
                       "https://console.example.com:443",
                       "null", "", "http://localhost:30000"):
            for path in (attach, "/v1/exec/stream"):
                st, body = await lt.ws_refused(
                    d, path, headers=dict(auth, Origin=origin))
                self.assertEqual(st, 403, (origin, path, body))
                self.assertEqual(json.loads(body)["error"]["code"],
                                 "forbidden")
            st, body = await lt.ws_refused(
                d, attach, headers={"Origin": origin},
                unix_path=d.sock_path)
            self.assertEqual(st, 403, (origin, "unix", body))
        # the token is checked first
        st, body = await lt.ws_refused(
            d, attach, headers={"Origin": "https://evil.example.com"})
        self.assertEqual(st, 401, body)
        # REST calls are checked too
        r = d.request("GET", "/v1/sessions",
                      headers={"Origin": "https://evil.example.com"})
        self.assertEqual(r.status, 403, r)
        # listed origins (any case) and no origin at all work
        for hdrs in ({"Origin": "https://console.example.com"},
                     {"Origin": "HTTPS://Console.Example.COM"},
                     {"Origin": "http://localhost:3000"},
                     {}):
            c = await WSClient.connect(d, s["id"], extra_headers=hdrs,
                                       label=repr(hdrs))
            try:
                await c.handshake()
                await c.stdin(b"origin-ok\n")
                await c.wait_output(rb"origin-ok\n")
            finally:
                await c.close()
            ws = await WSClient.open(d, "/v1/exec/stream", {},
                                     dict(auth, **hdrs), "stream")
            try:
                await ws.send({"type": "start", "args": ["echo", "so"]})
                ex = await ws.recv_type("exit")
                self.assertEqual(ex["exitCode"], 0)
            finally:
                await ws.close()


# ------------------------------------------------------ Unix-socket peers

# A client for lodged.sock run as another user: opens an exec stream,
# prints "open", and on a line of stdin starts `sleep 60`, prints
# "started PID", and holds the stream until stdin closes.
HELD_STREAM = r"""
import asyncio, sys
import msgpack, websockets
async def main():
    ws = await websockets.unix_connect(
        sys.argv[1], "ws://localhost/v1/exec/stream", open_timeout=60)
    loop = asyncio.get_running_loop()
    print("open", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    await ws.send(msgpack.packb({"type": "start", "workDir": "/tmp",
                                 "args": ["sleep", "60"]}))
    m = msgpack.unpackb(await asyncio.wait_for(ws.recv(), 60))
    print(m["type"], m.get("pid"), flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)
    await ws.close()
asyncio.run(main())
"""


class TestUnixPeerRules(lt.DaemonPerClass):
    """A client run as nobody on lodged.sock (reachable through
    --socket-group nogroup) runs processes only as itself and sees and
    touches only its own sessions."""

    daemon_args = ["--socket-group", "nogroup"]

    def nobody_http(self, method, path, body=None, sock=None):
        args = [sock or self.d.sock_path, method, path]
        if body is not None:
            args.append(json.dumps(body))
        return rl.run_json_as(NOBODY, NOGROUP, rl.UNIX_HTTP_CLIENT, args)

    def nobody_ws(self, path, msgs=(), stop="live,exit,error"):
        args = [self.d.sock_path, path, stop] + [rl.packhex(m) for m in msgs]
        return rl.run_json_as(NOBODY, NOGROUP, rl.UNIX_WS_CLIENT, args)

    async def test_peer_rules(self):
        d = self.d
        self.assertEqual(os.stat(d.sock_path).st_gid, NOGROUP)
        root_s = self.create({"args": ["sh", "-c", "echo root-secret; "
                                       "exec sleep 1000"], "name": "rootish"})
        self.wait_log(root_s["id"], "root-secret")

        # nobody reaches the API
        r = await asyncio.to_thread(self.nobody_http, "GET", "/v1/health")
        self.assertEqual(r.get("status"), 200, r)

        # it runs things as itself by default ...
        r = await asyncio.to_thread(self.nobody_http, "POST", "/v1/sessions",
                                    {"args": ["sh", "-c", "echo mine; exec "
                                              "sleep 1000"],
                                     "workDir": "/tmp", "name": "nobodys"})
        self.assertEqual(r.get("status"), 201, r)
        own = json.loads(r["body"])
        d.note_session(own)
        self.addCleanup(self._delete_quietly, d, own["id"])
        self.assertEqual(own["user"], "nobody")
        self.assertEqual(rl.uid_line(own["pid"]), [NOBODY] * 4)
        r = await asyncio.to_thread(self.nobody_http, "POST", "/v1/exec",
                                    {"args": ["id", "-u"], "workDir": "/tmp"})
        self.assertEqual(r.get("status"), 200, r)
        self.assertEqual(json.loads(r["body"])["stdout"], "%d\n" % NOBODY)

        # ... and never as anybody else
        for path, body in (("/v1/sessions", {"args": ["id"], "user": "root",
                                             "workDir": "/tmp"}),
                           ("/v1/exec", {"args": ["id"], "user": "root"}),
                           ("/v1/exec", {"args": ["id"], "user": "daemon",
                                         "workDir": "/tmp"})):
            r = await asyncio.to_thread(self.nobody_http, "POST", path, body)
            self.assertEqual(r.get("status"), 403, (path, body, r))
            self.assertEqual(json.loads(r["body"])["error"]["code"],
                             "forbidden")
        # exec streams too
        r = await asyncio.to_thread(self.nobody_ws, "/v1/exec/stream", [
            {"type": "start", "args": ["id", "-u"], "workDir": "/tmp"}],
            stop="exit,error")
        self.assertEqual(r["status"], 101, r)
        out = "".join(m["data"] for m in r["messages"]
                      if m["type"] == "stdout")
        self.assertEqual(out, "%d\n" % NOBODY, r)
        r = await asyncio.to_thread(self.nobody_ws, "/v1/exec/stream", [
            {"type": "start", "args": ["id", "-u"], "user": "root"}],
            stop="exit,error,started")
        types = [m["type"] for m in r["messages"]]
        self.assertNotIn("started", types, r)
        self.assertIn("error", types, r)
        err = [m for m in r["messages"] if m["type"] == "error"][0]
        self.assertEqual(err["code"], "forbidden", r)

        # and touches only its own
        for method, suffix, body in (("GET", "", None),
                                     ("GET", "/log", None),
                                     ("POST", "/input", {"data": "x\n"}),
                                     ("POST", "/signal", {"signal": "KILL"}),
                                     ("POST", "/resize", {"cols": 10,
                                                          "rows": 10}),
                                     ("DELETE", "", None)):
            for ref in (root_s["id"], "rootish"):
                r = await asyncio.to_thread(self.nobody_http, method,
                                            sess_path(ref, suffix), body)
                self.assertEqual(r.get("status"), 403,
                                 (method, ref, suffix, r))
                self.assertNotIn("root-secret", r.get("body", ""))
        r = await asyncio.to_thread(self.nobody_ws,
                                    sess_path("rootish", "/attach"))
        self.assertEqual(r["status"], 403, r)
        # root's session is untouched
        st = self.get("rootish")
        self.assertEqual(st["state"], "running")
        self.assertEqual(self.log("rootish").body, b"root-secret\n")

        # its own session: everything works
        r = await asyncio.to_thread(self.nobody_http, "GET",
                                    sess_path("nobodys", "/log"))
        self.assertEqual((r.get("status"), r.get("body")), (200, "mine\n"),
                         r)
        r = await asyncio.to_thread(self.nobody_ws,
                                    sess_path("nobodys", "/attach"))
        self.assertEqual(r["status"], 101, r)
        self.assertIn("live", [m["type"] for m in r["messages"]], r)

        # it sees only its own sessions (checked last: everything above
        # holds whatever the answer is)
        r = await asyncio.to_thread(self.nobody_http, "GET", "/v1/sessions")
        self.assertEqual(r.get("status"), 200, r)
        listed = [x["id"] for x in json.loads(r["body"])["sessions"]]
        self.assertEqual(listed, [own["id"]], "nobody's list shows other "
                         "users' sessions: %r" % json.loads(r["body"]))

        r = await asyncio.to_thread(self.nobody_http, "DELETE",
                                    sess_path("nobodys"))
        self.assertEqual(r.get("status"), 204, r)
        self.assertEqual(d.request("GET", sess_path(own["id"])).status, 404)

        # root sees everything that is left
        self.assertEqual([x["id"] for x in
                          d.json("GET", "/v1/sessions")["sessions"]],
                         [root_s["id"]])

    async def test_worker_socket_of_another_user(self):
        d = self.d
        root_s = self.create({"args": ["sh", "-c", "echo root-only; exec "
                                       "sleep 1000"]})
        self.wait_log(root_s["id"], "root-only")
        r = await asyncio.to_thread(
            self.nobody_http, "GET", sess_path(root_s["id"], "/log"),
            None, d.session_sock(root_s["id"]))
        self.assertIn("connect_error", r, "nobody reached root's worker "
                      "socket: %r" % r)
        self.assertEqual(r["connect_error"], 13)       # EACCES

    def stream_workers(self):
        return {p for p in lt.descendants_of(self.d.proc.pid)
                if rl.title(p).startswith("lodged: exec stream")}

    async def test_stream_worker_is_the_peer_before_it_reads(self):
        # nobody opens a stream and waits; its worker is nobody already,
        # before the first message is read, and after the start
        before = self.stream_workers()
        p = subprocess.Popen(
            ["/usr/bin/python3", "-c", HELD_STREAM, self.d.sock_path],
            user=NOBODY, group=NOGROUP, extra_groups=[], cwd="/",
            env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.wait, 60)
        self.addCleanup(p.stdin.close)
        line = await asyncio.wait_for(asyncio.to_thread(p.stdout.readline),
                                      60)
        self.assertEqual(line, "open\n")
        new = wait_for(lambda: self.stream_workers() - before,
                       what="the stream's worker")
        self.assertEqual(len(new), 1, new)
        worker = new.pop()
        self.assertEqual(rl.uid_line(worker), [NOBODY] * 4,
                         "the stream's worker reads nobody's frames as "
                         "another user")
        self.assertEqual(rl.gid_line(worker), [NOGROUP] * 4)
        self.assertIn(lt.proc_status(worker)["Groups"], ("", str(NOGROUP)))
        self.assertEqual(lt.proc_status(worker)["CapEff"],
                         "0000000000000000")
        p.stdin.write("start\n")
        p.stdin.flush()
        line = await asyncio.wait_for(asyncio.to_thread(p.stdout.readline),
                                      60)
        kind, pid = line.split()
        self.assertEqual(kind, "started", line)
        self.assertEqual(lt.proc_stat(int(pid))["ppid"], worker)
        self.assertEqual(rl.uid_line(worker), [NOBODY] * 4)
        self.assertEqual(rl.uid_line(int(pid)), [NOBODY] * 4)
        # a stream on TCP (root, who may name any user) stays root
        before = self.stream_workers()
        ws = await WSClient.open(self.d, "/v1/exec/stream", {}, {
            "Authorization": "Bearer " + self.d.token}, "stream")
        try:
            root_new = wait_for(lambda: self.stream_workers() - before,
                                what="the TCP stream's worker")
            self.assertEqual(rl.uid_line(root_new.pop())[0], 0)
        finally:
            await ws.close()


if __name__ == "__main__":
    lt.main()

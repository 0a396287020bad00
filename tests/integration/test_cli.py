"""Black-box tests of the lodge CLI against a real lodged.

Every command runs as a subprocess against a private daemon (lodgetest's
Lodged harness).  attach and exec -t run in a real terminal: a private tmux
server (tmux -L <unique name>) whose pane runs a plain bash, or a
pseudo-terminal opened here.  Exit codes, stdout, stderr and the terminal's
settings (stty -g before and after) are checked.

Environment: LODGE_CLI (the lodge binary; default <repo>/lodge), LODGED
(see lodgetest.py).  Needs tmux, bash and mandoc.
"""

import json
import os
import pty
import re
import select
import shlex
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import fcntl
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest  # noqa: E402
from lodgetest import (DaemonPerClass, LodgeTestMixin, REPO,  # noqa: E402
                       proc_exists, sess_path, wait_for)

LODGE = os.environ.get("LODGE_CLI") or os.path.join(REPO, "lodge")
MANPAGE = os.path.join(REPO, "man", "lodge.1")
COMPLETION = os.path.join(REPO, "contrib", "lodge.bash-completion")
TIMEOUT = 30


def check_binary():
    # a failure, not a skip: a missing CLI must never look green
    if not os.access(LODGE, os.X_OK):
        raise AssertionError("lodge not found or not executable at %s "
                             "(set LODGE_CLI)" % LODGE)


class CliMixin(LodgeTestMixin):
    """Run lodge against self.d (or another daemon) and track what it
    creates."""

    def lodge_env(self, d=None, extra=None):
        d = d or self.d
        env = dict(os.environ)
        env.pop("LODGE_TOKEN", None)
        env["LODGE_RUNDIR"] = d.rundir
        # the harness's backstop reaps what carries its marker
        env["LODGE_TEST_RUNDIR"] = d.rundir
        env.update(extra or {})
        return env

    def lodge(self, *args, d=None, input=None, env=None, cwd=None,
              timeout=TIMEOUT, expect=None):
        check_binary()
        p = subprocess.run([LODGE] + list(args), input=input,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=self.lodge_env(d, env), cwd=cwd,
                           timeout=timeout)
        if expect is not None and p.returncode != expect:
            raise AssertionError("lodge %s: exit %d, expected %d; stdout %r "
                                 "stderr %r" % (" ".join(args), p.returncode,
                                                expect, p.stdout[:500],
                                                p.stderr[:500]))
        return p

    def new(self, *args, d=None, cwd=None):
        """lodge new ARGS; returns the session object."""
        d = d or self.d
        p = self.lodge("new", *args, d=d, cwd=cwd, expect=0)
        sid = p.stdout.decode().strip()
        self.assertRegex(sid, r"^[A-Za-z0-9_-]{20,}$", p)
        self.addCleanup(self._delete_quietly, d, sid)
        s = d.json("GET", sess_path(sid))
        d.note_session(s)
        return s

    def assertOneErrorLine(self, p, pattern=None):
        err = p.stderr.decode()
        first = err.splitlines()[0] if err else ""
        self.assertTrue(first.startswith("lodge: "),
                        "error line %r (stderr %r)" % (first, err))
        if pattern is not None:
            self.assertRegex(first, pattern)


# ------------------------------------------------------------------ tmux

class Tmux:
    """A private tmux server with one pane running bash."""

    serial = 0

    def __init__(self, test, env, cols=100, rows=30):
        check_binary()
        Tmux.serial += 1
        self.name = "lodgetest-%d-%d" % (os.getpid(), Tmux.serial)
        self.env = dict(env)
        self.env.pop("TMUX", None)
        self.env["TERM"] = "xterm-256color"
        test.addCleanup(self.kill)
        # the pane's environment, explicitly: tmux does not hand on ours
        shell = "env %s bash --norc --noprofile" % " ".join(
            shlex.quote("%s=%s" % (k, self.env[k])) for k in
            ("LODGE_RUNDIR", "LODGE_TEST_RUNDIR", "PATH")
            if k in self.env)
        subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null",
                        "new-session", "-d", "-x", str(cols), "-y",
                        str(rows), "env PS1='OUTER$ ' " + shell],
                       env=self.env, check=True, timeout=TIMEOUT)
        self.tmux("set-option", "-g", "history-limit", "5000")
        self.wait_text(r"OUTER\$")

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.name] + list(args),
                              env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=TIMEOUT)

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "0", *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", "0", "-l", text)

    def line(self, text):
        self.type(text)
        self.keys("Enter")

    def capture(self):
        return self.tmux("capture-pane", "-p", "-J", "-t", "0", "-S",
                         "-3000").stdout.decode(errors="replace")

    def wait_text(self, pattern, timeout=TIMEOUT):
        rx = re.compile(pattern, re.S)
        box = {}

        def ok():
            box["c"] = self.capture()
            return rx.search(box["c"])
        try:
            return wait_for(ok, timeout, interval=0.1,
                            what="%r in the tmux pane" % pattern)
        except AssertionError as e:
            raise AssertionError("%s; pane:\n%s" % (e, box.get("c", "")))

    def resize(self, cols, rows):
        self.tmux("resize-window", "-t", "0", "-x", str(cols), "-y",
                  str(rows))

    def kill(self):
        self.tmux("kill-server")
        # tmux leaves its socket file behind
        try:
            os.unlink(os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"),
                                   "tmux-%d" % os.getuid(), self.name))
        except OSError:
            pass


def lodge_pids(marker):
    """pids of lodge processes whose command line holds marker."""
    out = []
    for pid in lodgetest.all_pids():
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"lodge" and \
                marker.encode() in argv:
            out.append(pid)
    return out


class TerminalMixin(CliMixin):
    """attach and exec -t driven from a tmux pane.  The pane's shell runs
    `stty -g >A; lodge ...; echo RC<$?>; stty -g >B` so that the exit
    status and the terminal settings before and after are known."""

    n = 0

    def pane(self, d=None, cols=100, rows=30):
        return Tmux(self, self.lodge_env(d), cols, rows)

    def run_in_pane(self, t, args):
        TerminalMixin.n += 1
        tag = "%d-%d" % (os.getpid(), TerminalMixin.n)
        tmp = tempfile.mkdtemp(prefix="lodge-cli-stty-")
        self.addCleanup(subprocess.run, ["rm", "-rf", tmp])
        before, after = os.path.join(tmp, "before"), os.path.join(tmp, "after")
        # the terminal's settings and whether fds 0-2 block: lodge makes
        # them non-blocking while it runs and must put that back too
        state = ("{ stty -g; %s -c %s; } > %%s.tmp && mv %%s.tmp %%s" % (
            shlex.quote(sys.executable), shlex.quote(
                "import fcntl, os\n"
                "for fd in 0, 1, 2:\n"
                "    fl = fcntl.fcntl(fd, fcntl.F_GETFL)\n"
                "    print(fd, 'nonblock' if fl & os.O_NONBLOCK else "
                "'block')")))
        script = "%s; %s %s; echo \"RC<$?>%s\"; %s" % (
            state % (before, before, before), shlex.quote(LODGE),
            " ".join(shlex.quote(a) for a in args), tag,
            state % (after, after, after))
        # in sh, not the pane's bash: bash itself restores the terminal
        # after a job that a signal killed, which would hide our bugs
        t.line("sh -c " + shlex.quote(script))
        return tag, before, after

    def wait_rc(self, t, tag, timeout=TIMEOUT):
        m = t.wait_text(r"RC<(\d+)>%s" % re.escape(tag), timeout)
        return int(m.group(1))

    def assertSttyRestored(self, before, after):
        def written():
            try:
                with open(after) as f:
                    return f.read().strip() != ""
            except FileNotFoundError:
                return False
        wait_for(written, what="stty -g after")
        with open(before) as f:
            b = f.read().strip()
        with open(after) as f:
            a = f.read().strip()
        self.assertTrue(b, "no stty -g before")
        self.assertIn("0 block", b)
        self.assertEqual(a, b, "terminal settings not restored")


# ------------------------------------------------------------ basic commands

class TestCliCommands(CliMixin, DaemonPerClass):

    def test_help_and_usage_errors(self):
        p = self.lodge("help", expect=0)
        for c in ("ls", "new", "attach", "log", "send", "kill", "rm", "wait",
                  "exec"):
            self.assertIn("\n  %s " % c, p.stdout.decode())
            q = self.lodge("help", c, expect=0)
            self.assertTrue(q.stdout.decode().startswith("usage: lodge %s"
                                                         % c), q)
            r = self.lodge(c, "--help", expect=0)
            self.assertEqual(r.stdout, q.stdout)
        self.lodge("--version", expect=0)
        for args in (["bogus"], ["ls", "--bogus"], ["ls", "extra"],
                     ["attach"], ["attach", "-E", "^^^", "x"],
                     ["kill", "-s", "NOSUCHSIG", "x"], ["send", "x"],
                     ["send", "x", "bad\\q"], ["new", "-s", "80"],
                     ["new", "-n", "no/slash"], ["new", "-e", "NOEQUALS"],
                     ["exec"], ["exec", "--timeout", "soon", "--", "true"],
                     ["log", "--since", "-1", "x"], ["help", "bogus"],
                     ["--url", "ftp://x", "ls"], ["-S", "/x", "--url",
                                                  "http://127.0.0.1:1", "ls"],
                     []):
            p = self.lodge(*args)
            self.assertEqual(p.returncode, 2, (args, p))
            self.assertTrue(p.stderr.decode().startswith("lodge: ") or
                            args == [], (args, p.stderr))
        for args, line in ((["ls", "--bogus"], "ls: unknown option --bogus"),
                           (["ls", "-x"], "ls: unknown option -x"),
                           (["kill", "-s"], "kill: option -s needs a value"),
                           (["log", "x", "--since"],
                            "log: option --since needs a value"),
                           (["--url"], "option --url needs a value"),
                           (["-Q", "ls"], "unknown option -Q")):
            p = self.lodge(*args)
            self.assertEqual(p.returncode, 2, (args, p))
            self.assertEqual(p.stderr.decode().splitlines()[0],
                             "lodge: " + line)
        p = self.lodge("log", "no-such-session")
        self.assertEqual(p.returncode, 1, p)
        self.assertOneErrorLine(p, "no-such-session.*does not exist")

    def test_ls_table_json_and_names(self):
        a = self.new("-n", "ls-a", "--no-pty", "--", "sh", "-c",
                     "printf 12345; sleep 100")
        b = self.new("--", "sleep", "100")
        self.wait_log(a["id"], "12345")
        # the front's list follows the workers' output counts a moment late
        wait_for(lambda: [x for x in self.d.json("GET", "/v1/sessions")[
            "sessions"] if x["id"] == a["id"]][0]["outputBytes"] == 5,
            what="outputBytes in the list")
        p = self.lodge("ls", "--json", expect=0)
        j = json.loads(p.stdout)
        ids = {s["id"] for s in j["sessions"]}
        self.assertTrue({a["id"], b["id"]} <= ids, j)
        server = self.d.json("GET", "/v1/sessions")
        self.assertEqual(ids, {s["id"] for s in server["sessions"]})
        p = self.lodge("ls", expect=0)
        lines = p.stdout.decode().splitlines()
        self.assertEqual(lines[0].split(), ["NAME", "ID", "PID", "STATE",
                                            "CLIENTS", "SIZE", "AGE",
                                            "COMMAND"])
        row = [l for l in lines if a["id"] in l][0].split()
        self.assertEqual(row[:8], ["ls-a", a["id"], str(a["pid"]), "running",
                                   "0", "5B", row[6], "sh"])
        self.assertRegex(row[6], r"^\d+[smhd]$")
        self.assertEqual(row[8:], ["-c", "printf", "12345;", "sleep", "100"])
        row = [l for l in lines if b["id"] in l][0].split()
        self.assertEqual(row[0], "-")
        self.assertEqual(row[-2:], ["sleep", "100"])
        p = self.lodge("ls", "--names", expect=0)
        names = p.stdout.decode().split()
        self.assertIn("ls-a", names)
        self.assertIn(b["id"], names)
        # an exited session shows its status
        self.lodge("kill", "-s", "KILL", b["id"], expect=0)
        self.wait_state(b["id"])
        p = self.lodge("ls", expect=0)
        row = [l for l in p.stdout.decode().splitlines() if b["id"] in l][0]
        self.assertIn("killed(KILL)", row)

    def test_ls_sizes(self):
        # binary units: one decimal below 10 (1.5K), none from 10 (15K)
        for n, size in ((1536, "1.5K"), (15360, "15K")):
            s = self.new("-n", "size-%d" % n, "--no-pty", "--", "sh", "-c",
                         "head -c %d /dev/zero; sleep 100" % n)
            wait_for(lambda: [x for x in self.d.json(
                "GET", "/v1/sessions")["sessions"] if x["id"] == s["id"]][
                    0]["outputBytes"] == n, what="outputBytes in the list")
            p = self.lodge("ls", expect=0)
            row = [l for l in p.stdout.decode().splitlines()
                   if s["id"] in l][0].split()
            self.assertEqual(row[5], size, row)

    def test_new_defaults_and_options(self):
        here = tempfile.mkdtemp(prefix="lodge-cli-cwd-")
        self.addCleanup(os.rmdir, here)
        # defaults: a PTY, our directory, 80x24 without a terminal
        s = self.new("--", "sh", "-c", "tty; stty size; pwd; sleep 100",
                     cwd=here)
        self.assertTrue(s["pty"])
        self.assertEqual(s["workDir"], here)
        self.wait_log(s["id"], r"/dev/pts/\d+\r\n24 80\r\n%s\r\n"
                      % re.escape(here))
        # options
        s = self.new("-n", "opts", "--no-pty", "-d", "/tmp", "-e", "K1=v 1",
                     "--env", "K2=x=y", "--", "sh", "-c",
                     'echo "$K1|$K2"; pwd; tty; sleep 100')
        self.assertFalse(s["pty"])
        self.assertEqual(s["name"], "opts")
        self.assertEqual(s["args"], ["sh", "-c",
                                     'echo "$K1|$K2"; pwd; tty; sleep 100'])
        self.wait_log("opts", r"^v 1\|x=y\n/tmp\nnot a tty\n")
        # a relative -d is ours, made absolute
        os.mkdir(os.path.join(here, "sub"))
        self.addCleanup(os.rmdir, os.path.join(here, "sub"))
        s = self.new("-d", "sub", "-s", "120x40", "--", "sh", "-c",
                     "stty size; sleep 100", cwd=here)
        self.assertEqual(s["workDir"], os.path.join(here, "sub"))
        self.assertEqual((s["cols"], s["rows"]), (120, 40))
        self.wait_log(s["id"], r"40 120")
        # no command: the login shell
        s = self.new("-n", "shell")
        self.assertIsNone(s.get("command"))
        self.assertNotIn("args", s)
        # errors: one line, exit 1
        p = self.lodge("new", "-n", "opts", "--", "true")
        self.assertEqual(p.returncode, 1, p)
        self.assertOneErrorLine(p, "exists")
        p = self.lodge("new", "--", "/no/such/program")
        self.assertEqual(p.returncode, 1, p)
        self.assertOneErrorLine(p)
        self.assertEqual(len(p.stderr.decode().splitlines()), 1, p)

    def test_log_raw_bytes_and_since(self):
        s = self.new("--no-pty", "--", "sh", "-c",
                     r"printf 'one\000\377two\n'; printf err >&2; sleep 100")
        self.wait_log(s["id"], b"err")
        p = self.lodge("log", s["id"], expect=0)
        self.assertEqual(p.stdout, b"one\x00\xfftwo\nerr")
        p = self.lodge("log", "--since", "5", s["id"], expect=0)
        self.assertEqual(p.stdout, b"two\nerr")
        p = self.lodge("log", "--since", "999", s["id"], expect=0)
        self.assertEqual(p.stdout, b"")

    def test_log_follow(self):
        s = self.new("--no-pty", "--", "sh", "-c",
                     "echo first; read x; echo second $x; sleep 0.2; "
                     "echo third; exit 3")
        self.wait_log(s["id"], "first")
        proc = subprocess.Popen([LODGE, "log", "-f", s["id"]],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                env=self.lodge_env())
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        # it follows: the client shows up while it waits for more
        wait_for(lambda: self.get(s["id"])["clients"] == 1,
                 what="log -f attached")
        self.input(s["id"], "X\n")
        out, err = proc.communicate(timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(out, b"first\nsecond X\nthird\n")
        self.assertEqual(err, b"")

    def test_send_escapes(self):
        s = self.new("--no-pty", "--", "cat")
        self.lodge("send", s["id"], "a\\tb", "\\x41\\\\", "\\e[1m\\r\\n",
                   expect=0)
        self.lodge("send", s["id"], "--", "-dash\\n", expect=0)
        self.wait_log(s["id"], b"-dash\n")
        self.assertEqual(self.log(s["id"]).body,
                         b"a\tb A\\ \x1b[1m\r\n-dash\n")
        p = self.lodge("send", "nope", "x")
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "does not exist")
        for text, why in (("a\\q", "unknown escape \\q (known: \\n \\r "
                           "\\t \\e \\\\ \\xHH)"),
                          ("a\\", "a lone backslash at the end (write "
                           "\\\\ for a backslash)"),
                          ("\\x4", "\\x needs two hex digits")):
            p = self.lodge("send", s["id"], text)
            self.assertEqual(p.returncode, 2, p)
            self.assertEqual(p.stderr.decode().splitlines()[0],
                             "lodge: send: " + why)

    def test_kill_rm_wait(self):
        a = self.new("--no-pty", "--", "sleep", "100")
        b = self.new("--no-pty", "--", "sh", "-c", "trap 'exit 9' INT; "
                     "echo ready; while :; do sleep 0.1; done")
        c = self.new("--no-pty", "--", "sleep", "100")
        self.wait_log(b["id"], "ready")
        # wait blocks until the session exits, then exits as it did
        waiter = subprocess.Popen([LODGE, "wait", a["id"]],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  env=self.lodge_env())
        self.addCleanup(lambda: waiter.poll() is None and waiter.kill())
        wait_for(lambda: self.get(a["id"])["clients"] == 1,
                 what="wait attached")
        time.sleep(0.3)
        self.assertIsNone(waiter.poll(), "wait returned early")
        self.lodge("kill", a["id"], expect=0)          # default TERM
        waiter.communicate(timeout=TIMEOUT)
        self.assertEqual(waiter.returncode, 128 + signal.SIGTERM)
        self.assertEqual(self.get(a["id"])["signal"], "TERM")
        self.lodge("kill", "-s", "int", b["id"], expect=0)
        self.wait_state(b["id"])
        p = self.lodge("wait", b["id"], expect=9)      # exited already
        self.lodge("kill", "--signal", "9", c["id"], expect=0)
        self.wait_state(c["id"])
        self.lodge("wait", c["id"], expect=128 + 9)
        p = self.lodge("kill", "nope")
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "does not exist")
        # rm: gone, with its process
        d = self.new("--no-pty", "--", "sleep", "100")
        self.lodge("rm", d["id"], a["id"], expect=0)
        self.assertEqual(self.d.request("GET", sess_path(d["id"])).status,
                         404)
        self.assertGone(d["pid"])
        p = self.lodge("rm", d["id"])
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "does not exist")

    def test_tcp_url_and_token(self):
        s = self.new("-n", "tcp", "--no-pty", "--", "sh", "-c",
                     "echo over-tcp; sleep 100")
        self.wait_log("tcp", "over-tcp")
        url = "http://127.0.0.1:%d" % self.d.port
        elsewhere = {"LODGE_RUNDIR": "/nonexistent"}
        # the token by option, by environment, or from RUNDIR/token
        p = self.lodge("--url", url, "--token", self.d.token, "ls",
                       "--json", env=elsewhere, expect=0)
        self.assertIn(s["id"], p.stdout.decode())
        self.lodge("--url", url, "log", "tcp", env=dict(
            elsewhere, LODGE_TOKEN=self.d.token), expect=0)
        p = self.lodge("--url", url + "/", "log", "tcp", expect=0)
        self.assertEqual(p.stdout, b"over-tcp\n")
        p = self.lodge("--url", url, "--token", "wrong", "ls",
                       env=elsewhere)
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "token")
        p = self.lodge("--url", url, "send", "tcp", "x", env=elsewhere)
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "token")
        p = self.lodge("--url", url, "--token", "wrong", "wait", "tcp",
                       env=elsewhere)
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "token")
        # the WebSocket carries the token too
        waiter = subprocess.Popen([LODGE, "--url", url, "--token",
                                   self.d.token, "wait", "tcp"],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  env=self.lodge_env(extra=elsewhere))
        self.addCleanup(lambda: waiter.poll() is None and waiter.kill())
        wait_for(lambda: self.get("tcp")["clients"] == 1,
                 what="wait attached over TCP")
        self.lodge("--url", url, "--token", self.d.token, "kill", "tcp",
                   env=elsewhere, expect=0)
        _, err = waiter.communicate(timeout=TIMEOUT)
        self.assertEqual(waiter.returncode, 128 + signal.SIGTERM, err)
        # nothing listening
        p = self.lodge("--url", "http://127.0.0.1:%d" % lodgetest.free_port(),
                       "ls", env=elsewhere)
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "cannot connect")

    def test_socket_option(self):
        s = self.new("-n", "sock", "--no-pty", "--", "sh", "-c",
                     "echo via-S; sleep 100")
        self.wait_log("sock", "via-S")
        p = self.lodge("-S", self.d.sock_path, "log", "sock",
                       env={"LODGE_RUNDIR": "/nonexistent"}, expect=0)
        self.assertEqual(p.stdout, b"via-S\n")
        p = self.lodge("--runtime-dir", self.d.rundir, "ls", "--json",
                       env={"LODGE_RUNDIR": "/nonexistent"}, expect=0)
        self.assertIn(s["id"], p.stdout.decode())
        p = self.lodge("-S", "/nonexistent/lodged.sock", "ls")
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "cannot connect")

    def test_bash_completion(self):
        d = self.d
        self.new("-n", "compl-me", "--", "sleep", "100")
        script = r"""
source %s
complete -p lodge >/dev/null || exit 3
PATH=%s:$PATH
t() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]}-1))
      COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
      _lodge_complete; echo "${COMPREPLY[*]}"; }
t lodge ''
t lodge at
t lodge attach ''
t lodge attach -
t lodge exec --t
t lodge kill -s ''
t lodge --runtime-dir %s log comp
""" % (shlex.quote(COMPLETION), shlex.quote(os.path.dirname(LODGE)),
            shlex.quote(d.rundir))
        p = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                            script], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT,
                           env=self.lodge_env(d))
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.decode().split("\n")
        self.assertTrue({"ls", "new", "attach", "log", "send", "kill",
                         "rm", "wait", "exec", "help"} <=
                        set(out[0].split()), out[0])
        self.assertEqual(out[1].split(), ["attach"])
        self.assertIn("compl-me", out[2].split())
        self.assertTrue({"-r", "--read-only", "-E", "--detach-key"} <=
                        set(out[3].split()), out[3])
        self.assertIn("--timeout", out[4].split())
        self.assertIn("TERM", out[5].split())
        self.assertEqual(out[6].split(), ["compl-me"])


# --------------------------------------------------------------- terminals

class TestCliAttach(TerminalMixin, DaemonPerClass):

    def bash(self, name=None):
        args = ["-e", "PS1=" + self.PS1]
        if name:
            args += ["-n", name]
        s = self.new(*(args + ["--", "bash", "--norc", "--noprofile", "-i"]))
        self.wait_log(s["id"], re.escape(self.PS1))
        return s

    def test_attach_keys_resize_detach(self):
        s = self.bash("att")
        t = self.pane()
        tag, before, after = self.run_in_pane(t, ["attach", "att"])
        t.wait_text(r"(?m)^" + re.escape(self.PS1))
        wait_for(lambda: self.get("att")["clients"] == 1, what="attached")
        # keys reach the program, its output reaches the pane
        t.line("echo $((6*7))MARK")
        t.wait_text(r"\n42MARK")
        # the size at attach, then after a resize
        t.line("stty size")
        t.wait_text(r"\n30 100\s")
        self.assertEqual((self.get("att")["cols"], self.get("att")["rows"]),
                         (100, 30))
        t.resize(120, 40)
        wait_for(lambda: self.get("att")["cols"] == 120, what="resize")
        t.line("stty size")
        t.wait_text(r"\n40 120\s")
        # Ctrl-\ detaches; the session lives on
        t.keys("C-\\")
        t.wait_text(r"\[detached from att\]")
        self.assertEqual(self.wait_rc(t, tag), 0)
        self.assertSttyRestored(before, after)
        st = self.get("att")
        self.assertEqual(st["state"], "running")
        wait_for(lambda: self.get("att")["clients"] == 0, what="detached")
        self.assertTrue(proc_exists(s["pid"]))
        # what was typed went to the session's shell
        self.assertIn(b"42MARK", self.log("att").body)

    def test_attach_exit_status(self):
        s = self.bash()
        t = self.pane()
        tag, before, after = self.run_in_pane(t, ["attach", s["id"]])
        t.wait_text(r"(?m)^" + re.escape(self.PS1))
        t.line("exit 5")
        t.wait_text(r"\[exited with code 5\]")
        self.assertEqual(self.wait_rc(t, tag), 5)
        self.assertSttyRestored(before, after)
        # attaching to the exited session replays and exits as it did
        tag, before, after = self.run_in_pane(t, ["attach", s["id"]])
        self.assertEqual(self.wait_rc(t, tag), 5)
        self.assertSttyRestored(before, after)

    def test_attach_killed_session(self):
        self.new("-n", "victim", "--", "sh", "-c", "echo up; sleep 100")
        self.wait_log("victim", "up")
        t = self.pane()
        tag, before, after = self.run_in_pane(t, ["attach", "victim"])
        wait_for(lambda: self.get("victim")["clients"] == 1, what="attached")
        self.lodge("kill", "-s", "TERM", "victim", expect=0)
        t.wait_text(r"\[killed by signal TERM\]")
        self.assertEqual(self.wait_rc(t, tag), 128 + signal.SIGTERM)
        self.assertSttyRestored(before, after)

    def test_detach_key_and_read_only(self):
        # the session's terminal passes ^\ on as a byte (no SIGQUIT)
        self.new("-n", "keys", "--", "sh", "-c",
                     "stty -isig; echo ready; exec cat -v")
        self.wait_log("keys", "ready")
        t = self.pane()
        tag, before, after = self.run_in_pane(t, ["attach", "-E", "^A",
                                                  "keys"])
        wait_for(lambda: self.get("keys")["clients"] == 1, what="attached")
        time.sleep(0.3)
        # Ctrl-\ is an ordinary key now; Ctrl-A detaches
        t.keys("C-\\")
        t.type("typed")
        t.keys("Enter")
        self.wait_log("keys", rb"\^\\typed\r\n.*\^\\typed")
        t.keys("C-a")
        t.wait_text(r"\[detached from keys\]")
        self.assertEqual(self.wait_rc(t, tag), 0)
        self.assertSttyRestored(before, after)
        # read-only: keys do not reach the session, the size is not set
        t.resize(90, 20)
        before_log = self.log("keys").body
        tag, before, after = self.run_in_pane(t, ["attach", "-r", "keys"])
        wait_for(lambda: self.get("keys")["clients"] == 1, what="attached")
        time.sleep(0.3)
        t.type("ignored")
        t.keys("Enter")
        self.lodge("send", "keys", "visible\\r", expect=0)
        t.wait_text(r"visible")
        self.assertNotIn(b"ignored", self.log("keys").body)
        self.assertNotEqual((self.get("keys")["cols"],
                             self.get("keys")["rows"]), (90, 20))
        t.keys("C-\\")
        t.wait_text(r"\[detached from keys\]")
        self.assertEqual(self.wait_rc(t, tag), 0)
        self.assertSttyRestored(before, after)
        self.assertTrue(self.log("keys").body.startswith(before_log))
        # -E none: no key detaches; SIGTERM still restores the terminal
        tag, before, after = self.run_in_pane(t, ["attach", "-E", "none",
                                                  "keys"])
        wait_for(lambda: len(lodge_pids("none")) == 1, what="lodge running")
        wait_for(lambda: self.get("keys")["clients"] == 1, what="attached")
        t.keys("C-\\")
        t.keys("C-a")
        time.sleep(0.5)
        self.assertEqual(self.get("keys")["clients"], 1)
        for pid in lodge_pids("none"):
            os.kill(pid, signal.SIGTERM)
        self.assertEqual(self.wait_rc(t, tag), 128 + signal.SIGTERM)
        self.assertSttyRestored(before, after)
        self.assertEqual(self.get("keys")["state"], "running")

    def test_new_attach_at_once(self):
        t = self.pane()
        tag, before, after = self.run_in_pane(t, [
            "new", "-A", "-n", "at-once", "-e", "PS1=" + self.PS1, "--",
            "bash", "--norc", "--noprofile", "-i"])
        t.wait_text(r"(?m)^" + re.escape(self.PS1))
        s = wait_for(lambda: self.d.request(
            "GET", sess_path("at-once")).status == 200 and
            self.get("at-once"), what="session at-once")
        self.d.note_session(s)
        self.addCleanup(self._delete_quietly, self.d, s["id"])
        self.assertTrue(s["pty"])
        self.assertEqual((s["cols"], s["rows"]), (100, 30))
        t.line("echo TERM=$TERM; exit 3")
        t.wait_text(r"\[exited with code 3\]")
        self.assertEqual(self.wait_rc(t, tag), 3)
        self.assertSttyRestored(before, after)
        # our TERM (the pane's) went with the session
        term = t.tmux("show-options", "-gv",
                      "default-terminal").stdout.decode().strip()
        self.assertTrue(term)
        self.assertIn(("TERM=%s\r\n" % term).encode(),
                      self.log("at-once").body)

    def test_attach_on_a_terminal_paces_a_flood(self):
        # a terminal that reads slowly holds the session's program back
        # (pace): nothing is skipped, and the program waits meanwhile
        size = 64 * 1024 * 1024
        self.new("-n", "flood", "--no-pty", "--", "sh", "-c",
                 "read x; head -c %d /dev/zero | tr '\\0' a; "
                 "echo FLOOD-END" % size)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ,
                    struct.pack("HHHH", 24, 80, 0, 0))
        proc = subprocess.Popen([LODGE, "attach", "flood"], stdin=slave,
                                stdout=slave, stderr=slave,
                                env=self.lodge_env(), close_fds=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.addCleanup(os.close, master)
        self.addCleanup(os.close, slave)
        wait_for(lambda: self.get("flood")["clients"] == 1, what="attached")
        self.input("flood", "go\n")
        seen = bytearray()
        slow_until = time.monotonic() + 1.5
        while time.monotonic() < slow_until:
            r, _, _ = select.select([master], [], [], 0.02)
            if r:
                seen += os.read(master, 16384)
            time.sleep(0.02)
        ahead = self.get("flood")["outputBytes"] - len(seen)
        # the window, the sockets' and the terminal's buffers; not 64 MiB
        self.assertLess(ahead, 24 * 1024 * 1024,
                        "the program ran %d bytes ahead" % ahead)
        deadline = time.monotonic() + TIMEOUT
        while proc.poll() is None or select.select([master], [], [], 0)[0]:
            self.assertLess(time.monotonic(), deadline, "no exit")
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        self.assertEqual(proc.returncode, 0)
        self.assertNotIn(b"lost", seen)
        self.assertEqual(seen.count(b"a"), size)
        self.assertIn(b"FLOOD-END", seen)

    def test_input_before_live_is_dropped(self):
        # a replay bigger than every buffer on the way: lodge cannot reach
        # "live" until we read the terminal, so what we type first arrives
        # during the replay (as a terminal's answers to queries would)
        self.new("-n", "replay", "--", "sh", "-c",
                     "head -c 900000 /dev/zero | tr '\\0' x; echo; "
                     "echo END-OF-REPLAY; exec cat")
        self.wait_log("replay", "END-OF-REPLAY")
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ,
                    struct.pack("HHHH", 24, 80, 0, 0))
        saved = termios.tcgetattr(slave)
        proc = subprocess.Popen([LODGE, "attach", "replay"], stdin=slave,
                                stdout=slave, stderr=slave,
                                env=self.lodge_env(), close_fds=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.addCleanup(os.close, master)
        wait_for(lambda: self.get("replay")["clients"] == 1, what="attached")
        time.sleep(0.5)
        os.write(master, b"EARLY\r")
        seen = bytearray()
        deadline = time.monotonic() + TIMEOUT
        while b"END-OF-REPLAY" not in seen:
            self.assertLess(time.monotonic(), deadline, "no replay end")
            r, _, _ = select.select([master], [], [], 1)
            if r:
                seen += os.read(master, 65536)
        time.sleep(0.5)
        os.write(master, b"LATE\r")
        self.wait_log("replay", r"LATE\r\n.*LATE")
        body = self.log("replay").body
        self.assertFalse(b"EARLY" in body, "input typed during the replay "
                         "reached the session: %r" % body[-200:])
        os.write(master, b"\x1c")
        deadline = time.monotonic() + TIMEOUT
        while proc.poll() is None:
            self.assertLess(time.monotonic(), deadline, "no detach")
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                seen += os.read(master, 65536)
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(termios.tcgetattr(slave), saved)
        os.close(slave)


class TestCliFrontDown(TerminalMixin, DaemonPerClass):
    """attach, log and wait reach a session through its own socket while
    the front is down."""

    def test_attach_log_wait_without_front(self):
        d = self.start_daemon()
        s = self.new("-n", "orphan", "-e", "PS1=" + self.PS1, "--", "bash",
                     "--norc", "--noprofile", "-i", d=d)
        w = self.new("--no-pty", "--", "sh", "-c", "read x; exit $x", d=d)
        self.wait_log(s["id"], re.escape(self.PS1), d=d)
        d.kill9()
        p = self.lodge("ls", d=d)
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "cannot connect")
        # log by name and by id
        p = self.lodge("log", "orphan", d=d, expect=0)
        self.assertIn(self.PS1.encode(), p.stdout)
        p = self.lodge("log", s["id"], d=d, expect=0)
        self.assertIn(self.PS1.encode(), p.stdout)
        p = self.lodge("log", "nobody", d=d)
        self.assertEqual(p.returncode, 1)
        self.assertOneErrorLine(p, "nobody")
        # attach by name: keys, output, detach
        t = self.pane(d)
        tag, before, after = self.run_in_pane(t, ["attach", "orphan"])
        t.wait_text(r"(?m)^" + re.escape(self.PS1))
        t.line("echo $((7*6))FRONTLESS")
        t.wait_text(r"\n42FRONTLESS")
        t.keys("C-\\")
        t.wait_text(r"\[detached from orphan\]")
        self.assertEqual(self.wait_rc(t, tag), 0)
        self.assertSttyRestored(before, after)
        # wait, while the front is still down
        waiter = subprocess.Popen([LODGE, "wait", w["id"]],
                                  env=self.lodge_env(d),
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.addCleanup(lambda: waiter.poll() is None and waiter.kill())
        time.sleep(0.5)
        self.assertIsNone(waiter.poll())
        # the front comes back; the session's exit reaches the waiter
        d.restart()
        self.input(w["id"], "6\n", d=d)
        _, err = waiter.communicate(timeout=TIMEOUT)
        self.assertEqual(waiter.returncode, 6, err)
        p = self.lodge("log", "orphan", d=d, expect=0)
        self.assertIn(b"42FRONTLESS", p.stdout)


# -------------------------------------------------------------------- exec

class TestCliExec(TerminalMixin, DaemonPerClass):

    def test_exit_codes(self):
        self.lodge("exec", "--", "true", expect=0)
        self.lodge("exec", "false", expect=1)
        self.lodge("exec", "--", "sh", "-c", "exit 42", expect=42)
        p = self.lodge("exec", "--", "sh", "-c", "kill -TERM $$")
        self.assertEqual(p.returncode, 128 + signal.SIGTERM, p)
        p = self.lodge("exec", "--", "sh", "-c", "kill -KILL $$")
        self.assertEqual(p.returncode, 128 + signal.SIGKILL, p)

    def test_streams_workdir_env(self):
        p = self.lodge("exec", "-d", "/tmp", "-e", "A=b c", "--", "sh", "-c",
                       'pwd; echo "$A"; echo oops >&2; printf "\\377\\000"',
                       expect=0)
        self.assertEqual(p.stdout, b"/tmp\nb c\n\xff\x00")
        self.assertEqual(p.stderr, b"oops\n")
        here = tempfile.mkdtemp(prefix="lodge-cli-exec-")
        self.addCleanup(os.rmdir, here)
        p = self.lodge("exec", "pwd", cwd=here, expect=0)
        self.assertEqual(p.stdout.decode().strip(), here)

    def test_stdin_and_eof(self):
        p = self.lodge("exec", "--", "cat", input=b"hello\nworld\n",
                       expect=0)
        self.assertEqual(p.stdout, b"hello\nworld\n")
        data = os.urandom(300000)
        p = self.lodge("exec", "--", "sh", "-c", "wc -c; echo done",
                       input=data, expect=0)
        self.assertEqual(p.stdout.split(), [b"300000", b"done"])
        # no input at all: the command sees its end at once
        p = self.lodge("exec", "--", "wc", "-c", input=b"", expect=0)
        self.assertEqual(p.stdout.strip(), b"0")

    def test_large_output_through_a_slow_reader(self):
        # more than every buffer on the way; we read slowly, so lodge must
        # hold the stream back rather than buffer it all (RSS bounded)
        n = 32 * 1024 * 1024
        proc = subprocess.Popen([LODGE, "exec", "--", "head", "-c", str(n),
                                 "/dev/zero"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                env=self.lodge_env())
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        got = len(proc.stdout.read(65536))
        time.sleep(1.5)
        with open("/proc/%d/status" % proc.pid) as f:
            rss = [int(l.split()[1]) for l in f if l.startswith("VmRSS")][0]
        self.assertLess(rss, 16 * 1024, "lodge buffers the stream: %d kB"
                        % rss)
        while True:
            b = proc.stdout.read(1 << 20)
            if not b:
                break
            got += len(b)
        _, err = proc.communicate(timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(got, n)

    def test_signals_are_passed_on(self):
        proc = subprocess.Popen(
            [LODGE, "exec", "--", "sh", "-c",
             "trap 'echo got INT; exit 3' INT; echo ready; "
             "while :; do sleep 0.1; done"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=self.lodge_env())
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIMEOUT)
        self.assertEqual(out, b"got INT\n", err)
        self.assertEqual(proc.returncode, 3, err)
        # a TERM without a trap ends the command: 128+15
        proc = subprocess.Popen([LODGE, "exec", "--", "sh", "-c",
                                 "echo ready; exec sleep 100"],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.lodge_env())
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=TIMEOUT)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM)

    def test_timeout_and_failures(self):
        t0 = time.monotonic()
        p = self.lodge("exec", "--timeout", "0.5", "--", "sleep", "30")
        self.assertEqual(p.returncode, 124, p)
        self.assertLess(time.monotonic() - t0, 15)
        self.assertOneErrorLine(p, "timed out")
        p = self.lodge("exec", "--", "/no/such/program")
        self.assertEqual(p.returncode, 1, p)
        self.assertOneErrorLine(p)
        p = self.lodge("exec", "-d", "/no/such/dir", "--", "true")
        self.assertEqual(p.returncode, 1, p)
        self.assertOneErrorLine(p)

    def test_exec_tty_in_a_terminal(self):
        t = self.pane()
        tag, before, after = self.run_in_pane(t, [
            "exec", "-t", "-e", "PS1=" + self.PS1, "--", "bash", "--norc",
            "--noprofile", "-i"])
        t.wait_text(r"(?m)^" + re.escape(self.PS1))
        t.line("tty; stty size; echo $((3*4))TTY")
        t.wait_text(r"/dev/pts/\d+\s+30 100\s+12TTY")
        t.resize(110, 35)
        time.sleep(0.5)
        t.line("stty size")
        t.wait_text(r"\n35 110\s")
        t.line("exit 6")
        self.assertEqual(self.wait_rc(t, tag), 6)
        self.assertSttyRestored(before, after)
        # without -t, in the same terminal: no tty, and the terminal's
        # settings are left alone
        tag, before, after = self.run_in_pane(t, ["exec", "--", "sh", "-c",
                                                  "tty; exit 2"])
        t.wait_text(r"not a tty")
        self.assertEqual(self.wait_rc(t, tag), 2)
        self.assertSttyRestored(before, after)


# ------------------------------------------------------- man and completion

class TestCliDocs(unittest.TestCase):

    def test_man_page_lint_and_coverage(self):
        # from man/, so that the pages' references to each other resolve
        p = subprocess.run(["mandoc", "-T", "lint",
                            os.path.basename(MANPAGE)],
                           cwd=os.path.dirname(MANPAGE),
                           stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stdout.decode())
        # The state of the machine's man database (makewhatis) is not the
        # page's: mandoc's note about an outdated mandoc.db is left out.
        out = [l for l in p.stdout.splitlines() if b"mandoc.db" not in l]
        self.assertEqual(out, [])
        with open(MANPAGE) as f:
            man = f.read()
        check_binary()
        listing = subprocess.run([LODGE, "help"], stdout=subprocess.PIPE,
                                 timeout=TIMEOUT).stdout.decode()
        commands = re.findall(r"^  (\w+)\s", listing, re.M)
        self.assertGreaterEqual(len(commands), 10)
        for c in commands:
            self.assertRegex(man, r"\n\.It (Xo\n\.)?Cm %s\b" % c)
            h = subprocess.run([LODGE, "help", c], stdout=subprocess.PIPE,
                               timeout=TIMEOUT).stdout.decode()
            for opt in re.findall(r"--([a-z][a-z-]+)", h):
                self.assertIn("Fl -" + opt, man,
                              "lodge %s --%s is not in lodge.1" % (c, opt))
            for opt in re.findall(r"^  -([A-Za-z]),", h, re.M):
                self.assertRegex(man, r"Fl %s\b" % opt)
        for opt in re.findall(r"--([a-z][a-z-]+)", listing):
            self.assertIn("Fl -" + opt, man)

if __name__ == "__main__":
    lodgetest.main()

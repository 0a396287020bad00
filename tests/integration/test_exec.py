#!/usr/bin/python3
"""One-shot exec: POST /v1/exec (lodge-protocol(7) ERROR REPLIES, REST
CALLS, THE EXEC RESULT).

Run: LODGED=/path/to/lodged /usr/bin/python3 tests/integration/test_exec.py
"""

import base64
import concurrent.futures
import http.client
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
from lodgetest import proc_exists, wait_for  # noqa: E402

MiB = 1024 * 1024
RESULT_KEYS = {"stdout", "stderr", "exitCode", "signal", "timedOut",
               "truncated", "durationMs"}


class ExecMixin:
    """exec() posts a request and checks the result's shape."""

    def exec_reply(self, body, d=None, timeout=lt.HTTP_TIMEOUT, **kw):
        return (d or self.d).request("POST", "/v1/exec", body,
                                     timeout=timeout, **kw)

    def exec(self, body, d=None, timeout=lt.HTTP_TIMEOUT):
        try:
            r = self.exec_reply(body, d=d, timeout=timeout)
        except OSError as e:
            short = {k: (v if not isinstance(v, str) or len(v) < 100
                         else "%s...(%d chars)" % (v[:20], len(v)))
                     for k, v in body.items()} \
                if isinstance(body, dict) else body
            raise AssertionError("exec %r: no complete reply within %.0f s "
                                 "(%r)" % (short, timeout, e)) from None
        if r.status != 200:
            raise AssertionError("exec %r: expected 200, got %s %r"
                                 % (body, r.status, r.body[:1000]))
        self.assertTrue(r.headers.get("content-type", "")
                        .startswith("application/json"), r.headers)
        res = r.json()
        self.check_result(res, body)
        return res

    def check_result(self, res, body=None):
        self.assertIsInstance(res, dict)
        self.assertEqual(set(res) & RESULT_KEYS, RESULT_KEYS,
                         "exec result lacks fields: %r" % (res,))
        self.assertIsInstance(res["stdout"], str, res)
        self.assertIsInstance(res["stderr"], str, res)
        ec, sig = res["exitCode"], res["signal"]
        self.assertTrue(ec is None or (isinstance(ec, int) and
                                       not isinstance(ec, bool)), res)
        self.assertTrue(sig is None or isinstance(sig, str), res)
        # exactly one of exitCode and signal
        self.assertTrue((ec is None) != (sig is None),
                        "exactly one of exitCode and signal must be set: %r"
                        % ({k: v for k, v in res.items()
                            if k not in ("stdout", "stderr")},))
        if sig is not None:
            self.assertRegex(sig, r"^[A-Z][A-Z0-9]*$",
                             "signal is a name without SIG")
            self.assertFalse(sig.startswith("SIG"), res)
        self.assertIsInstance(res["timedOut"], bool, res)
        self.assertIsInstance(res["truncated"], bool, res)
        self.assertIsInstance(res["durationMs"], int, res)
        self.assertFalse(isinstance(res["durationMs"], bool), res)
        self.assertGreaterEqual(res["durationMs"], 0, res)

    def brief(self, res):
        """The result with long outputs cut, for failure messages."""
        out = dict(res)
        for k in ("stdout", "stderr"):
            v = out.get(k)
            if isinstance(v, str) and len(v) > 200:
                out[k] = "%r...(%d chars)...%r" % (v[:60], len(v), v[-60:])
        return out


class TestExec(ExecMixin, lt.DaemonPerClass):

    # ------------------------------------------------------ command, args

    async def test_command_runs_through_the_users_shell(self):
        res = self.exec({"command": "echo $((6*7)) | tr 4 X; "
                                    "echo err >&2; exit 3"})
        self.assertEqual(res["stdout"], "X2\n", res)
        self.assertEqual(res["stderr"], "err\n", res)
        self.assertEqual(res["exitCode"], 3, res)
        self.assertIsNone(res["signal"], res)
        self.assertIs(res["timedOut"], False, res)
        self.assertIs(res["truncated"], False, res)
        # SHELL -c command, with the user's (root's) shell; `; true` keeps
        # the shell from exec'ing the last command in its place
        shell = pwd.getpwuid(os.getuid()).pw_shell
        res = self.exec({"command": "readlink /proc/$$/exe; true"})
        self.assertEqual(res["stdout"].strip(), os.path.realpath(shell),
                         res)
        res = self.exec({"command": "printf '%s|' \"$0\" \"$SHELL\""})
        self.assertEqual(res["stdout"].split("|")[1], shell, res)

    async def test_args_run_directly_without_a_shell(self):
        res = self.exec({"args": ["echo", "$HOME", "a  b", "*", "`x`;",
                                  "'q'"]})
        self.assertEqual(res["stdout"], "$HOME a  b * `x`; 'q'\n", res)
        self.assertEqual(res["exitCode"], 0, res)
        # looked up in PATH as execvp does, or given a path
        res = self.exec({"args": ["printf", "%s-%s", "a", "b"]})
        self.assertEqual(res["stdout"], "a-b", res)
        res = self.exec({"args": ["/bin/sh", "-c", "exit 9"]})
        self.assertEqual(res["exitCode"], 9, res)
        # the program is args[0] itself: no shell sits between
        res = self.exec({"args": ["sh", "-c", "cat /proc/$PPID/cmdline"]})
        self.assertNotIn("-c\0sh", res["stdout"], res)
        self.assertIn("lodged", res["stdout"],
                      "the parent of an args command should be lodged: %r"
                      % res)

    async def test_missing_program_with_command_is_an_exit_code(self):
        # with `command` the shell reports it: 127, not spawn_failed
        res = self.exec({"command": "no-such-program-lodge-test"})
        self.assertEqual(res["exitCode"], 127, res)
        self.assertIn("no-such-program-lodge-test", res["stderr"], res)

    # ---------------------------------------------------- workDir, env

    async def test_workdir(self):
        tmp = tempfile.mkdtemp(prefix="lodge-exec-wd-")
        self.addCleanup(shutil.rmtree, tmp, True)
        res = self.exec({"args": ["pwd"], "workDir": tmp})
        self.assertEqual(res["stdout"], tmp + "\n", res)
        res = self.exec({"command": "pwd -P; ls", "workDir": tmp})
        self.assertEqual(res["stdout"], os.path.realpath(tmp) + "\n", res)
        open(os.path.join(tmp, "marker"), "w").close()
        res = self.exec({"args": ["ls"], "workDir": tmp})
        self.assertEqual(res["stdout"], "marker\n", res)

    async def test_env_is_added_to_the_default_environment(self):
        res = self.exec({"args": ["env"],
                         "env": {"FOO": "bar baz", "LODGE_X": "ü=1"}})
        env = dict(line.split("=", 1) for line in
                   res["stdout"].splitlines())
        self.assertEqual(env.get("FOO"), "bar baz", res)
        self.assertEqual(env.get("LODGE_X"), "ü=1", res)
        # the user's default environment is still there
        self.assertEqual(env.get("HOME"), pwd.getpwuid(0).pw_dir, res)
        self.assertEqual(env.get("USER"), "root", res)
        self.assertTrue(env.get("PATH"), res)
        # ... and the daemon's own environment is not passed on
        self.assertNotIn("LODGE_TEST_RUNDIR", env, res)
        # a given variable overrides the default one
        res = self.exec({"command": "printf %s \"$HOME\"",
                         "env": {"HOME": "/somewhere"}})
        self.assertEqual(res["stdout"], "/somewhere", res)

    # ------------------------------------------------------------ stdin

    async def test_stdin_fed_then_closed(self):
        res = self.exec({"args": ["cat"], "stdin": "hello\nwörld"})
        self.assertEqual(res["stdout"], "hello\nwörld", res)
        self.assertEqual(res["exitCode"], 0, res)
        # the bytes are the string's UTF-8
        res = self.exec({"args": ["od", "-An", "-tx1"], "stdin": "é"})
        self.assertEqual(res["stdout"].split(), ["c3", "a9"], res)
        # closed after it: a reader sees EOF
        res = self.exec({"command": "wc -l; echo after",
                         "stdin": "a\nb\nc\n"})
        self.assertEqual(res["stdout"].split(), ["3", "after"], res)

    async def test_default_stdin_is_dev_null(self):
        t0 = time.monotonic()
        res = self.exec({"args": ["cat"]}, timeout=15)
        self.assertLess(time.monotonic() - t0, 5,
                        "cat with no stdin should return at once")
        self.assertEqual(res["stdout"], "", res)
        self.assertEqual(res["exitCode"], 0, res)
        res = self.exec({"args": ["readlink", "/proc/self/fd/0"]})
        self.assertEqual(res["stdout"], "/dev/null\n", res)

    # ---------------------------------------------------------- timeout

    async def test_timeout_with_a_fraction(self):
        t0 = time.monotonic()
        res = self.exec({"args": ["sleep", "30"], "timeoutSeconds": 0.5})
        wall = time.monotonic() - t0
        self.assertIs(res["timedOut"], True, res)
        self.assertIsNone(res["exitCode"], res)
        self.assertEqual(res["signal"], "TERM", res)
        self.assertGreaterEqual(res["durationMs"], 450, res)
        self.assertLess(res["durationMs"], 2000, res)
        self.assertLess(wall, 10, res)
        self.assertGreaterEqual(wall, 0.45, res)

    async def test_timeout_reaches_the_whole_process_group(self):
        res = self.exec({"command": "sleep 1000 & echo $!; wait",
                         "timeoutSeconds": 0.4}, timeout=30)
        self.assertIs(res["timedOut"], True, res)
        bg = int(res["stdout"].split()[0])
        wait_for(lambda: not proc_exists(bg), 5,
                 what="background child %d to die with its group" % bg)

    async def test_timeout_then_kill_if_term_is_ignored(self):
        t0 = time.monotonic()
        res = self.exec({"command": "trap '' TERM; sleep 30",
                         "timeoutSeconds": 0.3})
        wall = time.monotonic() - t0
        self.assertIs(res["timedOut"], True, res)
        self.assertIsNone(res["exitCode"], res)
        self.assertEqual(res["signal"], "KILL", res)
        # TERM at 0.3 s, KILL about 2 s later
        self.assertGreaterEqual(res["durationMs"], 1800, res)
        self.assertLess(wall, 15, res)

    async def test_no_timeout(self):
        for extra in ({}, {"timeoutSeconds": 0}, {"timeoutSeconds": 30}):
            res = self.exec(dict({"command": "sleep 0.3; echo done"},
                                 **extra))
            self.assertEqual(res["stdout"], "done\n", (extra, res))
            self.assertIs(res["timedOut"], False, (extra, res))
            self.assertEqual(res["exitCode"], 0, (extra, res))

    # ---------------------------------------------------- maxOutputBytes

    async def test_max_output_bytes_truncates_each_stream(self):
        res = self.exec({"command": "printf 0123456789abcdef; printf XYZ >&2",
                         "maxOutputBytes": 10})
        self.assertEqual(res["stdout"], "0123456789", res)
        self.assertEqual(res["stderr"], "XYZ", res)
        self.assertIs(res["truncated"], True, res)
        self.assertEqual(res["exitCode"], 0, res)
        res = self.exec({"command": "printf abc; head -c 50 /dev/zero | "
                                    "tr '\\0' e >&2",
                         "maxOutputBytes": 10})
        self.assertEqual(res["stdout"], "abc", res)
        self.assertEqual(res["stderr"], "e" * 10, res)
        self.assertIs(res["truncated"], True, res)

    async def test_max_output_bytes_keeps_exactly_n_bytes(self):
        full = "".join("%d\n" % i for i in range(1, 100001))
        for n in (1, 1000, 4096, 65536, 65537, 300000):
            res = self.exec({"args": ["seq", "1", "100000"],
                             "maxOutputBytes": n})
            self.assertEqual(len(res["stdout"]), n, self.brief(res))
            self.assertTrue(res["stdout"] == full[:n],
                            "the first %d bytes differ" % n)
            self.assertIs(res["truncated"], True, (n, self.brief(res)))
            self.assertEqual(res["exitCode"], 0, self.brief(res))
        # exactly the limit: nothing dropped
        res = self.exec({"args": ["seq", "1", "100000"],
                         "maxOutputBytes": len(full)})
        self.assertEqual(len(res["stdout"]), len(full))
        self.assertIs(res["truncated"], False, self.brief(res))
        res = self.exec({"args": ["seq", "1", "100000"],
                         "maxOutputBytes": len(full) - 1})
        self.assertIs(res["truncated"], True, self.brief(res))

    async def test_truncated_output_never_blocks_the_child(self):
        """50 MB to stdout with maxOutputBytes 10: the rest is read and
        dropped, so the writer runs to its end (it is neither blocked nor
        killed by SIGPIPE) and what follows it runs too."""
        t0 = time.monotonic()
        res = self.exec({"command": "head -c 50000000 /dev/zero; "
                                    "echo done >&2",
                         "maxOutputBytes": 10}, timeout=60)
        wall = time.monotonic() - t0
        self.assertEqual(res["stdout"], "\0" * 10, self.brief(res))
        self.assertEqual(res["stderr"], "done\n", res)
        self.assertIs(res["truncated"], True, res)
        self.assertEqual(res["exitCode"], 0, res)
        self.assertIs(res["timedOut"], False, res)
        self.assertLess(wall, 30, res)
        # the same with the writer as the direct child (no shell)
        res = self.exec({"args": ["head", "-c", "50000000", "/dev/zero"],
                         "maxOutputBytes": 10}, timeout=60)
        self.assertEqual(res["exitCode"], 0, self.brief(res))
        self.assertIsNone(res["signal"], self.brief(res))
        self.assertIs(res["truncated"], True, self.brief(res))

    # --------------------------------------------------------- encoding

    async def test_utf8_replaces_invalid_bytes(self):
        res = self.exec({"command": "printf '\\377'"})
        self.assertEqual(res["stdout"], "\ufffd", res)
        res = self.exec({"command": "printf 'a\\377b\\303\\251\\342\\202'; "
                                    "printf '\\200x' >&2",
                         "encoding": "utf8"})
        self.assertEqual(res["stdout"], "a\ufffdb\u00e9\ufffd", res)
        self.assertEqual(res["stderr"], "\ufffdx", res)
        # valid UTF-8 (4-byte too) and NUL pass unchanged
        res = self.exec({"command": "printf 'x\\360\\237\\230\\200\\000y'"})
        self.assertEqual(res["stdout"], "x\U0001F600\0y", res)

    async def test_base64_round_trip(self):
        data = bytes(range(256)) * 4 + b"\xff\x00\x80"
        errdata = b"\x00\xfe\xfd"
        tmp = tempfile.mkdtemp(prefix="lodge-exec-b64-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(tmp, "out"), "wb") as f:
            f.write(data)
        with open(os.path.join(tmp, "err"), "wb") as f:
            f.write(errdata)
        r = self.exec_reply({"command": "cat out; cat err >&2",
                             "workDir": tmp, "encoding": "base64"})
        self.assertEqual(r.status, 200,
                         "base64 exec of %d binary bytes: %r"
                         % (len(data), r))
        res = r.json()
        self.check_result(res)
        self.assertEqual(base64.b64decode(res["stdout"], validate=True),
                         data, res)
        self.assertEqual(base64.b64decode(res["stderr"], validate=True),
                         errdata, res)
        # empty output is the empty string
        res = self.exec({"args": ["true"], "encoding": "base64"})
        self.assertEqual(res["stdout"], "", res)

    async def test_base64_small_outputs(self):
        """1, 2 and 3 bytes (every padding case) in base64."""
        for data in (b"a", b"ab", b"abc", b"\xff", b"hello"):
            esc = "".join("\\%03o" % c for c in data)
            r = self.exec_reply({"args": ["printf", esc],
                                 "encoding": "base64"})
            self.assertEqual(r.status, 200, "printf %r, base64: %r"
                             % (data, r))
            res = r.json()
            self.assertEqual(res["stdout"],
                             base64.b64encode(data).decode(), res)

    # ------------------------------------------------------- durationMs

    async def test_duration_ms(self):
        t0 = time.monotonic()
        res = self.exec({"args": ["sleep", "0.3"]})
        wall = (time.monotonic() - t0) * 1000
        self.assertGreaterEqual(res["durationMs"], 280, res)
        self.assertLessEqual(res["durationMs"], wall + 50, (res, wall))
        res = self.exec({"args": ["true"]})
        self.assertLess(res["durationMs"], 1000, res)

    # ------------------------------------------------------------- user

    async def test_user_nobody(self):
        if os.getuid() != 0:
            self.skipTest("needs root")
        nobody = pwd.getpwnam("nobody")
        res = self.exec({"args": ["id", "-u"], "user": "nobody",
                         "workDir": "/"})
        self.assertEqual(res["stdout"], "%d\n" % nobody.pw_uid, res)
        self.assertEqual(nobody.pw_uid, 65534)
        # group and supplementary groups are nobody's, not root's
        res = self.exec({"args": ["id", "-g"], "user": "nobody",
                         "workDir": "/"})
        self.assertEqual(res["stdout"], "%d\n" % nobody.pw_gid, res)
        res = self.exec({"args": ["id", "-G"], "user": "nobody",
                         "workDir": "/"})
        self.assertNotIn("0", res["stdout"].split(), res)
        # real, effective and saved ids all dropped
        res = self.exec({"args": ["grep", "-E", "^(Uid|Gid):",
                                  "/proc/self/status"],
                         "user": "nobody", "workDir": "/"})
        for line in res["stdout"].splitlines():
            ids = line.split()[1:]
            self.assertEqual(len(ids), 4, res)
            self.assertTrue(all(i == "65534" for i in ids), res)
        # the user's environment
        res = self.exec({"args": ["env"], "user": "nobody", "workDir": "/"})
        env = dict(line.split("=", 1) for line in
                   res["stdout"].splitlines())
        self.assertEqual(env.get("USER"), "nobody", res)
        self.assertEqual(env.get("HOME"), nobody.pw_dir, res)
        # root by name works too
        res = self.exec({"args": ["id", "-u"], "user": "root"})
        self.assertEqual(res["stdout"], "0\n", res)

    # --------------------------------------------------- spawn failures

    def spawn_failed(self, body, *words):
        r = self.exec_reply(body)
        j = self.assertError(r, 422, "spawn_failed")
        msg = j["error"]["message"]
        for w in words:
            self.assertIn(w.lower(), msg.lower(),
                          "422 message for %r should name %r: %r"
                          % (body, w, msg))
        return msg

    async def test_spawn_failures(self):
        self.spawn_failed({"args": ["no-such-program-lodge-test"]},
                          "no-such-program-lodge-test",
                          "No such file or directory")
        self.spawn_failed({"args": ["/no/such/dir/prog"]},
                          "/no/such/dir/prog", "No such file or directory")
        # not executable: a plain file, a directory
        self.spawn_failed({"args": ["/etc/passwd"]}, "/etc/passwd",
                          "Permission denied")
        self.spawn_failed({"args": ["/tmp"]}, "/tmp", "Permission denied")
        # workDir missing, or not a directory
        self.spawn_failed({"args": ["true"],
                           "workDir": "/no/such/dir-lodge"},
                          "/no/such/dir-lodge", "No such file or directory")
        self.spawn_failed({"command": "true",
                           "workDir": "/no/such/dir-lodge"},
                          "/no/such/dir-lodge")
        self.spawn_failed({"args": ["true"], "workDir": "/etc/passwd"},
                          "/etc/passwd", "Not a directory")
        # unknown user
        self.spawn_failed({"args": ["true"], "user": "no-such-user-lodge"},
                          "no-such-user-lodge")
        self.spawn_failed({"command": "true", "user": "no-such-user-lodge"},
                          "no-such-user-lodge")
        # nobody's home does not exist, and is the default workDir
        self.spawn_failed({"args": ["true"], "user": "nobody"},
                          pwd.getpwnam("nobody").pw_dir)
        # the daemon still works afterwards
        self.assertEqual(self.exec({"args": ["echo", "ok"]})["stdout"],
                         "ok\n")

    def test_user_changes_are_seen_at_once(self):
        # passwd lookups are cached; a user added, changed or removed must
        # still be seen by the very next call (no waiting for a timeout)
        name = "lodge-pw-%d" % os.getpid()
        subprocess.run(["userdel", name], capture_output=True)
        self.addCleanup(subprocess.run, ["userdel", name],
                        capture_output=True)
        self.spawn_failed({"args": ["true"], "user": name}, name)
        subprocess.run(["useradd", "-M", "-d", "/", "-s", "/bin/sh", name],
                       check=True)
        uid = pwd.getpwnam(name).pw_uid
        res = self.exec({"args": ["id", "-u"], "user": name})
        self.assertEqual(res["stdout"], "%d\n" % uid, res)
        subprocess.run(["usermod", "-d", "/tmp", name], check=True)
        res = self.exec({"args": ["pwd"], "user": name})
        self.assertEqual(res["stdout"], "/tmp\n", res)
        subprocess.run(["userdel", name], check=True)
        self.spawn_failed({"args": ["true"], "user": name}, name)

    def test_workers_forked_meanwhile_do_not_hold_stdin(self):
        # The template runs exec commands and forks workers: a worker
        # forked while a command's stdin is still being written must not
        # keep that pipe open, or the command never sees its end of input.
        data = "x" * (1 << 20)
        body = {"command": "sleep 0.5; cat >/dev/null; echo done",
                "stdin": data, "timeoutSeconds": 20}
        with concurrent.futures.ThreadPoolExecutor(1) as ex:
            fut = ex.submit(self.exec, body)
            ids = []
            for i in range(4):
                s = self.d.json("POST", "/v1/sessions", {"args": ["cat"]},
                                expect=201)
                ids.append(s["id"])
                time.sleep(0.05)
            res = fut.result(30)
        for sid in ids:
            self.d.request("DELETE", "/v1/sessions/" + sid)
        self.assertEqual(res["stdout"], "done\n", res)
        self.assertFalse(res["timedOut"], res)

    # ----------------------------------------------------- bad requests

    BAD_BODIES = [
        {},
        {"command": "true", "args": ["true"]},
        {"command": 3},
        {"command": ["true"]},
        {"command": True},
        {"command": ""},
        {"args": "true"},
        {"args": []},
        {"args": [1]},
        {"args": ["true", None]},
        {"args": {"0": "true"}},
        {"args": [""]},
        {"command": "true", "workDir": 5},
        {"command": "true", "workDir": ["/"]},
        {"command": "true", "env": ["A=B"]},
        {"command": "true", "env": "A=B"},
        {"command": "true", "env": {"A": 1}},
        {"command": "true", "env": {"A": None}},
        {"command": "true", "env": {"A=B": "x"}},
        {"command": "true", "env": {"": "x"}},
        {"command": "true", "stdin": 5},
        {"command": "true", "stdin": ["x"]},
        {"command": "true", "timeoutSeconds": "1"},
        {"command": "true", "timeoutSeconds": -1},
        {"command": "true", "timeoutSeconds": True},
        {"command": "true", "user": 0},
        {"command": "true", "user": ["root"]},
        {"command": "true", "encoding": "latin1"},
        {"command": "true", "encoding": 8},
        {"command": "true", "maxOutputBytes": -1},
        {"command": "true", "maxOutputBytes": "10"},
        {"command": "true", "maxOutputBytes": 1.5},
        [1, 2],
        "true",
        42,
    ]

    BAD_RAW = [
        b"",
        b"{not json",
        b'{"command":"true"',
        b'{"command":"true"} trailing',
        b'{"command":"echo \xff"}',
        b'{"command":"true","command":"false"}',
        b"null",
    ]

    async def test_bad_requests(self):
        for body in self.BAD_BODIES:
            with self.subTest(body=body):
                r = self.exec_reply(body)
                self.assertError(r, 400, "bad_request")
        for raw in self.BAD_RAW:
            with self.subTest(raw=raw):
                r = self.exec_reply(None, raw_body=raw,
                                    headers={"Content-Type":
                                             "application/json"})
                self.assertError(r, 400, "bad_request")
        self.assertEqual(self.exec({"args": ["echo", "ok"]})["stdout"],
                         "ok\n")

    async def test_bad_request_messages_name_the_field(self):
        for body, word in [
                ({"command": "x", "args": ["y"]}, "args"),
                ({"command": 3}, "command"),
                ({"args": [1]}, "args"),
                ({"command": "true", "timeoutSeconds": "1"},
                 "timeoutSeconds"),
                ({"command": "true", "maxOutputBytes": -1},
                 "maxOutputBytes"),
                ({"command": "true", "encoding": "x"}, "encoding"),
                ({"command": "true", "env": []}, "env")]:
            j = self.assertError(self.exec_reply(body), 400, "bad_request")
            self.assertIn(word, j["error"]["message"], (body, j))

    async def test_auth_required(self):
        r = self.d.request("POST", "/v1/exec", {"command": "true"},
                           token=None)
        self.assertError(r, 401, "unauthorized")
        r = self.d.request("POST", "/v1/exec", {"command": "true"},
                           token="wrong")
        self.assertError(r, 401, "unauthorized")

    async def test_over_the_unix_socket(self):
        r = self.d.unix_request("POST", "/v1/exec",
                                {"args": ["echo", "unix"]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["stdout"], "unix\n")

    # ---------------------------------------------- exit codes, signals

    async def test_exit_codes(self):
        for code in (0, 1, 2, 42, 126, 255):
            res = self.exec({"args": ["sh", "-c", "exit %d" % code]})
            self.assertEqual(res["exitCode"], code, res)
            self.assertIsNone(res["signal"], res)

    async def test_killed_by_a_signal(self):
        for name in ("TERM", "KILL", "INT", "HUP", "USR1", "SEGV"):
            res = self.exec({"args": ["sh", "-c", "kill -%s $$" % name]})
            self.assertIsNone(res["exitCode"], (name, res))
            self.assertEqual(res["signal"], name, res)
            self.assertIs(res["timedOut"], False, res)
        res = self.exec({"command": "kill -TERM $$"})
        self.assertEqual(res["signal"], "TERM", res)
        self.assertIsNone(res["exitCode"], res)

    # --------------------------------------------------- child hygiene

    async def test_child_has_only_fds_0_1_2(self):
        # the shell lists its own fds (ls is a child of it)
        res = self.exec({"args": ["sh", "-c", "ls /proc/$$/fd; :"]})
        self.assertEqual(res["stdout"].split(), ["0", "1", "2"], res)
        res = self.exec({"args": ["sh", "-c", "ls /proc/$$/fd; :"],
                         "stdin": "x"})
        self.assertEqual(res["stdout"].split(), ["0", "1", "2"], res)
        res = self.exec({"args": ["sh", "-c",
                                  "for f in 0 1 2; do readlink "
                                  "/proc/$$/fd/$f; done"]})
        links = res["stdout"].split()
        self.assertEqual(links[0], "/dev/null", res)
        self.assertRegex(links[1], r"^pipe:", res)
        self.assertRegex(links[2], r"^pipe:", res)
        self.assertNotEqual(links[1], links[2],
                            "stdout and stderr are separate pipes")

    async def test_child_signal_state_is_clean(self):
        res = self.exec({"args": ["grep", "-E", "^Sig(Blk|Ign):",
                                  "/proc/self/status"]})
        lines = res["stdout"].splitlines()
        self.assertEqual(len(lines), 2, res)
        for line in lines:
            self.assertRegex(line, r"^Sig(Blk|Ign):\s+0+$", res)
        # the same through the shell and with stdin fed
        res = self.exec({"command": "grep -E '^Sig(Blk|Ign):' "
                                    "/proc/self/status", "stdin": "x"})
        lines = res["stdout"].splitlines()
        self.assertEqual(len(lines), 2, res)
        for line in lines:
            self.assertRegex(line, r"^Sig(Blk|Ign):\s+0+$", res)
        if os.getuid() == 0:
            res = self.exec({"args": ["grep", "-E", "^Sig(Blk|Ign):",
                                      "/proc/self/status"],
                             "user": "nobody", "workDir": "/"})
            lines = res["stdout"].splitlines()
            self.assertEqual(len(lines), 2, res)
            for line in lines:
                self.assertRegex(line, r"^Sig(Blk|Ign):\s+0+$", res)

    async def test_child_is_in_a_new_session_and_group(self):
        res = self.exec({"args": ["sh", "-c",
                                  "cut -d' ' -f1,5,6,7 /proc/$$/stat"]})
        pid, pgrp, sid, tty = res["stdout"].split()
        self.assertEqual(pgrp, pid, res)
        self.assertEqual(sid, pid, res)
        self.assertEqual(tty, "0", "no controlling terminal: %r" % res)

    async def test_background_child_holding_the_pipe(self):
        """The command exits while a background child keeps stdout open:
        the reply comes after a short drain deadline, not when the child
        ends."""
        t0 = time.monotonic()
        res = self.exec({"command": "sleep 60 & echo $!; echo started"},
                        timeout=40)
        wall = time.monotonic() - t0
        bg = int(res["stdout"].split()[0])
        self.addCleanup(self._kill, bg)
        self.assertEqual(res["stdout"].split()[1:], ["started"], res)
        self.assertEqual(res["exitCode"], 0, res)
        self.assertLess(wall, 20, "the reply waited for the background "
                        "child (%.1f s)" % wall)

    @staticmethod
    def _kill(pid):
        try:
            os.kill(pid, 9)
        except OSError:
            pass

    # ---------------------------------------------------------- no tail loss

    async def test_no_lost_tails_200_execs(self):
        """200 execs of a command that prints 133 kB (more than a pipe
        holds) just before it exits: every byte arrives every time."""
        cmd = "head -c 100000 /dev/urandom | base64 -w0; printf END"
        want = 133336 + 3
        bad = []
        for i in range(200):
            res = self.exec({"command": cmd})
            out = res["stdout"]
            if len(out) != want or not out.endswith("END") or \
                    res["exitCode"] != 0 or \
                    not re.fullmatch(r"[A-Za-z0-9+/=]*END", out):
                bad.append("run %d: %d chars (want %d), tail %r, exit %r"
                           % (i, len(out), want, out[-20:],
                              res["exitCode"]))
        self.assertEqual(bad, [], "%d of 200 runs lost output" % len(bad))

    async def test_no_lost_tails_direct_writer(self):
        """The command itself writes 1 MB and exits at once (no shell
        around it): the whole output arrives, every time."""
        want = "".join("%d\n" % i for i in range(1, 142865))
        bad = []
        for i in range(100):
            res = self.exec({"args": ["seq", "1", "142864"]})
            if res["stdout"] != want:
                bad.append("run %d: %d of %d bytes" % (
                    i, len(res["stdout"]), len(want)))
        self.assertEqual(bad, [])

    # ------------------------------------------------------ connections

    async def test_keep_alive(self):
        """Several execs over one HTTP connection, errors included."""
        conn = http.client.HTTPConnection("127.0.0.1", self.d.port,
                                          timeout=30)
        self.addCleanup(conn.close)
        hdr = {"Authorization": "Bearer " + self.d.token}
        socks = set()
        for i in range(6):
            body = [{"args": ["echo", "n%d" % i]},
                    {"command": "printf x%d; exit %d" % (i, i)},
                    {"args": ["no-such-program-lodge-test"]},
                    ][i % 3]
            st, headers, raw = lt._do_request(conn, "POST", "/v1/exec",
                                              body, hdr)
            socks.add(id(conn.sock))
            self.assertIn("content-length", headers)
            self.assertNotEqual(headers.get("connection", "").lower(),
                                "close", headers)
            j = json.loads(raw)
            if i % 3 == 0:
                self.assertEqual(st, 200)
                self.assertEqual(j["stdout"], "n%d\n" % i)
            elif i % 3 == 1:
                self.assertEqual(st, 200)
                self.assertEqual((j["stdout"], j["exitCode"]),
                                 ("x%d" % i, i))
            else:
                self.assertEqual(st, 422, j)
                self.assertEqual(j["error"]["code"], "spawn_failed")
        self.assertEqual(len(socks), 1,
                         "the connection was not kept alive across execs")

    async def test_parallel_execs_run_at_once(self):
        n = 16

        def one(i):
            return self.exec({"command": "sleep 1; echo r%d" % i})
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            results = list(ex.map(one, range(n)))
        wall = time.monotonic() - t0
        for i, res in enumerate(results):
            self.assertEqual(res["stdout"], "r%d\n" % i, res)
        self.assertLess(wall, 6, "16 one-second execs took %.1f s: they "
                        "did not run concurrently" % wall)


class TestExecBigIO(ExecMixin, lt.DaemonPerTest):
    """Big request and reply bodies.  A daemon per test: a failure here
    must not leave a wedged daemon to the other tests."""

    async def test_big_stdin_and_output_at_once(self):
        """2 MB through cat: stdin is fed while stdout is read (no
        deadlock when both pipes fill)."""
        data = "".join("line %07d\n" % i for i in range(2 * MiB // 13))
        res = self.exec({"args": ["cat"], "stdin": data}, timeout=20)
        self.assertEqual(len(res["stdout"]), len(data), self.brief(res))
        self.assertTrue(res["stdout"] == data, "stdout differs from stdin")
        self.assertEqual(res["exitCode"], 0, self.brief(res))

    async def test_stdin_not_read_by_the_command(self):
        """A command that never reads a big stdin still finishes, and the
        daemon survives the broken pipe."""
        t0 = time.monotonic()
        res = self.exec({"args": ["true"], "stdin": "x" * (4 * MiB)},
                        timeout=20)
        self.assertEqual(res["exitCode"], 0, self.brief(res))
        self.assertLess(time.monotonic() - t0, 30)
        res = self.exec({"args": ["head", "-c", "3"],
                         "stdin": "abcdef" * MiB}, timeout=20)
        self.assertEqual(res["stdout"], "abc", self.brief(res))
        self.assertEqual(self.exec({"args": ["echo", "ok"]})["stdout"],
                         "ok\n")

    async def test_default_output_limit_is_16_mib(self):
        """17 MB of output: the default keeps 16 MiB per stream.  The reply
        is about 16 MB of JSON."""
        res = self.exec({"command": "yes | head -c 17000000"}, timeout=30)
        self.assertEqual(len(res["stdout"]), 16 * MiB, self.brief(res))
        self.assertIs(res["truncated"], True, self.brief(res))

    async def test_max_output_ceiling_is_64_mib(self):
        """maxOutputBytes above the ceiling is held to it (64 MiB)."""
        # a generous bound: 64 MiB of JSON under ASan on a busy machine
        res = self.exec({"command": "yes | head -c 70000000",
                         "maxOutputBytes": 200 * MiB}, timeout=120)
        self.assertEqual(len(res["stdout"]), 64 * MiB, self.brief(res))
        self.assertIs(res["truncated"], True, self.brief(res))

    async def test_stdin_sizes(self):
        """stdin of growing sizes, counted by wc -c."""
        for n in (100000, 150000, 300000, 1000000):
            res = self.exec({"args": ["wc", "-c"], "stdin": "x" * n},
                            timeout=20)
            self.assertEqual(res["stdout"].strip(), str(n), res)

    async def test_big_reply(self):
        """A 5 MB reply arrives whole (more than the socket buffers
        hold at once)."""
        res = self.exec({"command": "yes abcdefghi | head -c 5000000"},
                        timeout=20)
        self.assertEqual(len(res["stdout"]), 5000000)
        self.assertIs(res["truncated"], False)


class TestExecOutputOptions(ExecMixin, lt.DaemonPerClass):
    """--default-output-bytes and --max-output-bytes."""

    daemon_args = ("--default-output-bytes", "1000",
                   "--max-output-bytes", "5000")

    async def test_default_applies_when_absent(self):
        res = self.exec({"command": "yes | head -c 3000"})
        self.assertEqual(len(res["stdout"]), 1000, self.brief(res))
        self.assertIs(res["truncated"], True)
        res = self.exec({"command": "yes | head -c 900"})
        self.assertEqual(len(res["stdout"]), 900)
        self.assertIs(res["truncated"], False)

    async def test_request_below_the_ceiling(self):
        res = self.exec({"command": "yes | head -c 30000",
                         "maxOutputBytes": 3000})
        self.assertEqual(len(res["stdout"]), 3000, self.brief(res))
        self.assertIs(res["truncated"], True)

    async def test_request_above_the_ceiling_is_held_to_it(self):
        res = self.exec({"command": "yes | head -c 30000; "
                                    "yes n | head -c 30000 >&2",
                         "maxOutputBytes": 20000})
        self.assertEqual(len(res["stdout"]), 5000, self.brief(res))
        self.assertEqual(len(res["stderr"]), 5000, self.brief(res))
        self.assertIs(res["truncated"], True)


if __name__ == "__main__":
    lt.main()

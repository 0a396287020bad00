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


if __name__ == "__main__":
    unittest.main(verbosity=2)

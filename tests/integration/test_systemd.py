#!/usr/bin/python3
"""lodged under systemd: the unit file verifies, READY=1 reaches
$NOTIFY_SOCKET once lodged listens, and socket activation (LISTEN_FDS)
replaces --listen."""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lodgetest as lt  # noqa: E402

SRCDIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class TestSystemd(unittest.TestCase):

    def test_unit_verifies(self):
        """contrib/lodged.service.in, with ExecStart pointing at the built
        lodged, passes systemd-analyze verify; so does lodged.socket."""
        tmp = tempfile.mkdtemp(prefix="lodge-unit-")
        self.addCleanup(shutil.rmtree, tmp, True)
        with open(os.path.join(SRCDIR, "contrib", "lodged.service.in")) as f:
            unit = f.read()
        self.assertIn("Type=notify", unit)
        self.assertIn("KillMode=process", unit)
        self.assertIn("RuntimeDirectoryPreserve=yes", unit)
        self.assertIn("Restart=on-failure", unit)
        lodged = os.path.abspath(lt.LODGED)
        unit = unit.replace("@sbindir@/lodged", lodged)
        path = os.path.join(tmp, "lodged.service")
        with open(path, "w") as f:
            f.write(unit)
        shutil.copy(os.path.join(SRCDIR, "contrib", "lodged.socket"), tmp)
        for name in ("lodged.service", "lodged.socket"):
            r = subprocess.run(["systemd-analyze", "verify", "--man=no",
                                os.path.join(tmp, name)],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("lodged", r.stderr, r.stderr)

    def test_ready_notification(self):
        """READY=1 arrives on $NOTIFY_SOCKET, after the listeners are up."""
        tmp = tempfile.mkdtemp(prefix="lodge-notify-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)
        sock.bind(path)
        sock.settimeout(15)
        d = lt.Lodged(env={"NOTIFY_SOCKET": path})
        d.start()
        self.addCleanup(d.stop)
        msg = sock.recv(4096)
        self.assertIn(b"READY=1", msg)
        st, _, body = d.request("GET", "/v1/health")
        self.assertEqual(st, 200)
        # and STOPPING=1 when the front stops
        d._kill_front()
        self.assertIn(b"STOPPING=1", sock.recv(4096))

    def test_socket_activation(self):
        """With LISTEN_FDS the TCP listener comes from the service manager
        (systemd-socket-activate here) instead of --listen."""
        port = lt.free_port()
        rundir = tempfile.mkdtemp(prefix="lodge-test-run-")
        self.addCleanup(shutil.rmtree, rundir, True)
        log = open(os.path.join(rundir, "..",
                                "lodged-activate-%d.log" % port), "wb")
        self.addCleanup(log.close)
        p = subprocess.Popen(
            ["systemd-socket-activate", "-l", "127.0.0.1:%d" % port,
             os.path.abspath(lt.LODGED), "--foreground", "--runtime-dir",
             rundir], stdout=log, stderr=log)

        def stop():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
            lt.reap_rundir(rundir, set(), set())
        self.addCleanup(stop)
        tokpath = os.path.join(rundir, "token")
        deadline = time.time() + 15
        status = None
        while time.time() < deadline and status is None:
            try:
                # the first connection is what starts lodged
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                if not os.path.exists(tokpath):
                    c.request("GET", "/v1/health")
                    c.getresponse().read()
                    c.close()
                    time.sleep(0.1)
                    continue
                with open(tokpath) as f:
                    tok = f.read().strip()
                c.request("GET", "/v1/health",
                          headers={"Authorization": "Bearer " + tok})
                r = c.getresponse()
                status = r.status
                body = json.loads(r.read())
                c.close()
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.1)
        self.assertEqual(status, 200)
        self.assertEqual(body["status"], "ok")


if __name__ == "__main__":
    unittest.main(verbosity=2)

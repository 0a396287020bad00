"""POST /v1/exec replies: what they cost the front.

The front keeps a call's output (at most maxOutputBytes of each stream)
and encodes the reply piece by piece as the socket takes it, so its peak
stays within about the output itself; calls in flight reserve twice their
maxOutputBytes from --exec-memory or are refused with 503; a reply nobody
reads is dropped after --write-timeout, and its memory given back.
"""

import base64
import concurrent.futures
import json
import os
import shutil
import socket
import tempfile
import time
import unittest

import lodgetest as lt

MiB = 1024 * 1024


def kib(pid, field):
    return int(lt.proc_status(pid)[field].split()[0])


def exec_request(token, body):
    data = json.dumps(body).encode()
    return ("POST /v1/exec HTTP/1.1\r\nHost: localhost\r\n"
            "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\n\r\n" % (token, len(data))).encode() + data


class TestExecReplyMemory(lt.DaemonPerTest):

    def big_exec(self, command, max_output):
        r = self.d.request("POST", "/v1/exec", {
            "command": command, "maxOutputBytes": max_output},
            timeout=120)
        self.assertEqual(r.status, 200, r)
        return r.json()

    def peak_of(self, command, max_output):
        pid = self.d.proc.pid
        base = kib(pid, "VmHWM")
        res = self.big_exec(command, max_output)
        peak = kib(pid, "VmHWM")
        return res, base, peak

    def test_64mib_reply(self):
        res, base, peak = self.peak_of(
            "head -c %d /dev/zero | tr '\\0' a" % (64 * MiB), 64 * MiB)
        self.assertEqual(len(res["stdout"]), 64 * MiB)
        self.assertEqual(res["stdout"][:3] + res["stdout"][-3:], "aaaaaa")
        self.assertFalse(res["truncated"])
        print("\n[execreply] 64 MiB stdout: front peak %d KiB -> %d KiB "
              "(+%.1f MiB)" % (base, peak, (peak - base) / 1024.0))
        if lt.SANITIZED:
            return
        self.assertLess(peak - base, (64 + 24) * 1024,
                        "a 64 MiB reply took the front's peak %d KiB above "
                        "its %d KiB" % (peak - base, base))

    def test_both_streams_escaped(self):
        """stdout and stderr of 32 MiB each, with characters JSON escapes
        and bytes that are not UTF-8 (the reply is 160 MiB): still about
        the output itself."""
        cmd = ("head -c %d /dev/zero | tr '\\0' '\\n';"
               "head -c %d /dev/zero | tr '\\0' '\\377' >&2" % (
                   32 * MiB, 32 * MiB))
        res, base, peak = self.peak_of(cmd, 32 * MiB)
        self.assertEqual(res["stdout"], "\n" * (32 * MiB))
        self.assertEqual(res["stderr"], "\ufffd" * (32 * MiB))
        print("\n[execreply] 32 MiB newlines + 32 MiB of 0xff: front peak "
              "%d KiB -> %d KiB (+%.1f MiB)" % (base, peak,
                                                 (peak - base) / 1024.0))
        if lt.SANITIZED:
            return
        self.assertLess(peak - base, (64 + 24) * 1024)

    def test_base64_reply(self):
        """Base64 is encoded piece by piece too: every length mod 3."""
        tmp = tempfile.mkdtemp(prefix="lodge-execreply-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "data")
        for n in (0, 1, 2, 3, 65536 * 3 + 1, 3 * MiB + 2):
            data = (bytes(range(256)) * (n // 256 + 1))[:n]
            with open(path, "wb") as f:
                f.write(data)
            res = self.d.request("POST", "/v1/exec", {
                "args": ["cat", path], "encoding": "base64"}).json()
            self.assertEqual(res["stdout"], base64.b64encode(data).decode(),
                             n)


class TestUnreadReply(lt.DaemonPerTest):
    daemon_args = ["--write-timeout", "2"]

    def test_unread_reply_times_out(self):
        d = self.d
        pid = d.proc.pid
        time.sleep(0.3)
        base = kib(pid, "VmRSS")
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.connect(("127.0.0.1", d.port))
        try:
            s.sendall(exec_request(d.token, {
                "command": "head -c %d /dev/zero | tr '\\0' a" % (32 * MiB),
                "maxOutputBytes": 32 * MiB}))
            # the output is in the front, the reply stuck in the socket
            lt.wait_for(lambda: lt.SANITIZED or
                        kib(pid, "VmRSS") > base + 24 * 1024,
                        timeout=30, what="the output in the front")
            held = kib(pid, "VmRSS")
            # the reply is dropped and the memory given back (ASan keeps
            # freed memory in quarantine: there, the drop is all we see)
            lt.wait_for(lambda: b"was not read in 2 s" in open(
                d.logpath, "rb").read(), timeout=30,
                what="the unread reply dropped")
            if not lt.SANITIZED:
                lt.wait_for(lambda: kib(pid, "VmRSS") < base + 8 * 1024,
                            timeout=30, what="the unread reply's memory "
                            "back (was %d KiB, held %d KiB)" % (base, held))
            after = kib(pid, "VmRSS")
            print("\n[execreply] unread 32 MiB reply: front RSS %d KiB, "
                  "held %d KiB, %d KiB after --write-timeout 2" % (
                      base, held, after))
            # the connection is closed: what is left to read ends
            s.settimeout(10)
            got = 0
            while True:
                try:
                    b = s.recv(MiB)
                except ConnectionResetError:
                    break
                if not b:
                    break
                got += len(b)
            self.assertLess(got, 32 * MiB)
        finally:
            s.close()
        self.assertEqual(d.request("GET", "/v1/health").status, 200)


class TestExecMemoryBudget(lt.DaemonPerTest):
    daemon_args = ["--max-output-bytes", str(16 * MiB),
                   "--exec-memory", str(64 * MiB)]

    def test_budget(self):
        d = self.d

        def slow(_):
            return d.request("POST", "/v1/exec", {"command": "sleep 3"},
                             timeout=60)
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            futs = [ex.submit(slow, i) for i in range(2)]
            time.sleep(1.0)
            r = d.request("POST", "/v1/exec", {"command": "echo no"})
            self.assertEqual(r.status, 503, r)
            self.assertEqual(r.json()["error"]["code"], "unavailable")
            self.assertIn("--exec-memory", r.json()["error"]["message"])
            for f in futs:
                self.assertEqual(f.result().status, 200)
        r = d.request("POST", "/v1/exec", {"command": "echo yes"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["stdout"], "yes\n")
        # a small maxOutputBytes takes little of the budget
        def small(i):
            return d.request("POST", "/v1/exec", {
                "command": "sleep 1; echo s%d" % i,
                "maxOutputBytes": 1000}, timeout=60)
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            for i, r in enumerate(ex.map(small, range(8))):
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.json()["stdout"], "s%d\n" % i)

    def test_budget_below_the_ceiling_refused(self):
        d = lt.Lodged(extra_args=["--max-output-bytes", str(64 * MiB),
                                  "--exec-memory", str(64 * MiB)])
        try:
            with self.assertRaises(lt.DaemonError):
                d.start()
            with open(d.logpath) as f:
                self.assertIn("--exec-memory must hold twice", f.read())
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
"""Leaks: 2,000 execs (POST /v1/exec on one keep-alive
connection, a mix of outcomes) and 200 session create/delete cycles leave
no zombie among lodged's processes and their children, no descriptor more
in the front (nor in the template), and a flat RSS: compared after a
warm-up of 200 execs, within 2 MiB.

Run: LODGED=$PWD/lodged /usr/bin/python3 tests/integration/test_leaks.py
"""

import asyncio
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
import reliability as rl  # noqa: E402
from lodgetest import WSClient, sess_path, wait_for  # noqa: E402

EXECS = 2000
WARM_UP = 200
CYCLES = 200
STREAMS = 50
RSS_SLACK_KIB = 2048


def exec_case(i):
    """(request body, check(status, reply)) for exec number i."""
    k = i % 10
    if k == 0:
        return ({"args": ["true"]},
                lambda st, r: st == 200 and r["exitCode"] == 0)
    if k == 1:
        return ({"command": "echo out-%d; echo err >&2; exit 3" % i},
                lambda st, r: st == 200 and r["exitCode"] == 3 and
                r["stdout"] == "out-%d\n" % i and r["stderr"] == "err\n")
    if k == 2:
        return ({"args": ["cat"], "stdin": "s" * 3000},
                lambda st, r: st == 200 and r["stdout"] == "s" * 3000)
    if k == 3:
        return ({"args": ["/no/such/program-%d" % i]},
                lambda st, r: st == 422 and
                r["error"]["code"] == "spawn_failed")
    if k == 4:
        return ({"args": ["head", "-c", "100000", "/dev/zero"],
                 "maxOutputBytes": 1000, "encoding": "utf8"},
                lambda st, r: st == 200 and r["truncated"] is True and
                len(r["stdout"]) == 1000)
    if k == 5:
        return ({"args": ["sh", "-c", "kill -TERM $$"]},
                lambda st, r: st == 200 and r["signal"] == "TERM")
    if k == 6:
        return ({"args": ["true"], "timeoutSeconds": "x"},
                lambda st, r: st == 400)
    if k == 7 and i % 100 == 7:
        # a timeout: SIGTERM to the group
        return ({"args": ["sleep", "10"], "timeoutSeconds": 0.05},
                lambda st, r: st == 200 and r["timedOut"] is True)
    if k == 8 and i % 50 == 8:
        # a grandchild that outlives the command, holding the pipes
        return ({"command": "(sleep 0.3; true) & echo bg"},
                lambda st, r: st == 200 and r["stdout"] == "bg\n")
    if k == 9:
        return ({"args": ["sh", "-c", "ls /proc/$$/fd"], "workDir": "/tmp",
                 "env": {"X": "y"}},
                lambda st, r: st == 200 and r["stdout"].split() ==
                ["0", "1", "2"])
    return ({"args": ["echo", "plain"]},
            lambda st, r: st == 200 and r["stdout"] == "plain\n")


class TestLeaks(lt.DaemonPerClass):

    async def asyncSetUp(self):
        await super().asyncSetUp()
        asyncio.get_running_loop().set_debug(False)

    def measure(self):
        front = self.d.proc.pid
        tmpl = rl.template_pid(front)
        self.assertIsNotNone(tmpl, "no template process")
        time.sleep(0.3)
        return {"front_fds": rl.stable_fd_count(front),
                "front_rss": rl.rss_kib(front),
                "tmpl_fds": rl.stable_fd_count(tmpl),
                "tmpl_rss": rl.rss_kib(tmpl),
                "tmpl": tmpl,
                "front_links": rl.fd_links(front),
                "tmpl_links": rl.fd_links(tmpl)}

    def run_execs(self, start, n):
        conn = http.client.HTTPConnection("127.0.0.1", self.d.port,
                                          timeout=60)
        hdrs = {"Authorization": "Bearer " + self.d.token,
                "Content-Type": "application/json"}
        sock = None
        try:
            for i in range(start, start + n):
                body, ok = exec_case(i)
                conn.request("POST", "/v1/exec", json.dumps(body), hdrs)
                resp = conn.getresponse()
                data = resp.read()
                if sock is None:
                    sock = conn.sock
                self.assertIs(conn.sock, sock, "exec %d: the keep-alive "
                              "connection was closed" % i)
                try:
                    reply = json.loads(data)
                except ValueError:
                    reply = None
                self.assertTrue(ok(resp.status, reply), "exec %d %r: %s %r"
                                % (i, body, resp.status, data[:300]))
        finally:
            conn.close()

    def assertNoZombies(self):
        # An orphan that the template adopts as subreaper is reaped by its
        # walk over all children, which runs at most once a second
        # (lodged.8): a zombie may stand that long, never longer.
        deadline = time.monotonic() + 3
        while True:
            procs = rl.lodged_processes(self.d.rundir, self.d.proc.pid)
            z = rl.zombies_under(procs)
            if not z or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(z, [], "zombies among lodged's processes and "
                         "their children")
        return procs

    def assertSame(self, before, after):
        diff = {k: v for k, v in after["front_links"].items()
                if before["front_links"].get(k) != v}
        self.assertEqual(after["front_fds"], before["front_fds"],
                         "the front's descriptors: %d -> %d; new: %r" % (
                             before["front_fds"], after["front_fds"], diff))
        self.assertEqual(after["tmpl"], before["tmpl"])
        diff = {k: v for k, v in after["tmpl_links"].items()
                if before["tmpl_links"].get(k) != v}
        self.assertEqual(after["tmpl_fds"], before["tmpl_fds"],
                         "the template's descriptors: %d -> %d; new: %r" % (
                             before["tmpl_fds"], after["tmpl_fds"], diff))
        if not lt.SANITIZED:
            self.assertLessEqual(after["front_rss"] - before["front_rss"],
                                 RSS_SLACK_KIB, "the front's RSS grew from "
                                 "%d to %d KiB" % (before["front_rss"],
                                                   after["front_rss"]))
            self.assertLessEqual(after["tmpl_rss"] - before["tmpl_rss"],
                                 RSS_SLACK_KIB, "the template's RSS grew "
                                 "from %d to %d KiB" % (before["tmpl_rss"],
                                                        after["tmpl_rss"]))

    async def test_execs_and_session_cycles(self):
        d = self.d
        t0 = time.monotonic()
        self.run_execs(0, WARM_UP)
        time.sleep(0.5)
        base = self.measure()

        self.run_execs(WARM_UP, EXECS - WARM_UP)
        t_exec = time.monotonic() - t0
        time.sleep(0.5)   # the grandchildren of the last execs finish
        self.assertNoZombies()
        after_exec = self.measure()
        self.assertSame(base, after_exec)

        # sessions: created, used, deleted
        t1 = time.monotonic()
        for i in range(CYCLES):
            k = i % 4
            if k == 0:
                body = {"args": ["cat"]}
            elif k == 1:
                body = {"args": ["cat"], "pty": True, "name": "cyc-%d" % i}
            elif k == 2:
                body = {"command": "echo hi-%d" % i}
            else:
                body = {"args": ["sh", "-c", "sleep 1000 & exec sleep 1000"],
                        "bufferSize": 65536}
            r = d.request("POST", "/v1/sessions", body)
            self.assertEqual(r.status, 201, (i, r))
            s = r.json()
            if k == 0:
                r = d.request("POST", sess_path(s["id"], "/input"),
                              {"data": "in-%d\n" % i})
                self.assertEqual(r.status, 204, r)
                self.wait_log(s["id"], "in-%d\n" % i)
            elif k == 1 and i % 20 == 1:
                c = await WSClient.connect(d, s["id"], label="cyc")
                await c.handshake()
                await c.stdin(b"ws-%d\n" % i)
                await c.wait_output(b"ws-%d" % i)
                await c.close()
            elif k == 2:
                self.wait_state(s["id"], "exited", timeout=10)
            r = d.request("DELETE", sess_path(s["id"]))
            self.assertEqual(r.status, 204, (i, r))
            self.assertFalse(lt.proc_exists(s["pid"]), "session %d's "
                             "process outlived the DELETE" % i)
        t_sess = time.monotonic() - t1

        # exec streams too
        t2 = time.monotonic()
        for i in range(STREAMS):
            ws = await WSClient.open(d, "/v1/exec/stream", {}, {
                "Authorization": "Bearer " + d.token}, "stream-%d" % i)
            try:
                await ws.send({"type": "start", "args": ["sh", "-c",
                               "echo st-%d; ls /proc/$$/fd" % i],
                               "tty": i % 2 == 1})
                ex = await ws.recv_type("exit")
                self.assertEqual(ex["exitCode"], 0, ex)
                self.assertIn(b"st-%d" % i, ws.output)
            finally:
                await ws.close()
        t_stream = time.monotonic() - t2

        self.assertEqual(d.json("GET", "/v1/sessions"), {"sessions": []})
        wait_for(lambda: os.listdir(os.path.join(d.rundir, "sessions"))
                 == [], 10, what="every worker socket to be removed")
        time.sleep(0.5)
        procs = self.assertNoZombies()
        titles = sorted(rl.title(p) for p in procs)
        # the front, the template and its workers forked ahead (2)
        self.assertEqual(titles, ["lodged: front", "lodged: template",
                                  "lodged: waiting", "lodged: waiting"],
                         "lodged processes left: %r" % titles)
        end = self.measure()
        self.assertSame(base, end)
        print("\n[leaks] %d execs in %.1f s, %d session cycles in %.1f s, "
              "%d exec streams in %.1f s; front fds %d -> %d, RSS %d -> %d "
              "KiB; template fds %d -> %d, RSS %d -> %d KiB; 0 zombies"
              % (EXECS, t_exec, CYCLES, t_sess, STREAMS, t_stream,
                 base["front_fds"], end["front_fds"], base["front_rss"],
                 end["front_rss"], base["tmpl_fds"], end["tmpl_fds"],
                 base["tmpl_rss"], end["tmpl_rss"]), file=sys.stderr)


if __name__ == "__main__":
    lt.main()

#!/usr/bin/python3
"""GET /metrics: Prometheus' text format (checked by promtool from Debian's
prometheus package), behind the token like every route, and counters that
move as requests do."""

import asyncio
import grp
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lodgetest as lt  # noqa: E402
import reliability as rl  # noqa: E402

NOGROUP = grp.getgrnam("nogroup").gr_gid
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def parse(text):
    """{(name, frozenset of label pairs): value} of every sample."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if m is None:
            raise AssertionError("not a sample line: %r" % line)
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


class TestMetrics(lt.DaemonPerClass):

    daemon_args = ["--socket-group", "nogroup"]

    def scrape(self):
        r = self.d.request("GET", "/metrics")
        self.assertEqual(r.status, 200, r.body)
        self.assertTrue(r.headers["content-type"].startswith(
            "text/plain; version=0.0.4"), r.headers)
        return r.body.decode()

    def value(self, samples, name, **labels):
        return samples.get((name, frozenset(labels.items())), 0.0)

    def test_promtool_accepts_it(self):
        """promtool check metrics finds no problem, with every family
        present (counters moved first, so labelled families have
        samples)."""
        self.d.json("POST", "/v1/exec", {"args": ["true"]})
        text = self.scrape()
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool missing (contrib/deps.sh "
                             "test installs prometheus)")
        r = subprocess.run([promtool, "check", "metrics"], input=text,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for family in ("lodged_sessions", "lodged_session_clients",
                       "lodged_session_output_bytes",
                       "lodged_execs_started_total",
                       "lodged_exec_streams_started_total",
                       "lodged_sessions_rediscovered_total",
                       "lodged_limits_hit_total",
                       "lodged_http_request_duration_seconds",
                       "process_resident_memory_bytes"):
            self.assertIn("# TYPE %s " % family, text)

    async def test_counters_move(self):
        before = parse(self.scrape())
        for _ in range(3):
            self.d.json("POST", "/v1/exec", {"args": ["true"]})
        r = self.d.request("POST", "/v1/exec",
                           {"args": ["/nonexistent/program"]})
        self.assertEqual(r.status, 422)
        s = self.create({"args": ["sh", "-c", "printf 0123456789; "
                                  "exec sleep 1000"]})
        self.wait_log(s["id"], "0123456789")
        ws = await lt.WSClient.connect(self.d, s["id"])
        await ws.handshake()
        st = self.d.request("GET", "/v1/sessions/%s" % s["id"])
        self.assertEqual(st.status, 200)
        r = self.d.request("POST", "/v1/exec", raw_body=b"x" * 10,
                           headers={"Content-Length": str(1 << 40)})
        self.assertEqual(r.status, 413)
        after = parse(self.scrape())
        await ws.close()

        def moved(name, **labels):
            return (self.value(after, name, **labels) -
                    self.value(before, name, **labels))
        # the missing program is found missing by the template: started,
        # then failed; the 413 never reached it
        self.assertEqual(moved("lodged_execs_started_total"), 4)
        self.assertEqual(moved("lodged_execs_failed_total", status="422"), 1)
        self.assertEqual(moved("lodged_http_replies_total", route="exec",
                               status="200"), 3)
        self.assertEqual(moved("lodged_http_request_duration_seconds_count",
                               route="exec"), 5)
        self.assertEqual(moved("lodged_sessions_created_total"), 1)
        self.assertEqual(moved("lodged_attaches_total"), 1)
        self.assertGreaterEqual(moved("lodged_session_logs_total"), 1)
        self.assertEqual(moved("lodged_limits_hit_total", limit="max_body"),
                         1)
        self.assertGreaterEqual(self.value(after, "lodged_sessions",
                                           state="running"), 1)
        self.assertGreaterEqual(
            self.value(after, "lodged_session_output_bytes"), 10)
        # the histogram is cumulative and ends at the count
        inf = self.value(after, "lodged_http_request_duration_seconds_bucket",
                         route="exec", le="+Inf")
        self.assertEqual(inf, self.value(
            after, "lodged_http_request_duration_seconds_count",
            route="exec"))
        self.assertGreater(self.value(after, "process_resident_memory_bytes"),
                           0)

    async def test_gauges_are_the_sessions_sums(self):
        """The sessions' gauges, kept by the front as sessions change, equal
        what the list says at every step: create, output, attach, exit,
        delete, and after a front restart finds them again; the descriptor
        count follows the front's table."""
        d = self.start_daemon()

        def check(what, expect=None):
            def same():
                listed = d.json("GET", "/v1/sessions")["sessions"]
                g = parse(d.request("GET", "/metrics").body.decode())
                want = (sum(x["state"] != "exited" for x in listed),
                        sum(x["state"] == "exited" for x in listed),
                        sum(x["clients"] for x in listed),
                        sum(x["outputBytes"] for x in listed))
                got = (self.value(g, "lodged_sessions", state="running"),
                       self.value(g, "lodged_sessions", state="exited"),
                       self.value(g, "lodged_session_clients"),
                       self.value(g, "lodged_session_output_bytes"))
                same.last = (want, got)
                return want == got and expect in (None, got)
            lt.wait_for(same, what="gauges equal to the list's sums (%s)" %
                        what)
            return same.last[1]

        def fds():
            """The front's descriptors as scraped, checked against its
            table read just after (the scrape's own connection may be
            in either)."""
            n = self.value(parse(d.request("GET", "/metrics").body
                                 .decode()), "process_open_fds")
            table = len(os.listdir("/proc/%d/fd" % d.proc.pid))
            self.assertLessEqual(abs(n - table), 2, (n, table))
            return n

        fds0 = fds()
        check("none", (0, 0, 0, 0))
        ids = [self.create({"args": ["sh", "-c", "printf %s; exec cat"
                                     % ("x" * (i + 1))]}, d=d)["id"]
               for i in range(6)]
        quick = self.create({"args": ["sh", "-c", "printf done"]}, d=d)["id"]
        lt.wait_for(lambda: d.json("GET", "/v1/sessions/%s" % quick)
                    ["state"] == "exited", what="the short session's exit")
        check("created", (6, 1, 0, 21 + 4))
        # each running session is a link the front holds: the count
        # moves with them
        self.assertGreaterEqual(fds() - fds0, 5)
        ws = await lt.WSClient.connect(d, ids[0])
        await ws.handshake()
        check("attached", (6, 1, 1, 25))
        await ws.close()
        check("detached", (6, 1, 0, 25))
        d.request("DELETE", "/v1/sessions/%s" % ids[1])
        d.request("DELETE", "/v1/sessions/%s" % quick)
        check("deleted", (5, 0, 0, 21 - 2))
        d.kill9()
        d.restart()
        check("rediscovered", (5, 0, 0, 19))

    def test_rediscovered(self):
        """A restarted front counts the sessions it found again."""
        d = self.start_daemon()
        for _ in range(2):
            self.create({"args": ["sleep", "1000"]}, d=d)
        d.kill9()
        d.restart()
        lt.wait_for(lambda: self.value(parse(d.request(
            "GET", "/metrics").body.decode()),
            "lodged_sessions_rediscovered_total") == 2,
            what="2 sessions counted as rediscovered")

    def test_token_and_peers(self):
        """The token is needed on TCP; a non-root Unix peer is refused; root
        on the Unix socket needs none."""
        self.assertEqual(self.d.request("GET", "/metrics",
                                        token=None).status, 401)
        r = self.d.unix_request("GET", "/metrics")
        self.assertEqual(r.status, 200)
        r = rl.run_json_as(rl.NOBODY_UID, NOGROUP, rl.UNIX_HTTP_CLIENT,
                           [self.d.sock_path, "GET", "/metrics"])
        self.assertEqual(r.get("status"), 403, r)
        self.assertEqual(json.loads(r["body"])["error"]["code"], "forbidden")


if __name__ == "__main__":
    unittest.main(verbosity=2)

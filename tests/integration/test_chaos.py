#!/usr/bin/python3
"""Chaos: 50 sessions printing a counter every 5 ms,
10 clients attached (since=0) reading them and typing into them, and the
front killed with SIGKILL and restarted 5 times meanwhile.  Afterwards no
session is lost (the same 50 ids and pids), every client's offsets are
contiguous from 0 with no gap, its counter has no hole, everything it typed
came back exactly once and in order, and its bytes are the session's log.
Then one session worker is killed with SIGKILL: only its session ends, and
the front answers 404 for it once it sees the worker's link close.

Run: LODGED=$PWD/lodged /usr/bin/python3 tests/integration/test_chaos.py
"""

import asyncio
import os
import signal
import subprocess
import sys
import time

import websockets.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
import reliability as rl  # noqa: E402
from lodgetest import WSClient, sess_path, wait_for  # noqa: E402

SESSIONS = 50
CLIENTS = 10
ROUNDS = 5
INTERVAL = 0.005        # the counter's period
TYPE_EVERY = 0.15       # each client types a line this often
STREAM_SECONDS = 3.0    # streaming between two kills
DOWN_SECONDS = 1.0      # the front stays dead this long


class Attached:
    """One client: a reader task and a typer task."""

    def __init__(self, i, sid, ws):
        self.i, self.sid, self.c = i, sid, ws
        self.typed = []
        self.error = None
        self.reader = None
        self.typer = None
        self.typing = True

    async def read(self):
        try:
            while True:
                await self.c.recv(3600)
        except websockets.exceptions.ConnectionClosed:
            if self.error is None:
                self.error = "closed by the server (code %s)" \
                    % self.c.ws.close_code
        except asyncio.CancelledError:
            raise
        except BaseException as e:   # noqa: B902
            self.error = "reader: %r" % (e,)

    async def type(self):
        k = 0
        while self.typing:
            k += 1
            line = "t-%d-%d" % (self.i, k)
            try:
                await self.c.stdin(line.encode() + b"\n")
            except Exception as e:
                self.error = "typing: %r" % (e,)
                return
            self.typed.append(line.encode())
            await asyncio.sleep(TYPE_EVERY)


class TestChaos(lt.DaemonPerTest):
    # Ten clients in one Python process fall behind the sessions on a
    # starved machine, by over a minute seen in make distcheck, and their
    # pongs with them; lodged drops a peer silent for 2.5 ping intervals
    # (test_limits.py tests that), which is not what is tested here.
    daemon_args = ["--ping-interval", "600"]

    async def asyncSetUp(self):
        await super().asyncSetUp()
        # IsolatedAsyncioTestCase runs its loop in debug mode, which makes
        # every callback several times slower: too slow for ten clients
        # of 200 messages a second each (they would fall behind the
        # sessions, which is no fault of lodged's)
        asyncio.get_running_loop().set_debug(False)

    def listing(self):
        return {s["id"]: s for s in
                self.d.json("GET", "/v1/sessions")["sessions"]}

    async def test_kill_front_5_times_then_one_worker(self):
        d = self.d
        t_start = time.monotonic()
        sessions = []
        for i in range(SESSIONS):
            s = self.create(rl.counter_request(interval=INTERVAL,
                                               buffer_size=4 << 20,
                                               name="chaos-%02d" % i))
            sessions.append(s)
        want = {s["id"]: s["pid"] for s in sessions}
        workers = {s["id"]: rl.worker_of(s["pid"]) for s in sessions}
        for sid, w in workers.items():
            self.assertTrue(rl.title(w).startswith("lodged: session " + sid),
                            (w, rl.title(w)))

        clients = []
        try:
            for i in range(CLIENTS):
                sid = sessions[i]["id"]
                c = await WSClient.connect(d, sid, query={"since": 0},
                                           label="client-%d" % i)
                await c.handshake()
                a = Attached(i, sid, c)
                a.reader = asyncio.ensure_future(a.read())
                a.typer = asyncio.ensure_future(a.type())
                clients.append(a)

            fronts = [d.proc.pid]
            for rnd in range(ROUNDS):
                await asyncio.sleep(STREAM_SECONDS)
                before = {a.i: a.c.end_offset or 0 for a in clients}
                await asyncio.to_thread(d.kill9)
                self.assertFalse(lt.proc_exists(fronts[-1]))
                await asyncio.sleep(DOWN_SECONDS)
                # the front is down: every worker and child lives on, and
                # the clients keep reading and typing
                for sid, w in workers.items():
                    self.assertTrue(lt.proc_exists(w), "round %d: worker of "
                                    "%s died with the front" % (rnd, sid))
                    self.assertTrue(lt.proc_exists(want[sid]))
                for a in clients:
                    await lt.await_true(
                        lambda: a.error is not None or
                        (a.c.end_offset or 0) > before[a.i], 60,
                        "client %d to read while the front is down" % a.i)
                    self.assertIsNone(a.error, "round %d, client %d: %s"
                                      % (rnd, a.i, a.error))
                await asyncio.to_thread(d.restart)
                fronts.append(d.proc.pid)
                got = await asyncio.to_thread(
                    wait_for, lambda: (lambda x: x if len(x) == SESSIONS
                                       else None)(self.listing()),
                    60, 0.1, "all %d sessions listed after restart %d"
                    % (SESSIONS, rnd + 1))
                self.assertEqual({k: v["pid"] for k, v in got.items()}, want,
                                 "round %d: sessions lost or changed" % rnd)
                self.assertTrue(all(v["state"] == "running"
                                    for v in got.values()))
            self.assertEqual(len(set(fronts)), ROUNDS + 1)

            # stop typing; every typed line comes back
            for a in clients:
                a.typing = False
            await asyncio.gather(*(a.typer for a in clients))
            for a in clients:
                last = a.typed[-1]
                await self._wait_echo(a, last)

            total = 0
            for a in clients:
                self.assertIsNone(a.error, "client %d: %s" % (a.i, a.error))
                gaps = [m for m in a.c.messages if m["type"] == "gap"]
                self.assertEqual(gaps, [], "client %d got gaps" % a.i)
                self.assertEqual(len(a.c.segments), 1)
                self.assertEqual(a.c.segments[0][0], 0)
                out = a.c.output
                n, others = rl.check_counter(out, what="client %d" % a.i)
                self.assertEqual(others, a.typed, "client %d: typed lines "
                                 "not echoed exactly once, in order" % a.i)
                self.assertGreater(n, 100)
                total += len(out)
                # the bytes are the session's own
                r = d.request("GET", sess_path(a.sid, "/log") + "?since=0")
                self.assertEqual(r.status, 200)
                self.assertEqual(int(r.headers["lodge-log-start"]), 0)
                self.assertEqual(r.body[:len(out)], out,
                                 "client %d's bytes differ from the log"
                                 % a.i)
            for s in sessions:
                rl.counter_log_check(d, s["id"])
            chaos_time = time.monotonic() - t_start

            # ---- one worker killed with SIGKILL
            victim = clients[0]
            vid = victim.sid
            vworker = workers[vid]
            vchild = want[vid]
            progress = {s["id"]: self.get(s["id"])["outputBytes"]
                        for s in sessions if s["id"] != vid}
            t0 = time.monotonic()
            os.kill(vworker, signal.SIGKILL)

            def gone():
                return d.request("GET", sess_path(vid)).status == 404
            # the front learns it from the link's close, not from a poll:
            # bounded generously, since a loaded machine may take seconds
            await asyncio.to_thread(wait_for, gone, 30, 0.02,
                                    "the front to report the session gone")
            took = time.monotonic() - t0
            self.assertError(d.request("GET", sess_path("chaos-00")), 404,
                             "not_found")
            left = self.listing()
            self.assertNotIn(vid, left)
            self.assertEqual(set(left), set(want) - {vid})
            # its client is cut off (no exit: the worker is gone), its
            # process ends
            await asyncio.wait_for(victim.reader, 60)
            self.assertNotIn("exit", [m["type"] for m in victim.c.messages])
            await asyncio.to_thread(
                wait_for, lambda: not lt.proc_exists(vchild), 30, 0.05,
                "the dead worker's process to end")
            # everybody else carries on
            for s in sessions:
                if s["id"] == vid:
                    continue
                st = await asyncio.to_thread(
                    wait_for, lambda: (lambda st: st if st["outputBytes"] >
                                       progress[s["id"]] else None)(
                                           self.get(s["id"])),
                    60, 0.1, "session %s to go on" % s["name"])
                self.assertEqual(st["state"], "running", st)
                self.assertTrue(lt.proc_exists(workers[s["id"]]))
            for a in clients[1:]:
                self.assertIsNone(a.error, "client %d: %s" % (a.i, a.error))
                mark = a.c.end_offset
                await a.c.stdin(b"after-worker-kill\n")
                await self._wait_echo(a, b"after-worker-kill")
                self.assertGreater(a.c.end_offset, mark)
                rl.check_counter(a.c.output, what="client %d" % a.i)
            print("\n[chaos] %d sessions, %d clients, %d front kills, %d "
                  "bytes read, 0 lost, %d lines typed and echoed; worker "
                  "kill noticed in %.3f s; %.0f s" % (
                      SESSIONS, CLIENTS, ROUNDS, total,
                      sum(len(a.typed) for a in clients), took, chaos_time),
                  file=sys.stderr)
        finally:
            for a in clients:
                a.typing = False
                for t in (a.typer, a.reader):
                    if t is not None and not t.done():
                        t.cancel()
                await a.c.close()

    @staticmethod
    def _queues(a):
        """Both ends of a client's TCP connection as ss(8) sees them (the
        kernel's queues tell a slow reader from a silent writer), in every
        state: a socket reset by its peer is CLOSE, which ss hides unless
        asked for all."""
        try:
            port = a.c.ws.transport.get_extra_info("sockname")[1]
            r = subprocess.run(["ss", "-tanpio", "( sport = :%d or dport = "
                                ":%d )" % (port, port)],
                               capture_output=True, text=True, timeout=10)
            return "websocket %s; %s" % (a.c.ws.state.name,
                                         r.stdout.strip() or r.stderr.strip())
        except Exception as e:   # noqa: B902
            return "(ss: %r)" % (e,)

    async def _wait_echo(self, a, line, timeout=300):
        needle = line + b"\n"
        deadline = time.monotonic() + timeout
        while needle not in a.c.output_since(max(0, (a.c.end_offset or 0)
                                                 - 200000)):
            if time.monotonic() > deadline:
                got = set(rl.check_counter(a.c.output)[1])
                r = self.d.request("GET", sess_path(a.sid, "/log"))
                inlog = set(rl.check_counter(r.body, start_at_one=False)[1])
                self.fail("client %d: %r not echoed; error %s; typed and "
                          "missing from its output: %r; from the log: %r; "
                          "client at offset %s, log end %s; its "
                          "connection: %s" % (
                              a.i, line, a.error,
                              [t for t in a.typed if t not in got],
                              [t for t in a.typed if t not in inlog],
                              a.c.end_offset,
                              r.headers.get("lodge-log-end"),
                              self._queues(a)))
            if a.reader.done():
                self.fail("client %d: reader ended: %s" % (a.i, a.error))
            await asyncio.sleep(0.05)


if __name__ == "__main__":
    lt.main()

#!/usr/bin/python3
"""Paced attach: lodge-protocol(7) SESSION ATTACH, "Pace".

A client attached with pace=1 holds the process back rather than fall out
of the ring, while it is the fastest client and still reads; a faster
client, a stalled paced client, or a detach lets the process run on.

Run: /usr/bin/python3 tests/integration/test_pace.py
"""

import asyncio
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
from lodgetest import WSClient, wait_for  # noqa: E402

MiB = 1024 * 1024
SIZE = 64 * MiB
# What may be written beyond what a paced client took: a quarter of the
# ring, one read, a frame held by libwebsockets, the socket's buffers.
SLACK = 8 * MiB


def flood(size=SIZE, pty=False):
    body = {"args": ["sh", "-c", "read x; head -c %d /dev/zero" % size]}
    if pty:
        body["pty"] = True
    return body


def gaps(c):
    return [m for m in c.messages if m["type"] == "gap"]


class TestPace(lt.DaemonPerClass):

    async def slow_client(self, sid, query):
        """A client with a small receive buffer, so the server's sends
        wait for its reads, not for the kernel's buffers."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", self.d.port))
        c = await WSClient.connect(self.d, sid, query=query, sock=sock,
                                   max_queue=1, read_limit=4096,
                                   label="paced")
        await c.handshake()
        return c

    async def read_slowly(self, c, seconds, pause=0.05):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await c.recv()
            await asyncio.sleep(pause)

    def written(self, sid):
        return self.get(sid)["outputBytes"]

    # ---- the fastest client is paced: the process waits for it

    async def test_paced_client_holds_the_process(self):
        s = self.create(flood())
        sid = s["id"]
        c = await self.slow_client(sid, {"pace": 1})
        try:
            self.input(sid, "go\n")
            await self.read_slowly(c, 2.0)
            took, wrote = c.end_offset, self.written(sid)
            self.assertLess(wrote, took + SLACK,
                            "the process ran %d bytes ahead of a paced "
                            "client that took %d" % (wrote, took))
            self.assertEqual(self.get(sid)["state"], "running")
            # reading at full speed now, it gets every byte, then exit
            ex = await c.recv_type("exit", timeout=120)
            self.assertEqual(ex.get("exitCode"), 0, ex)
            self.assertEqual(gaps(c), [],
                             "a paced client must not skip output")
            self.assertEqual(c.end_offset, SIZE)
            self.assertEqual(set(c.output), {0})
        finally:
            await c.close()

    async def test_unpaced_client_is_left_behind(self):
        # the same client without pace: the process does not wait for it
        s = self.create(flood())
        sid = s["id"]
        c = await self.slow_client(sid, {})
        try:
            self.input(sid, "go\n")
            wait_for(lambda: self.written(sid) == SIZE, 60, interval=0.1,
                     what="the output written without waiting")
            await c.recv_type("exit", timeout=120)
            self.assertTrue(gaps(c))
        finally:
            await c.close()

    async def test_pty_session_paced_to_its_end(self):
        # a terminal: every line of a flood arrives, and the exit after it
        n = 2000000
        s = self.create({"command": "read x; seq 1 %d; echo END-$((6*7))" % n,
                         "pty": True})
        sid = s["id"]
        c = await self.slow_client(sid, {"pace": "true"})
        try:
            self.input(sid, "go\n")
            await self.read_slowly(c, 1.0, pause=0.1)
            self.assertLess(self.written(sid), c.end_offset + SLACK)
            ex = await c.recv_type("exit", timeout=120)
            self.assertEqual(ex.get("exitCode"), 0, ex)
            self.assertEqual(gaps(c), [])
            out = c.slice(0, c.end_offset)
            self.assertIn(b"\r\n%d\r\n" % n, out)
            self.assertTrue(out.endswith(b"END-42\r\n"), out[-40:])
        finally:
            await c.close()

    # ---- what lets the process go on

    async def test_a_faster_client_sets_the_pace(self):
        s = self.create(flood())
        sid = s["id"]
        paced = await self.slow_client(sid, {"pace": 1})
        fast = await WSClient.connect(self.d, sid, label="fast")
        try:
            await fast.handshake()
            self.input(sid, "go\n")
            reader = asyncio.ensure_future(self.read_slowly(paced, 30.0))
            try:
                ex = await fast.recv_type("exit", timeout=60)
            finally:
                reader.cancel()
            self.assertEqual(ex.get("exitCode"), 0, ex)
            self.assertEqual(fast.end_offset, SIZE)
            self.assertLess(paced.end_offset, SIZE // 2,
                            "the fast client waited for the paced one")
            await paced.recv_type("exit", timeout=120)
            self.assertTrue(gaps(paced),
                            "the slower paced client falls behind")
        finally:
            await paced.close()
            await fast.close()

    async def test_a_stalled_paced_client_lets_go(self):
        s = self.create(flood())
        sid = s["id"]
        c = await self.slow_client(sid, {"pace": 1})
        try:
            self.input(sid, "go\n")
            # it reads nothing: after two seconds the process runs on
            wait_for(lambda: self.written(sid) == SIZE, 60, interval=0.1,
                     what="the output of a session whose paced client "
                     "stopped reading")
            await c.recv_type("exit", timeout=120)
            self.assertTrue(gaps(c))
        finally:
            await c.close()

    async def test_a_detach_lets_go(self):
        s = self.create(flood())
        sid = s["id"]
        c = await self.slow_client(sid, {"pace": 1})
        self.input(sid, "go\n")
        await self.read_slowly(c, 0.5)
        self.assertLess(self.written(sid), c.end_offset + SLACK)
        # gone as a closed tab goes: the connection dropped, unread data
        # and all (a close handshake would wait behind that data)
        c.ws.transport.abort()
        await asyncio.sleep(0.2)    # the loop closes the socket
        wait_for(lambda: self.get(sid)["clients"] == 0, 30, interval=0.1,
                 what="the paced client's detach")
        wait_for(lambda: self.written(sid) == SIZE, 60, interval=0.1,
                 what="the output once the paced client detached")
        self.wait_state(sid, timeout=30)

    # ---- bad queries

    def test_pace_is_refused_with_read_only(self):
        s = self.create({"command": "exec cat"})
        sid = s["id"]
        for q in ("readOnly=1&pace=1", "pace=1&readOnly", "pace&pace=0"):
            r = self.d.request("GET", "/v1/sessions/%s/attach?%s"
                               % (sid, q),
                             headers={"Upgrade": "websocket",
                                      "Connection": "Upgrade",
                                      "Sec-WebSocket-Key":
                                      "dGhlIHNhbXBsZSBub25jZQ==",
                                      "Sec-WebSocket-Version": "13"})
            self.assertEqual(r.status, 400, q)
            self.assertEqual(r.json()["error"]["code"], "bad_request", q)
            self.assertIn("'pace'", r.json()["error"]["message"], q)
        # a pace=0 is no pace, and the session is untouched
        self.assertEqual(self.get(sid)["state"], "running")


if __name__ == "__main__":
    lt.main()

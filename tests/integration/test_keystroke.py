"""A keystroke's path through the serving process (lodge-protocol.7:
output; lodged.8: interactive latency).

`stty raw -echo && printf R && exec cat` on a PTY echoes each byte it
gets.  One-byte stdin messages, each sent once the echo of the one before
it came back, in a PTY session and in an exec stream in tty mode:

- every echo arrives whole, as its own stdout message at the right offset;
- the serving process reads the terminal once per keystroke: a short read
  took all there was, so it does not read again only to hear EAGAIN.
  Counted from /proc/PID/io (syscr counts every read(2), failed or not;
  the client's socket is read with recv and not counted there).
"""

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt                           # noqa: E402
from lodgetest import WSClient                   # noqa: E402

ECHO = "stty raw -echo && printf R && exec cat"
KEYS = 300
WARMUP = 20


def read_syscalls(pid):
    """syscr of /proc/PID/io: the read(2) calls the process made."""
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("syscr:"):
                return int(line.split()[1])
    raise AssertionError("no syscr in /proc/%d/io" % pid)


class KeystrokeTest(lt.DaemonPerClass):

    async def next_output(self, c):
        while True:
            m = await c.recv()
            if m["type"] in ("error", "exit"):
                self.fail("%s while typing: %r" % (m["type"], m))
            if m["type"] == "stdout":
                return m

    async def type_keys(self, c, n, off):
        """n keystrokes, each after the echo of the one before; the next
        offset."""
        for i in range(n):
            key = bytes([ord("a") + i % 26])
            await c.stdin(key)
            m = await asyncio.wait_for(self.next_output(c), 30)
            self.assertEqual((m["data"], m["offset"]), (key, off),
                             "keystroke %d" % i)
            off += 1
        return off

    async def reads_per_keystroke(self, c, server):
        """Type; the server's read(2) calls per keystroke."""
        m = await asyncio.wait_for(self.next_output(c), 30)
        self.assertEqual(m["data"], b"R", m)
        off = await self.type_keys(c, WARMUP, m["offset"] + 1)
        before = read_syscalls(server)
        await self.type_keys(c, KEYS, off)
        return (read_syscalls(server) - before) / KEYS

    async def test_session_reads_the_pty_once_per_keystroke(self):
        s = self.create({"command": ECHO, "pty": True})
        worker = lt.proc_stat(s["pid"])["ppid"]
        c = await WSClient.connect(self.d, s["id"])
        self.addAsyncCleanup(c.close)
        self.assertEqual((await c.recv())["type"], "attached")
        per_key = await self.reads_per_keystroke(c, worker)
        # One read per echo; before, a second read failed with EAGAIN.
        self.assertLess(per_key, 1.5, "the session worker made %.2f "
                        "reads per keystroke" % per_key)

    async def test_stream_reads_the_pty_once_per_keystroke(self):
        headers = {"Authorization": "Bearer " + self.d.token}
        c = await WSClient.open(self.d, "/v1/exec/stream", {}, headers,
                                "exec")
        self.addAsyncCleanup(c.close)
        await c.send({"type": "start", "command": ECHO, "tty": True})
        m = await c.recv()
        self.assertEqual(m["type"], "started", m)
        server = lt.proc_stat(m["pid"])["ppid"]
        per_key = await self.reads_per_keystroke(c, server)
        self.assertLess(per_key, 1.5, "the exec stream's process made "
                        "%.2f reads per keystroke" % per_key)


if __name__ == "__main__":
    lt.main()

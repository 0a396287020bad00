#!/usr/bin/python3
"""Streaming exec: GET /v1/exec/stream (lodge-protocol(7) ERROR REPLIES,
WEBSOCKET MESSAGES, EXEC STREAM).

Run: LODGED=/path/to/lodged /usr/bin/python3 tests/integration/test_exec_stream.py

The 4 GiB test uses tests/tools/lodge-wsdrain (a C client built by
`make check` or `make tests/tools/lodge-wsdrain`), found at $LODGE_WSDRAIN,
else beside $LODGED (the build tree's top), else in the source tree.
"""

import asyncio
import base64
import json
import os
import re
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import msgpack
import websockets
import websockets.exceptions

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import lodgetest as lt  # noqa: E402
from lodgetest import (WSClient, proc_exists,  # noqa: E402
                       proc_stat, proc_status, wait_for)

MiB = 1024 * 1024
STREAM = "/v1/exec/stream"


def find_wsdrain():
    cands = []
    if os.environ.get("LODGE_WSDRAIN"):
        return os.environ["LODGE_WSDRAIN"]
    cands.append(os.path.join(os.path.dirname(os.path.abspath(lt.LODGED)),
                              "tests", "tools", "lodge-wsdrain"))
    cands.append(os.path.join(lt.REPO, "tests", "tools", "lodge-wsdrain"))
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    return cands[0]


def rss_kib(pid):
    """(VmRSS, VmHWM) of pid in KiB, or None once it is gone."""
    try:
        st = proc_status(pid)
        return (int(st["VmRSS"].split()[0]), int(st["VmHWM"].split()[0]))
    except (OSError, KeyError, ValueError):
        return None


def group_members(pgid):
    out = []
    for p in lt.all_pids():
        try:
            st = proc_stat(p)
        except (OSError, ValueError, IndexError):
            continue
        if st["pgrp"] == pgid and st["state"] not in ("Z", "X"):
            out.append(p)
    return out


def raw_frame(opcode, payload):
    """One masked client frame (FIN set)."""
    mask = os.urandom(4)
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def raw_recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        b = s.recv(n - len(buf))
        if not b:
            raise EOFError("connection closed after %d of %d bytes"
                           % (len(buf), n))
        buf += b
    return buf


def raw_read_frame(s):
    """(opcode, payload) of one unmasked, unfragmented server frame."""
    b0, b1 = raw_recv_exact(s, 2)
    n = b1 & 0x7f
    if n == 126:
        n = struct.unpack("!H", raw_recv_exact(s, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", raw_recv_exact(s, 8))[0]
    return b0 & 0x0f, raw_recv_exact(s, n)


def raw_open_stream(sock_path, timeout=10):
    """A plain socket with the exec stream upgrade done, on the Unix
    socket: a client that does not answer the close by itself."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: localhost\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "\r\n" % (STREAM, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            raise EOFError("closed during the upgrade: %r" % head)
        head += b
    if not head.startswith(b"HTTP/1.1 101"):
        raise AssertionError("upgrade refused: %r" % head)
    return s


class StreamMixin:

    async def open_stream(self, d=None, label="exec", token=lt._DEFAULT):
        d = d or self.d
        headers = {}
        tok = d.token if token is lt._DEFAULT else token
        if tok is not None:
            headers["Authorization"] = "Bearer " + tok
        c = await WSClient.open(d, STREAM, {}, headers, label)
        self.addAsyncCleanup(c.close)
        return c

    async def start(self, body, d=None, label="exec"):
        """Open a stream, send start, read `started`; return (c, pid)."""
        c = await self.open_stream(d, label)
        await c.send(dict(body, type="start"))
        m = await c.recv()
        self.assertEqual(m["type"], "started", m)
        pid = m.get("pid")
        self.assertIsInstance(pid, int, m)
        self.assertGreater(pid, 1, m)
        self._kill_later(pid)
        return c, pid

    def _kill_later(self, pid):
        """Backstop: the group is gone at the end of the test."""
        try:
            start = proc_stat(pid)["starttime"]
        except (OSError, ValueError, IndexError):
            return

        def kill():
            try:
                if proc_stat(pid)["starttime"] == start:
                    os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        self.addCleanup(kill)

    async def finish(self, c, timeout=lt.DEFAULT_TIMEOUT):
        """Read to the end: return the exit message; checks that it is the
        last message, that close 1000 follows, and its fields."""
        code, seen = await c.expect_close(timeout)
        exits = [m for m in c.messages if m["type"] == "exit"]
        self.assertEqual(len(exits), 1, "one exit message expected; last "
                         "messages %s" % c._last())
        self.assertEqual(c.messages[-1]["type"], "exit",
                         "exit must be the last message: %s" % c._last())
        self.assertEqual(code, 1000, "close code after exit")
        ex = exits[0]
        for k in ("exitCode", "signal", "timedOut"):
            self.assertIn(k, ex, ex)
        self.assertIsInstance(ex["timedOut"], bool, ex)
        self.assertTrue((ex["exitCode"] is None) != (ex["signal"] is None),
                        "exactly one of exitCode and signal: %r" % ex)
        return ex

    def serving_pid(self, pid):
        """The process serving the stream: the command's parent."""
        ppid = int(proc_status(pid)["PPid"])
        self.assertGreater(ppid, 1)
        return ppid


class TestExecStream(StreamMixin, lt.DaemonPerClass):

    # ----------------------------------------------------- basics

    async def test_started_pid_exit_and_serving_process(self):
        c, pid = await self.start({"args": ["sh", "-c",
                                            "echo $$; read x; exit 7"]})
        await c.wait_output(rb"\d+\n")
        self.assertEqual(int(c.output.split()[0]), pid,
                         "started.pid is the command's pid")
        self.assertTrue(proc_exists(pid))
        st = proc_stat(pid)
        self.assertEqual(st["pgrp"], pid, "own process group")
        self.assertEqual(st["session"], pid, "own session")
        server = self.serving_pid(pid)
        with open("/proc/%d/cmdline" % server, "rb") as f:
            title = f.read().replace(b"\0", b" ")
        self.assertIn(b"exec stream", title, title)
        await c.stdin("\n")
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 7, ex)
        self.assertIsNone(ex["signal"], ex)
        self.assertIs(ex["timedOut"], False, ex)
        # the serving process ends with its stream
        wait_for(lambda: not proc_exists(server), 10,
                 what="serving process %d to exit" % server)
        self.assertFalse(proc_exists(pid))

    async def test_stdout_and_stderr_apart_with_contiguous_offsets(self):
        c, pid = await self.start({"command":
                                   "printf o1; sleep 0.2; printf e1 >&2; "
                                   "sleep 0.2; printf o2; sleep 0.2; "
                                   "printf e22 >&2; exit 0"})
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0)
        # WSClient raises on any non-contiguous offset; check the start
        data = [m for m in c.messages if m["type"] in ("stdout", "stderr")]
        self.assertEqual(data[0]["offset"], 0, data)
        out = b"".join(m["data"] for m in data if m["type"] == "stdout")
        err = b"".join(m["data"] for m in data if m["type"] == "stderr")
        self.assertEqual(out, b"o1o2")
        self.assertEqual(err, b"e1e22")
        self.assertEqual(c.output, b"o1e1o2e22", "one offset counter over "
                         "both streams, in order")
        self.assertEqual(c.end_offset, 9)

    async def test_stdin_and_eof(self):
        c, pid = await self.start({"args": ["cat"]})
        await c.stdin(b"hello ")
        await c.wait_output(rb"hello ")
        await c.stdin(b"world\n")
        await c.wait_output(rb"hello world\n")
        self.assertTrue(proc_exists(pid), "cat must wait for eof")
        allbytes = bytes(range(256))
        await c.stdin(allbytes)
        await c.send({"type": "eof"})
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)
        self.assertEqual(c.output, b"hello world\n" + allbytes)

    async def test_stdin_stays_open_until_eof(self):
        c, pid = await self.start({"command": "wc -c"})
        for i in range(10):
            await c.stdin(b"x" * 1000)
        await asyncio.sleep(0.3)
        self.assertTrue(proc_exists(pid))
        self.assertEqual(c.output, b"")
        await c.send({"type": "eof"})
        await self.finish(c)
        self.assertEqual(c.output.strip(), b"10000")

    async def test_start_request_fields(self):
        tmp = tempfile.mkdtemp(prefix="lodge-stream-wd-")
        self.addCleanup(os.rmdir, tmp)
        c, pid = await self.start({"command": "pwd; echo \"$FOO\"; "
                                              "readlink /proc/self/fd/0",
                                   "workDir": tmp, "env": {"FOO": "bar"}})
        await self.finish(c)
        lines = c.output.decode().splitlines()
        self.assertEqual(lines[:2], [tmp, "bar"], lines)
        self.assertRegex(lines[2], r"^pipe:", "stdin is a pipe in pipe "
                         "mode: %r" % lines)
        if os.getuid() == 0:
            c, pid = await self.start({"args": ["id", "-u"],
                                       "user": "nobody", "workDir": "/"})
            await self.finish(c)
            self.assertEqual(c.output, b"65534\n")

    # ----------------------------------------------------- tty

    async def test_tty_size_applied_before_start(self):
        c, pid = await self.start({"args": ["stty", "size"], "tty": True,
                                   "cols": 100, "rows": 30})
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)
        self.assertEqual(c.output.strip(), b"30 100")
        # default 80x24
        c, pid = await self.start({"args": ["stty", "size"], "tty": True})
        await self.finish(c)
        self.assertEqual(c.output.strip(), b"24 80")

    async def test_tty_resize(self):
        c, pid = await self.start({"args": ["sh", "-c",
                                            "stty size; read x; stty size"],
                                   "tty": True, "cols": 100, "rows": 30})
        await c.wait_output(rb"30 100\r?\n")
        await c.send({"type": "resize", "cols": 120, "rows": 40})
        await asyncio.sleep(0.2)
        await c.stdin(b"go\n")
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)
        self.assertRegex(c.output, rb"(?s)^30 100\r?\n.*40 120\r?\n$")

    async def test_tty_output_is_all_stdout(self):
        c, pid = await self.start({"command": "test -t 0 && test -t 1 && "
                                              "test -t 2 && echo all-tty; "
                                              "echo to-stderr >&2",
                                   "tty": True})
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)
        self.assertIn(b"all-tty", c.output)
        self.assertIn(b"to-stderr", c.output)
        types = {t for _, t, _ in c.types}
        self.assertEqual(types, {"stdout"}, "tty output is all stdout")

    async def test_tty_bulk_output_in_large_frames(self):
        """A PTY gives 4095 bytes a read: output waiting behind a full read
        goes in the same frame, up to 64 KiB, so bulk output is not one
        message per read; every byte arrives, in order."""
        total = 2 * MiB
        c = await WSClient.open(self.d, STREAM, {},
                                {"Authorization": "Bearer " + self.d.token},
                                "bulk", max_queue=4, read_limit=2 ** 16)
        self.addAsyncCleanup(c.close)
        await c.send({"type": "start", "tty": True, "command":
                      "stty raw -echo; head -c %d /dev/zero | tr '\\0' x"
                      % total})
        m = await c.recv()
        self.assertEqual(m["type"], "started", m)
        self._kill_later(m["pid"])
        # a reader slower than the command, as a browser's terminal is:
        # the PTY is always full when the worker reads it
        while True:
            m = await c.recv()
            if m["type"] != "stdout":
                break
            await asyncio.sleep(0.005)
        self.assertEqual(m["type"], "exit", m)
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)
        self.assertEqual(c.output, b"x" * total)
        sizes = [len(d) for _, t, d in c.types if t == "stdout"]
        self.assertLessEqual(max(sizes), 64 * 1024, "a frame over 64 KiB")
        self.assertLess(len(sizes), total // 4095 // 2,
                        "%d frames for %d bytes" % (len(sizes), total))

    async def test_small_writes_gathered_into_few_frames(self):
        """A command writing a line at a time, faster than the client
        needs it, is sent as it comes for its first line, then gathered:
        a frame at most every 4 ms (or at 64 KiB), not one per write; every
        byte arrives, in order; and input's echo still comes."""
        lines = 3000
        for tty in (True, False):
            t0 = time.monotonic()
            c, _ = await self.start({"tty": tty, "command":
                                     "i=0; while [ $i -lt %d ]; do echo "
                                     "line $i; i=$((i+1)); done; read x; "
                                     "echo got $x" % lines})
            want = "".join("line %d\n" % i for i in range(lines)).encode()
            if tty:
                want = want.replace(b"\n", b"\r\n")
            await c.wait_output(re.escape(want))
            ms = (time.monotonic() - t0) * 1000
            frames = len([t for _, t, _ in c.types if t == "stdout"])
            self.assertLessEqual(frames, ms / 3 + len(want) / 32768 + 3,
                                 "tty=%s: %d frames in %.0f ms for %d "
                                 "writes" % (tty, frames, ms, lines))
            await c.stdin(b"y\n")
            await c.wait_output(rb"got y\r?\n$")
            ex = await self.finish(c)
            self.assertEqual(ex["exitCode"], 0, ex)

    async def test_tty_has_controlling_terminal_and_session(self):
        c, pid = await self.start({"args": ["sh", "-c",
                                            "cut -d' ' -f5,6,7,8 "
                                            "/proc/$$/stat; tty"],
                                   "tty": True})
        await self.finish(c)
        lines = c.output.decode().split("\r\n")
        pgrp, sid, tty_nr, tpgid = lines[0].split()
        self.assertEqual((pgrp, sid), (str(pid), str(pid)), lines)
        self.assertNotEqual(tty_nr, "0", "controlling terminal: %r" % lines)
        self.assertEqual(tpgid, str(pid), "foreground group: %r" % lines)
        self.assertRegex(lines[1], r"^/dev/pts/\d+$", lines)

    # ----------------------------------------------------- signals

    async def _signal_group(self, sig, expect):
        c, pid = await self.start({"args": ["sh", "-c",
                                            "sleep 1000 & echo $!; wait"]})
        m = await c.wait_output(rb"(\d+)\n")
        bg = int(m.group(1))
        self._kill_later(bg)
        self.assertEqual(proc_stat(bg)["pgrp"], pid)
        await c.send({"type": "signal", "signal": sig})
        ex = await self.finish(c)
        self.assertIsNone(ex["exitCode"], (sig, ex))
        self.assertEqual(ex["signal"], expect, (sig, ex))
        self.assertIs(ex["timedOut"], False, ex)
        # the background child got it too (it was sent to the group)
        wait_for(lambda: not proc_exists(bg), 5,
                 what="background child %d to die of %r" % (bg, sig))

    async def test_signal_term_by_name(self):
        await self._signal_group("TERM", "TERM")

    async def test_signal_kill_by_name(self):
        await self._signal_group("KILL", "KILL")

    async def test_signal_hup_by_name(self):
        await self._signal_group("HUP", "HUP")

    async def test_signal_by_number(self):
        await self._signal_group(15, "TERM")
        await self._signal_group(9, "KILL")

    async def test_signal_int_reaches_the_group(self):
        # a non-interactive shell's background jobs ignore INT, so the group
        # here is a foreground pipeline: sh, and two sleeps
        c, pid = await self.start({"args": ["sh", "-c",
                                            "sleep 1000 | sleep 1001"]})
        members = wait_for(lambda: len(group_members(pid)) >= 3 and
                           group_members(pid), 10,
                           what="the pipeline to start")
        for p in members:
            self._kill_later(p)
        await c.send({"type": "signal", "signal": "INT"})
        ex = await self.finish(c)
        self.assertEqual(ex["signal"], "INT", ex)
        for p in members:
            wait_for(lambda: not proc_exists(p), 5,
                     what="group member %d to die of INT" % p)

    async def test_signal_usr1_trapped(self):
        c, pid = await self.start({"args": ["sh", "-c",
                                            "trap 'echo got-usr1' USR1; "
                                            "echo ready; "
                                            "while :; do sleep 0.1; done"]})
        await c.wait_output(rb"ready\n")
        await c.send({"type": "signal", "signal": "USR1"})
        await c.wait_output(rb"got-usr1\n")
        self.assertTrue(proc_exists(pid), "the trap kept sh alive")
        await c.send({"type": "signal", "signal": 10})   # USR1 by number
        await c.wait_output(rb"got-usr1\n.*got-usr1\n")
        await c.send({"type": "signal", "signal": "TERM"})
        ex = await self.finish(c)
        self.assertEqual(ex["signal"], "TERM", ex)

    async def test_bad_signals(self):
        c, pid = await self.start({"args": ["cat"]})
        for sig in ("NOPE", "", -1, 999, 1.5, ["TERM"], None, {"a": 1}):
            await c.send({"type": "signal", "signal": sig})
            m = await c.recv()
            self.assertEqual(m["type"], "error", (sig, m))
            self.assertEqual(m["code"], "bad_request", (sig, m))
        self.assertTrue(proc_exists(pid))
        await c.stdin(b"still\n")
        await c.wait_output(rb"still\n")
        await c.send({"type": "eof"})
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)

    async def test_tty_signal_goes_to_the_foreground_group(self):
        ps1 = "LODGEPS1> "
        c, pid = await self.start({"args": ["bash", "--norc", "-i"],
                                   "env": {"PS1": ps1}, "tty": True})
        await c.wait_output(re.escape(ps1.encode()))
        await c.stdin(b"sleep 100\n")

        def fg_sleep():
            for p in lt.all_pids():
                try:
                    st = proc_stat(p)
                except (OSError, ValueError, IndexError):
                    continue
                if st["comm"] == "sleep" and st["session"] == pid and \
                        st["tpgid"] == st["pgrp"] and st["pgrp"] != pid:
                    return p
            return None
        sl = wait_for(fg_sleep, 10, what="sleep in the foreground")
        self._kill_later(sl)
        mark = c.end_offset
        await c.send({"type": "signal", "signal": "INT"})
        wait_for(lambda: not proc_exists(sl), 5,
                 what="the foreground sleep to die of INT")
        await c.wait_output(re.escape(ps1.encode()), since=mark)
        self.assertTrue(proc_exists(pid), "bash survives the INT")
        await c.stdin(b"echo alive-$((40+2))\n")
        await c.wait_output(rb"alive-42", since=mark)
        await c.stdin(b"exit 5\n")
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 5, ex)

    # ----------------------------------------------------- exit, timeout

    async def test_exit_message_fields(self):
        for body, code, sig in [
                ({"args": ["true"]}, 0, None),
                ({"args": ["sh", "-c", "exit 3"]}, 3, None),
                ({"args": ["sh", "-c", "kill -KILL $$"]}, None, "KILL"),
                ({"args": ["sh", "-c", "kill -SEGV $$"]}, None, "SEGV"),
                ({"command": "exit 255"}, 255, None)]:
            c, pid = await self.start(body)
            ex = await self.finish(c)
            self.assertEqual((ex["exitCode"], ex["signal"]), (code, sig),
                             (body, ex))
            self.assertIs(ex["timedOut"], False, ex)

    async def test_client_closes_after_exit(self):
        """clientCloses: after the exit message lodged waits for the
        client's close (a slow reader's queue is not cut off by ours);
        without it lodged closes at once; a client that never closes is
        closed with 1000 after 10 s."""
        c, _ = await self.start({"args": ["echo", "hi"],
                                 "clientCloses": True})
        await c.recv_type("exit")
        with self.assertRaises(asyncio.TimeoutError):
            await c.recv(2)
        self.assertFalse(c.closed)
        await asyncio.wait_for(c.ws.close(), 10)
        self.assertEqual(c.ws.close_code, 1000)
        c, _ = await self.start({"args": ["echo", "hi"]})
        await c.recv_type("exit")
        code, seen = await c.expect_close(10)
        self.assertEqual(code, 1000, seen)
        c, _ = await self.start({"args": ["true"], "clientCloses": True})
        await c.recv_type("exit")
        code, seen = await c.expect_close(30)
        self.assertEqual(code, 1000, seen)
        c = await self.open_stream(label="bad clientCloses")
        await c.send({"type": "start", "args": ["true"],
                      "clientCloses": "yes"})
        m = await c.recv()
        self.assertEqual((m["type"], m["code"]), ("error", "bad_request"), m)
        self.assertIn("clientCloses", m["message"])

    async def test_timeout(self):
        t0 = time.monotonic()
        c, pid = await self.start({"args": ["sleep", "100"],
                                   "timeoutSeconds": 0.5})
        ex = await self.finish(c)
        wall = time.monotonic() - t0
        self.assertIs(ex["timedOut"], True, ex)
        self.assertIsNone(ex["exitCode"], ex)
        self.assertEqual(ex["signal"], "TERM", ex)
        self.assertGreaterEqual(wall, 0.45)
        self.assertLess(wall, 10)

    async def test_timeout_then_kill(self):
        t0 = time.monotonic()
        c, pid = await self.start({"command": "trap '' TERM; sleep 100",
                                   "timeoutSeconds": 0.3})
        ex = await self.finish(c)
        wall = time.monotonic() - t0
        self.assertIs(ex["timedOut"], True, ex)
        self.assertEqual(ex["signal"], "KILL", ex)
        self.assertGreaterEqual(wall, 1.8)
        self.assertLess(wall, 15)

    def _close_waits_for_the_client(self, body, expect_code):
        s = raw_open_stream(self.d.sock_path)
        try:
            s.sendall(raw_frame(2, msgpack.packb(dict(body, type="start"),
                                                 use_bin_type=True)))
            msgs = []
            while True:
                op, payload = raw_read_frame(s)
                if op == 8:
                    break
                self.assertEqual(op, 2, (op, payload))
                msgs.append(msgpack.unpackb(payload, raw=False))
            types = [m["type"] for m in msgs]
            self.assertEqual(types, ["started", "exit"], msgs)
            self.assertEqual(msgs[-1]["exitCode"], expect_code, msgs)
            self.assertEqual(struct.unpack("!H", payload[:2])[0], 1000)
            # A client message that crossed the server's close (the CLI's
            # eof, when its stdin is empty), then the client's close: the
            # server must still be there to read both.
            time.sleep(0.3)
            try:
                s.sendall(raw_frame(2, msgpack.packb({"type": "eof"})))
                s.sendall(raw_frame(8, struct.pack("!H", 1000)))
            except OSError as e:
                self.fail("the server closed the connection without "
                          "waiting for the client's close: %r" % e)
            # then it closes (nothing more but a possible close echo)
            while True:
                try:
                    op, payload = raw_read_frame(s)
                except EOFError:
                    break
                self.assertEqual(op, 8, "data after exit: %r" % payload)
        finally:
            s.close()

    async def test_close_waits_for_the_client(self):
        """The exit message and close 1000 are followed by the closing
        handshake: the server reads until the client's close (or EOF)
        instead of dropping the socket right after its close frame, which
        made `lodge exec` fail with 1006 when its eof was in flight."""
        for body, code in [({"args": ["true"]}, 0),
                           ({"args": ["sh", "-c", "exit 42"]}, 42)]:
            self._close_waits_for_the_client(body, code)

    # ----------------------------------------------------- connection drop

    async def _drop(self, body, abort, grace=5.0):
        c, pid = await self.start(body)
        m = await c.wait_output(rb"(\d+)\r?\n")
        bg = int(m.group(1))
        self._kill_later(bg)
        server = self.serving_pid(pid)
        self.assertEqual(proc_stat(bg)["pgrp"], pid)
        t0 = time.monotonic()
        if abort:
            c.ws.transport.abort()      # no close frame: a dropped peer
        else:
            await c.close()
        await lt.await_true(
            lambda: not proc_exists(pid) and not proc_exists(bg), grace,
            "command %d and background child %d to die after the "
            "connection dropped" % (pid, bg))
        dt = time.monotonic() - t0
        await lt.await_true(lambda: not proc_exists(server), 10,
                            "serving process %d to exit" % server)
        return dt

    async def test_connection_drop_kills_the_group(self):
        dt = await self._drop({"args": ["sh", "-c",
                                        "sleep 1000 & echo $!; wait"]},
                              abort=True)
        self.assertLess(dt, 5, "took %.2f s" % dt)

    async def test_connection_close_kills_the_group(self):
        await self._drop({"args": ["sh", "-c",
                                   "sleep 1000 & echo $!; wait"]},
                         abort=False)

    async def test_connection_drop_hup_then_kill(self):
        """The group ignores HUP (and the shell traps it, writing a file):
        HUP is delivered first, KILL ends it about 2 s later."""
        tmp = tempfile.mkdtemp(prefix="lodge-stream-hup-")
        self.addCleanup(lambda: __import__("shutil").rmtree(tmp, True))
        mark = os.path.join(tmp, "got-hup")
        dt = await self._drop({"args": ["sh", "-c",
                                        "trap 'touch %s' HUP; "
                                        "(trap '' HUP; sleep 1000) & "
                                        "echo $!; "
                                        "while :; do wait; done" % mark]},
                              abort=True, grace=10)
        self.assertTrue(os.path.exists(mark), "the group got no SIGHUP")
        self.assertGreaterEqual(dt, 1.5, "KILL came after %.2f s, not after "
                                "a grace time" % dt)
        self.assertLess(dt, 6)

    async def test_connection_drop_in_tty_mode(self):
        dt = await self._drop({"args": ["sh", "-c",
                                        "sleep 1000 & echo $!; wait"],
                               "tty": True}, abort=True)
        self.assertLess(dt, 5)

    # ----------------------------------------------------- bad input

    async def test_bad_messages_before_start(self):
        c = await self.open_stream()
        bad = [
            msgpack.packb({"type": "stdin", "data": b"x"}),
            msgpack.packb({"type": "eof"}),
            msgpack.packb({"type": "signal", "signal": "TERM"}),
            msgpack.packb({"type": "bogus"}),
            msgpack.packb({"type": "start"}),
            msgpack.packb({"type": "start", "command": 5}),
            msgpack.packb({"type": "start", "args": "ls"}),
            msgpack.packb({"type": "start", "args": []}),
            msgpack.packb({"type": "start", "command": "x",
                           "args": ["y"]}),
            msgpack.packb({"type": "start", "args": ["true"],
                           "tty": "yes"}),
            msgpack.packb({"type": "start", "args": ["true"],
                           "cols": "80"}),
            msgpack.packb({"type": "start", "args": ["true"], "rows": 0}),
            msgpack.packb({"type": "start", "args": ["true"],
                           "timeoutSeconds": -1}),
            msgpack.packb({"type": "start", "args": ["true"],
                           "env": {"A": 1}}),
            msgpack.packb({"type": "start", "args": ["true"],
                           "workDir": 1}),
            msgpack.packb({"type": 5}),
            msgpack.packb({"no": "type"}),
            msgpack.packb([1, 2, 3]),
            msgpack.packb("start"),
            b"\xc1\xc1\xc1",
            b"",
            "a text frame",
        ]
        for raw in bad:
            await c.send_raw(raw)
            m = await c.recv()
            self.assertEqual(m["type"], "error", (raw, m))
            self.assertEqual(m["code"], "bad_request", (raw, m))
            self.assertIsInstance(m.get("message"), str, m)
        # the connection is still usable
        await c.send({"type": "start", "args": ["echo", "fine"]})
        m = await c.recv()
        self.assertEqual(m["type"], "started", m)
        self._kill_later(m["pid"])
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)
        self.assertEqual(c.output, b"fine\n")

    async def test_bad_messages_after_start(self):
        c, pid = await self.start({"args": ["cat"]})
        bad = [
            {"type": "start", "args": ["true"]},
            {"type": "bogus"},
            {"type": "stdin"},
            {"type": "stdin", "data": 5},
            {"type": "stdin", "data": [1]},
            {"type": "resize", "cols": 10, "rows": 10},   # pipe mode
            {"type": "signal"},
            [1],
            "text",
            b"\xc1",
        ]
        for m0 in bad:
            if isinstance(m0, (str, bytes)):
                await c.send_raw(m0)
            else:
                await c.send(m0)
            m = await c.recv()
            self.assertEqual(m["type"], "error", (m0, m))
            self.assertEqual(m["code"], "bad_request", (m0, m))
        await c.stdin(b"usable\n")
        await c.wait_output(rb"usable\n")
        await c.send({"type": "eof"})
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)

    async def test_eof_in_tty_mode_is_an_error(self):
        c, pid = await self.start({"args": ["cat"], "tty": True})
        await c.send({"type": "eof"})
        m = await c.recv()
        self.assertEqual((m["type"], m.get("code")), ("error", "bad_request"),
                         m)
        await c.send({"type": "resize", "cols": "x", "rows": 5})
        m = await c.recv()
        self.assertEqual((m["type"], m.get("code")), ("error", "bad_request"),
                         m)
        await c.stdin(b"\x04")      # ^D ends cat at the terminal
        ex = await self.finish(c)
        self.assertEqual(ex["exitCode"], 0, ex)

    async def test_spawn_failure(self):
        for body, word in [
                ({"args": ["no-such-program-lodge-test"]},
                 "no-such-program-lodge-test"),
                ({"args": ["true"], "workDir": "/no/such/dir-lodge"},
                 "/no/such/dir-lodge"),
                ({"args": ["true"], "user": "no-such-user-lodge"},
                 "no-such-user-lodge")]:
            c = await self.open_stream()
            await c.send(dict(body, type="start"))
            code, seen = await c.expect_close()
            self.assertEqual(len(seen), 1, seen)
            self.assertEqual(seen[0]["type"], "error", seen)
            self.assertEqual(seen[0]["code"], "spawn_failed", seen)
            self.assertIn(word, seen[0]["message"], seen)
            self.assertEqual(code, 1000)

    async def test_unauthorized_upgrade(self):
        st, body = await lt.ws_refused(self.d, STREAM)
        self.assertEqual(st, 401, body)
        st, body = await lt.ws_refused(
            self.d, STREAM, headers={"Authorization": "Bearer nope"})
        self.assertEqual(st, 401, body)
        self.assertEqual(json.loads(body)["error"]["code"], "unauthorized")

    # ----------------------------------------------------- pacing

    async def test_output_paced_by_the_client(self):
        """100 MB while the client does not read for 3 s: the writer is
        held (it writes little during the pause), the serving process stays
        small, and then every byte arrives."""
        total = 100 * 1000 * 1000
        c = await WSClient.open(self.d, STREAM, {},
                                {"Authorization": "Bearer " + self.d.token},
                                "paced", max_queue=4, read_limit=2 ** 16)
        self.addAsyncCleanup(c.close)
        await c.send({"type": "start",
                      "args": ["head", "-c", str(total), "/dev/zero"]})
        m = await c.recv()
        self.assertEqual(m["type"], "started")
        pid = m["pid"]
        self._kill_later(pid)
        server = self.serving_pid(pid)

        def wchar():
            with open("/proc/%d/io" % pid) as f:
                for line in f:
                    if line.startswith("wchar:"):
                        return int(line.split()[1])
        await asyncio.sleep(1.5)
        w1, r1 = wchar(), rss_kib(server)
        await asyncio.sleep(1.5)
        w2, r2 = wchar(), rss_kib(server)
        self.assertLess(w2, total // 4, "the writer was not held back: "
                        "%d bytes written while the client did not read"
                        % w2)
        self.assertLess(w2 - w1, 4 * MiB, "the writer kept writing while "
                        "the client did not read (%d -> %d)" % (w1, w2))
        if not lt.SANITIZED:
            self.assertLess(max(r1[1], r2[1]), 16 * 1024,
                            "serving process RSS %r KiB" % (r2,))
        # under ASan the runtime's own pages set the size, not ours: it
        # still must not grow while the client does not read
        self.assertLess(r2[1] - r1[1], 4 * 1024,
                        "serving process RSS grew: %r -> %r KiB" % (r1, r2))
        n = 0
        while True:
            try:
                m = await c.recv(30)
            except websockets.exceptions.ConnectionClosed:
                break
            if m["type"] == "stdout":
                n += len(m["data"])
                c.segments = []         # do not keep 100 MB around
            elif m["type"] == "exit":
                self.assertEqual(m["exitCode"], 0, m)
        self.assertEqual(n, total)
        self.assertEqual(c.end_offset, total)
        self.assertEqual(c.messages[-1]["type"], "exit")

    # ----------------------------------------------------- no lost tails

    async def _tails(self, runs, body, want, stop_after=5):
        bad = []
        for i in range(runs):
            c, pid = await self.start(body, label="tail-%d" % i)
            try:
                ex = await self.finish(c)
            except AssertionError as e:
                bad.append("run %d: %s" % (i, e))
                continue
            out = c.output
            if out != want or ex["exitCode"] != 0:
                bad.append("run %d: %d of %d bytes, tail %r, exit %r"
                           % (i, len(out), len(want), out[-12:], ex))
            if len(bad) >= stop_after:
                bad.append("(stopped after %d bad runs of %d)"
                           % (len(bad), i + 1))
                break
        self.assertEqual(bad, [], "output lost at the end of the stream")

    async def test_no_lost_tails_200_streams(self):
        """200 short streams, 50 kB printed just before the exit."""
        await self._tails(200, {"command": "head -c 50000 /dev/zero | "
                                           "tr '\\0' a; printf END"},
                          b"a" * 50000 + b"END")

    async def test_no_lost_tails_direct_writer(self):
        """The command itself writes 300 kB (more than the pipe holds) and
        exits at once: every byte must arrive, every time."""
        await self._tails(200, {"args": ["head", "-c", "300000",
                                         "/dev/zero"]},
                          b"\0" * 300000)

    async def test_no_lost_tails_direct_writer_1mb(self):
        want = "".join("%d\n" % i for i in range(1, 142865)).encode()
        await self._tails(50, {"args": ["seq", "1", "142864"]}, want)

    # ----------------------------------------------------- 4 GiB

    async def test_4gib_through_one_stream(self):
        """4 GiB through one stream with the client not reading for 5 s:
        the serving process stays under 16 MiB RSS and every byte arrives
        (tests/tools/lodge-wsdrain, a C client, does the reading)."""
        tool = find_wsdrain()
        if not os.access(tool, os.X_OK):
            self.fail("lodge-wsdrain not built at %s (make "
                      "tests/tools/lodge-wsdrain, or set LODGE_WSDRAIN)"
                      % tool)
        total = 4 * 1024 ** 3
        argv = [tool, "--port", str(self.d.port), "--pause", "5",
                "--deadline", "600", "--",
                "head", "-c", str(total), "/dev/zero"]
        env = dict(os.environ, LODGE_TOKEN=self.d.token)
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env,
                             stderr=subprocess.PIPE)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.stderr.close)
        lines = []
        events = {}
        samples = []            # (t, VmRSS, VmHWM) of the serving process
        box = {}

        def reader():
            for raw in p.stdout:
                line = json.loads(raw)
                lines.append(line)
                if "event" in line:
                    events[line["event"]] = (time.monotonic(), line)
        th = threading.Thread(target=reader, daemon=True)
        th.start()
        deadline = t0 + 600
        while "started" not in events and p.poll() is None and \
                time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        self.assertIn("started", events, "no started from the client: "
                      "%r %r" % (lines, p.stderr.read()
                                 if p.poll() is not None else ""))
        pid = events["started"][1]["pid"]
        self._kill_later(pid)
        try:
            server = self.serving_pid(pid)
        except (OSError, KeyError):
            self.fail("command %d gone before its serving process could be "
                      "found" % pid)
        box["server"] = server
        wchar_pause = []
        server_cpu = None
        while p.poll() is None and time.monotonic() < deadline:
            r = rss_kib(server)
            if r is not None:
                samples.append((time.monotonic() - t0, r[0], r[1]))
            try:
                with open("/proc/%d/stat" % server) as f:
                    st = f.read()
                rest = st[st.rindex(")") + 2:].split()
                server_cpu = (int(rest[11]) + int(rest[12])) / \
                    os.sysconf("SC_CLK_TCK")
            except (OSError, ValueError, IndexError):
                pass
            if "paused" in events and "resumed" not in events:
                try:
                    with open("/proc/%d/io" % pid) as f:
                        for line in f:
                            if line.startswith("wchar:"):
                                wchar_pause.append(
                                    (time.monotonic(),
                                     int(line.split()[1])))
                except OSError:
                    pass
            await asyncio.sleep(0.2)
        wall = time.monotonic() - t0
        if p.poll() is None:
            p.kill()
        th.join(10)
        err = p.stderr.read().decode(errors="replace")
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        client_cpu = (ru1.ru_utime - ru0.ru_utime) + \
            (ru1.ru_stime - ru0.ru_stime)
        sys.stderr.write("\n[4 GiB] %.1f s, %.0f MB/s; CPU: client %.1f s, "
                         "serving process %s s; result %s\n" % (
                             wall, total / wall / 1e6, client_cpu,
                             server_cpu, lines[-1] if lines else None))
        self.assertTrue(lines and lines[-1].get("result"),
                        "no result line from lodge-wsdrain; stderr %r" % err)
        res = lines[-1]
        self.assertTrue(samples, "no RSS samples of the serving process")
        max_rss = max(s[1] for s in samples)
        max_hwm = max(s[2] for s in samples)
        sys.stderr.write("[4 GiB] serving process max VmRSS %d KiB, VmHWM "
                         "%d KiB over %d samples\n"
                         % (max_rss, max_hwm, len(samples)))
        self.assertEqual(res["bytes"], total, res)
        self.assertEqual(res["stdoutBytes"], total, res)
        self.assertEqual(res["nonzero"], 0, res)
        self.assertIs(res["contiguous"], True, res)
        self.assertIs(res["exit"], True, res)
        self.assertEqual(res["exitCode"], 0, res)
        self.assertIs(res["dataAfterExit"], False, res)
        self.assertEqual(res["closeCode"], 1000, res)
        self.assertIs(res["ok"], True, res)
        if not lt.SANITIZED:
            self.assertLess(max_rss, 16 * 1024,
                            "serving process VmRSS peaked at %d KiB" % max_rss)
            self.assertLess(max_hwm, 16 * 1024,
                            "serving process VmHWM peaked at %d KiB" % max_hwm)
        # while the client did not read, the writer was held
        self.assertIn("paused", events)
        self.assertIn("resumed", events)
        pause = events["resumed"][0] - events["paused"][0]
        self.assertGreaterEqual(pause, 4.5)
        late = [w for t, w in wchar_pause if t > events["paused"][0] + 2]
        if len(late) >= 2:
            self.assertLess(late[-1] - late[0], 8 * MiB,
                            "the command kept writing while the client "
                            "did not read")


if __name__ == "__main__":
    lt.main()

"""SCENARIOS.md through the asyncio API (lodge.aio): each test runs its
own event loop (asyncio.run), so the suite needs no plugin."""
from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
from typing import Any, Awaitable, Callable, List, TypeVar

import pytest

import lodge
import lodge.aio
from conftest import Kit, pid_gone
from test_faults import _loop_output, _tiles
from test_stream import rss_bytes

sc = pytest.mark.scenario
T = TypeVar("T")


def run(fn: Callable[[lodge.aio.AsyncSandbox], Awaitable[T]]) -> T:
    async def main() -> T:
        async with await lodge.aio.connect() as sb:
            return await fn(sb)
    return asyncio.run(main())


async def until(pred: Callable[[], Any], timeout: float = 10.0) -> None:
    async def loop() -> None:
        while not pred():
            await asyncio.sleep(0.05)
    await asyncio.wait_for(loop(), timeout)


@sc("connect.env")
@sc("exec.basic")
def test_aio_exec() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        assert (await sb.health()).status == "ok"
        r = await sb.exec_command("echo hello")
        assert (r["stdout"], r.exit_code) == ("hello\n", 0)
        r = await sb.exec_command("echo out; echo err >&2; exit 3",
                                  workdir="/tmp")
        assert (r.stdout, r.stderr, r.exit_code) == ("out\n", "err\n", 3)
        r = await sb.exec_command("sleep 30", timeout_seconds=0.5)
        assert r.timed_out and r.signal == "TERM"
    run(t)


@sc("exec.spawn_failed")
@sc("stream.spawn_failed")
def test_aio_spawn_failed() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        with pytest.raises(lodge.SpawnFailedError):
            await sb.exec_command("true", workdir="/nonexistent")
        with pytest.raises(lodge.SpawnFailedError):
            await sb.exec_stream(command="true", workdir="/nonexistent")
    run(t)


@sc("stream.basic")
@sc("stream.stdin_eof")
def test_aio_stream_iterate() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        h = await sb.exec_stream(args=["cat"])
        await h.write("hello\n")
        await h.end()
        got: List[lodge.Output] = [ev async for ev in h
                                   if isinstance(ev, lodge.Output)]
        assert b"".join(o.data for o in got) == b"hello\n"
        assert got[0].offset == 0
        assert await h.wait(10) == {"code": 0, "signal": None}
    run(t)


@sc("stream.basic")
def test_aio_stream_callbacks() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        out, err = bytearray(), bytearray()

        async def on_err(b: bytes) -> None:
            await asyncio.sleep(0)
            err.extend(b)

        h = await sb.exec_stream({"command": "printf out; printf err >&2",
                                  "onStdout": out.extend,
                                  "onStderr": on_err})
        assert (await h.wait(30)).code == 0
        assert (bytes(out), bytes(err)) == (b"out", b"err")
        with pytest.raises(RuntimeError):
            h.__aiter__()
    run(t)


@sc("stream.pty")
@sc("stream.resize")
@sc("stream.signal")
def test_aio_stream_pty() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        out = bytearray()
        h = await sb.exec_stream(command="stty size; read x; stty size; "
                                 "exec sleep 60", tty=True, cols=120,
                                 rows=40, on_stdout=out.extend)
        await until(lambda: b"40 120" in out)
        await h.resize(100, 30)
        await h.write("\n")
        await until(lambda: b"30 100" in out)
        await h.signal("TERM")
        assert await h.wait(30) == {"code": None, "signal": "TERM"}
    run(t)


@sc("stream.text")
def test_aio_stream_text() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        texts: List[str] = []
        h = await sb.exec_stream(command=r"printf '\342'; sleep 0.3; "
                                 r"printf '\202\254\n'",
                                 on_stdout_text=texts.append)
        assert (await h.wait(30)).code == 0
        assert "".join(texts) == "\u20ac\n"
    run(t)


@sc("stream.kill_on_disconnect")
def test_aio_stream_close() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        h = await sb.exec_stream(command="echo $$; exec sleep 600")
        async for ev in h:
            assert isinstance(ev, lodge.Output)
            pid = int(ev.data)
            break
        await h.close()
        with pytest.raises(lodge.ConnectionLostError):
            await h.wait(10)
        await until(lambda: pid_gone(pid))
    run(t)


@sc("stream.connection_lost")
def test_aio_stream_connection_lost(kit: Kit) -> None:
    async def t() -> None:
        sb = await lodge.aio.connect(kit.proxy_url(),
                                     os.environ["LODGE_TOKEN"])
        out = bytearray()
        h = await sb.exec_stream(command="echo $$; exec sleep 600",
                                 on_stdout=out.extend)
        await until(lambda: b"\n" in out)
        kit("cut")
        with pytest.raises(lodge.ConnectionLostError):
            await h.wait(30)
        await until(lambda: pid_gone(int(out)))
        await sb.close()
    asyncio.run(t())


@sc("stream.big_output")
def test_aio_stream_big_output() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        h = await sb.exec_stream(command="head -c 2147483648 /dev/zero")
        n, base, peak = 0, 0, 0
        async for ev in h:
            assert isinstance(ev, lodge.Output)
            if not base:
                base = rss_bytes()
            n += len(ev.data)
            if n & 0x3FFFFFF < len(ev.data):
                peak = max(peak, rss_bytes())
        assert n == 2147483648 and (await h.wait()).code == 0
        assert peak - base < 256 << 20
    run(t)


@sc("stream.big_write")
def test_aio_stream_big_write() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        data = (bytes(range(251)) * (67108864 // 251 + 1))[:67108864]
        out = bytearray()
        h = await sb.exec_stream(args=["sha256sum"], on_stdout=out.extend)
        await h.write(data)
        await h.end()
        assert (await h.wait(120)).code == 0
        assert out.split()[0].decode() == hashlib.sha256(data).hexdigest()
    run(t)


@sc("session.create")
@sc("session.wait")
@sc("session.log")
@sc("session.delete")
@sc("attach.replay")
def test_aio_sessions() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        s = await sb.create_session(command='echo one; read line; '
                                    'echo "got $line"')
        try:
            while await sb.session_log(s.id) != b"one\n":
                await asyncio.sleep(0.05)
            assert s.id in {x.id for x in await sb.list_sessions()}
            h = await sb.attach_session(s.id)
            events: List[Any] = []
            async for ev in h:
                events.append(ev)
                if isinstance(ev, lodge.Live):
                    await h.write("x\n")
            assert [e.data if isinstance(e, lodge.Output) else e
                    for e in events] == [b"one\n", lodge.Live(offset=4),
                                         b"got x\n"]
            assert await h.wait() == {"code": 0, "signal": None}
            assert await sb.wait_session(s.id, 10) == {"code": 0,
                                                       "signal": None}
            c = await sb.session_log_chunk(s.id, since=4)
            assert (c.data, c.start, c.end) == (b"got x\n", 4, 10)
        finally:
            await sb.delete_session(s.id)
        with pytest.raises(lodge.NotFoundError):
            await sb.get_session(s.id)
    run(t)


@sc("attach.readonly")
@sc("session.input")
@sc("session.signal")
def test_aio_readonly() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        s = await sb.create_session(args=["cat"])
        try:
            h = await sb.attach_session(s.id, read_only=True)
            await h.write("x")
            await sb.send_input(s.id, "rest\n")
            seen: List[Any] = []
            async for ev in h:
                seen.append(ev)
                if isinstance(ev, lodge.Output):
                    await sb.signal_session(s.id, "TERM")
            assert [e.data for e in seen if isinstance(e, lodge.Output)] == [
                b"rest\n"]
            assert isinstance(h.errors[0], lodge.ForbiddenError)
            assert (await h.wait()).signal == "TERM"
        finally:
            await sb.delete_session(s.id)
    run(t)


@sc("attach.pace")
def test_aio_pace() -> None:
    size = 32 << 20

    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        s = await sb.create_session(args=["sh", "-c", "read x; head -c %d "
                                          "/dev/zero" % size])
        try:
            h = await sb.attach_session(s.id, pace=True)
            got = 0
            slow = True
            gaps: List[lodge.Gap] = []
            started = asyncio.Event()

            async def take() -> None:
                # a slow iterator: the handle pulls from the connection
                # only as it is consumed, which holds the daemon back
                nonlocal got
                async for ev in h:
                    if isinstance(ev, lodge.Live):
                        await h.write("go\n")
                        started.set()
                    elif isinstance(ev, lodge.Gap):
                        gaps.append(ev)
                    elif isinstance(ev, lodge.Output):
                        got += len(ev.data)
                        if slow:
                            await asyncio.sleep(0.02)

            task = asyncio.ensure_future(take())
            await asyncio.wait_for(started.wait(), 10)
            await asyncio.sleep(1.5)
            ahead = (await sb.get_session(s.id)).output_bytes - got
            assert ahead < 12 << 20, "the process ran %d bytes ahead" % ahead
            slow = False
            await asyncio.wait_for(task, 60)
            assert await h.wait() == {"code": 0, "signal": None}
            assert gaps == []
            assert got == size
        finally:
            await sb.delete_session(s.id)
    run(t)


@sc("attach.pace.readonly")
def test_aio_pace_readonly() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        s = await sb.create_session(args=["cat"])
        try:
            with pytest.raises(lodge.BadRequestError) as e:
                await sb.attach_session(s.id, pace=True, read_only=True,
                                        resume=False)
            assert e.value.status == 400 and "'pace'" in e.value.message
            assert (await sb.get_session(s.id)).state == "running"
        finally:
            await sb.delete_session(s.id)
    run(t)


@sc("attach.resume")
@sc("attach.resume.cuts")
def test_aio_resume(kit: Kit, sandbox: lodge.Sandbox) -> None:
    s = sandbox.create_session(
        command="for i in $(seq 1 40); do seq $((i*1000)) "
        "$((i*1000+999)); sleep 0.1; done", bufferSize=4 << 20)

    async def t() -> None:
        sb = await lodge.aio.connect(kit.proxy_url(),
                                     os.environ["LODGE_TOKEN"])
        h = await sb.attach_session(s.id)

        async def cutter() -> None:
            for _ in range(3):
                await asyncio.sleep(1)
                await asyncio.get_running_loop().run_in_executor(
                    None, kit, "cut")

        task = asyncio.ensure_future(cutter())
        data = bytearray()
        recs = 0
        async for ev in h:
            if isinstance(ev, lodge.Output):
                data += ev.data
            elif isinstance(ev, lodge.Reconnected):
                recs += 1
            else:
                assert isinstance(ev, lodge.Live), ev
        await task
        assert bytes(data) == _loop_output()
        assert recs == h.reconnects >= 3
        assert (await h.wait()).code == 0
        await sb.close()
    try:
        asyncio.run(t())
    finally:
        sandbox.delete_session(s.id)


@sc("attach.resume.gap")
def test_aio_gap(kit: Kit, sandbox: lodge.Sandbox) -> None:
    s = sandbox.create_session(command="sleep 1; head -c 20000000 /dev/zero"
                               " | tr '\\0' a; echo end", bufferSize=4096)

    async def t() -> None:
        sb = await lodge.aio.connect(kit.proxy_url(),
                                     os.environ["LODGE_TOKEN"])
        kit("cut-after 16384")
        h = await sb.attach_session(s.id, since=0)
        seen = [ev async for ev in h
                if isinstance(ev, (lodge.Output, lodge.Gap))]
        assert (await h.wait()).code == 0
        assert any(isinstance(e, lodge.Gap) for e in seen)
        _tiles(seen, sandbox.get_session(s.id).output_bytes)
        await sb.close()
    try:
        asyncio.run(t())
    finally:
        kit("cut-after 0")
        sandbox.delete_session(s.id)


@sc("attach.front_killed")
def test_aio_front_killed(kit: Kit, sandbox: lodge.Sandbox) -> None:
    s = sandbox.create_session(args=["cat"])

    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        h = await sb.attach_session(s.id)
        it = h.__aiter__()
        assert isinstance(await it.__anext__(), lodge.Live)
        kit("kill-front")
        try:
            await h.write("after\n")
            ev = await asyncio.wait_for(it.__anext__(), 10)
            assert isinstance(ev, lodge.Output) and ev.data == b"after\n"
        finally:
            kit("start-front")
        await sb.signal_session(s.id, "TERM")
        with pytest.raises(StopAsyncIteration):
            await it.__anext__()
        assert (await h.wait()).signal == "TERM" and h.reconnects == 0
    try:
        run(t)
    finally:
        sandbox.delete_session(s.id)


@sc("error.not_found")
@sc("error.unauthorized")
@sc("error.payload_too_large")
@sc("error.conflict")
def test_aio_errors() -> None:
    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        with pytest.raises(lodge.NotFoundError) as ei:
            await sb.get_session("no-such-session")
        assert ei.value.status == 404
        with pytest.raises(lodge.NotFoundError):
            await sb.attach_session("no-such-session")
        s = await sb.create_session(command="exec sleep 600")
        try:
            with pytest.raises(lodge.PayloadTooLargeError):
                await sb.send_input(s.id, "x" * (9 << 20))
            assert s.name is None
            with pytest.raises(lodge.ConflictError):
                await sb.create_session(name=s.id)
        finally:
            await sb.delete_session(s.id)
        bad = await lodge.aio.connect(os.environ["LODGE_URL"],
                                      "wrong-token-0123456789")
        with pytest.raises(lodge.UnauthorizedError):
            await bad.health()
        with pytest.raises(lodge.UnauthorizedError):
            await bad.exec_stream(command="true")
        await bad.close()
    run(t)


@sc("connect.unix")
def test_aio_unix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LODGE_URL")
    monkeypatch.delenv("LODGE_TOKEN")

    async def t(sb: lodge.aio.AsyncSandbox) -> None:
        assert sb.endpoint.is_unix
        assert (await sb.exec_command("echo unix")).stdout == "unix\n"
        h = await sb.exec_stream(command="echo unix")
        got = [ev.data async for ev in h if isinstance(ev, lodge.Output)]
        assert got == [b"unix\n"]
    run(t)


def test_aio_seq_reference() -> None:
    # the reference output of attach.resume.cuts is what the shell prints
    want = subprocess.run(
        ["sh", "-c", "for i in $(seq 1 40); do seq $((i*1000)) "
         "$((i*1000+999)); done"], capture_output=True, check=True).stdout
    assert want == _loop_output()

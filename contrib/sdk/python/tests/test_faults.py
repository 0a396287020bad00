"""SCENARIOS.md: resume under real faults (the kit's cutting proxy) and
the front killed mid-attach."""
from __future__ import annotations

import subprocess
import threading
import time
from typing import Any, Callable, List

import pytest

import lodge
from conftest import Collector, Kit, eventually

sc = pytest.mark.scenario
Make = Callable[..., lodge.Session]


@sc("attach.resume")
def test_resume_cut_after(proxied: lodge.Sandbox, kit: Kit,
                          sessions: Make) -> None:
    s = sessions(command="sleep 1; seq 1 1000000", bufferSize=8 << 20)
    want = subprocess.run(["seq", "1", "1000000"], capture_output=True,
                          check=True).stdout
    kit("cut-after 1000000")
    c = Collector()
    h = proxied.attach_session(s.id, on_stdout=c.on_stdout, on_gap=c.event,
                               on_reconnect=c.event)
    assert h.wait(120).code == 0
    assert bytes(c.out) == want
    assert not [e for e in c.events if isinstance(e, lodge.Gap)]
    assert h.reconnects >= 3
    assert len(c.events) == h.reconnects


def _loop_output() -> bytes:
    return b"".join(
        b"".join(b"%d\n" % k for k in range(i * 1000, i * 1000 + 1000))
        for i in range(1, 41))


@sc("attach.resume.cuts")
def test_resume_cuts(proxied: lodge.Sandbox, kit: Kit,
                     sessions: Make) -> None:
    s = sessions(command="for i in $(seq 1 40); do seq $((i*1000)) "
                 "$((i*1000+999)); sleep 0.1; done", bufferSize=4 << 20)
    c = Collector()
    h = proxied.attach_session(s.id, on_stdout=c.on_stdout, on_gap=c.event)
    cuts = 0
    for _ in range(3):
        time.sleep(1)
        cuts += int(kit("cut"))
    assert h.wait(120).code == 0
    assert cuts >= 3
    assert bytes(c.out) == _loop_output()
    assert c.events == []
    assert h.reconnects >= 3


def _tiles(chunks: List[Any], total: int) -> None:
    """Output and gaps tile the offsets from 0 to total."""
    pos = 0
    for e in chunks:
        if isinstance(e, lodge.Gap):
            assert e.from_ == pos and e.to > e.from_
            pos = e.to
        else:
            assert e.offset == pos, (e.offset, pos)
            pos = e.end
    assert pos == total


@sc("attach.resume.gap")
def test_resume_gap(proxied: lodge.Sandbox, kit: Kit,
                    sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="sleep 1; head -c 20000000 /dev/zero | tr '\\0' a;"
                 " echo end", bufferSize=4096)
    kit("cut-after 16384")
    seen: List[Any] = []
    lock = threading.Lock()

    def out(o: lodge.Output) -> None:
        with lock:
            seen.append(o)

    def gap(g: lodge.Gap) -> None:
        with lock:
            seen.append(g)

    # since 0: what the process wrote before the attach counts too
    h = proxied.attach_session(s.id, since=0, on_output=out, on_gap=gap)
    assert h.wait(120).code == 0
    total = sandbox.get_session(s.id).output_bytes
    gaps = [e for e in seen if isinstance(e, lodge.Gap)]
    assert gaps, "no gap reported"
    _tiles(seen, total)
    got = sum(len(e.data) for e in seen if isinstance(e, lodge.Output))
    assert got + sum(g.to - g.from_ for g in gaps) == total


@sc("attach.resume.strict")
def test_resume_strict(proxied: lodge.Sandbox, kit: Kit,
                       sessions: Make) -> None:
    s = sessions(command="sleep 1; head -c 20000000 /dev/zero | tr '\\0' a;"
                 " echo end", bufferSize=4096)
    kit("cut-after 16384")
    h = proxied.attach_session(s.id, since=0, strict=True)
    with pytest.raises(lodge.GapError) as ei:
        h.wait(120)
    assert ei.value.to > ei.value.from_


@sc("attach.front_killed")
def test_front_killed(sandbox: lodge.Sandbox, kit: Kit,
                      sessions: Make) -> None:
    s = sessions(args=["cat"])
    c = Collector()
    live = threading.Event()
    h = sandbox.attach_session(s.id, on_stdout=c.on_stdout,
                               on_live=lambda e: live.set())
    assert live.wait(10)
    kit("kill-front")
    try:
        h.write("after\n")
        eventually(lambda: c.has(b"after\n"), what="the echo, front down")
    finally:
        kit("start-front")
    eventually(lambda: sandbox.health().status == "ok")
    sandbox.signal_session(s.id, "TERM")
    assert h.wait(30) == {"code": None, "signal": "TERM"}
    assert bytes(c.out) == b"after\n"
    assert h.reconnects == 0


@sc("attach.front_killed")
def test_front_killed_resume_on_worker_socket(
        kit: Kit, sandbox: lodge.Sandbox, sessions: Make,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the Unix socket, an attach that must reconnect while the front
    is down does so on the session's own socket."""
    monkeypatch.delenv("LODGE_URL")
    monkeypatch.delenv("LODGE_TOKEN")
    s = sessions(args=["cat"])
    c = Collector()
    with lodge.connect() as local:
        assert local.endpoint.is_unix
        h = local.attach_session(s.id, on_stdout=c.on_stdout)
        h.write("before\n")
        eventually(lambda: c.has(b"before\n"))
        kit("kill-front")
        try:
            conn = h._ws_conn
            assert conn is not None
            conn.close()  # the connection ends: the handle must resume
            eventually(lambda: h.reconnects == 1, what="a reconnect")
            h.write("after\n")
            eventually(lambda: c.has(b"before\nafter\n"))
        finally:
            kit("start-front")
        eventually(lambda: sandbox.health().status == "ok")
        sandbox.signal_session(s.id, "TERM")
        assert h.wait(30).signal == "TERM"
        assert bytes(c.out) == b"before\nafter\n"

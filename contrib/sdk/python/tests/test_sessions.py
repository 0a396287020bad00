"""SCENARIOS.md: Sessions and Attach, through the synchronous API."""
from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable, List

import pytest

import lodge
from conftest import Collector, eventually, pid_gone

sc = pytest.mark.scenario
Make = Callable[..., lodge.Session]


def log_has(sandbox: lodge.Sandbox, ref: str, s: bytes) -> bool:
    return s in sandbox.session_log(ref)


@sc("session.create")
def test_session_create(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions({"command": "bash --norc", "workDir": "/tmp", "pty": True,
                  "cols": 120, "rows": 40})
    assert re.fullmatch("[0-9a-f]{32}", s["id"]) and s.id == s["id"]
    assert s.name and s.name.startswith("t-")
    assert (s.pty, s.cols, s.rows, s.work_dir, s.state) == (
        True, 120, 40, "/tmp", "running")
    assert s.pid > 0


@sc("session.create.args")
def test_session_create_args(sessions: Make) -> None:
    s = sessions(args=["cat"])
    assert (s.state, s.args, s.pty) == ("running", ["cat"], False)


@sc("session.list")
def test_session_list(sandbox: lodge.Sandbox, sessions: Make) -> None:
    a, b = sessions(args=["cat"]), sessions(args=["cat"])
    names = {s.id: s.name for s in sandbox.list_sessions()}
    assert names[a.id] == a.name and names[b.id] == b.name


@sc("session.get")
def test_session_get(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(args=["cat"])
    assert s.name is not None
    assert sandbox.get_session(s.id).id == s.id
    g = sandbox.get_session(s.name)
    assert g.id == s.id and g.state == "running"


@sc("session.log")
@sc("attach.replay.since")
def test_session_log(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="printf abcdef")
    assert sandbox.wait_session(s.id, 30).code == 0
    assert sandbox.session_log_chunk(s.id) == {"data": b"abcdef",
                                                "start": 0, "end": 6}
    assert sandbox.session_log(s.id) == b"abcdef"
    c = sandbox.session_log_chunk(s.id, since=2)
    assert (c.data, c.start, c.end) == (b"cdef", 2, 6)
    c = sandbox.session_log_chunk(s.id, since=100)
    assert (c.data, c.start, c.end) == (b"", 6, 6)
    # attach.replay.since
    events: List[Any] = []
    h = sandbox.attach_session(s.id, since=2,
                               on_stdout=lambda b: events.append(b),
                               on_live=events.append)
    assert h.wait(30).code == 0
    assert events == [b"cdef", lodge.Live(offset=6)]


@sc("session.input")
def test_session_input(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(args=["cat"])
    sandbox.send_input(s.id, "abc\n")
    sandbox.send_input(s.id, b"\x00\x01")
    eventually(lambda: sandbox.session_log(s.id) == b"abc\n\x00\x01")


@sc("session.resize")
def test_session_resize(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="read x; stty size; read y", pty=True)
    sandbox.resize_session(s.id, 100, 30)
    sandbox.send_input(s.id, "\n")
    eventually(lambda: log_has(sandbox, s.id, b"30 100"))
    g = sandbox.get_session(s.id)
    assert (g.cols, g.rows) == (100, 30)


@sc("session.signal")
def test_session_signal(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="exec sleep 600")
    sandbox.signal_session(s.id, "TERM")
    assert sandbox.wait_session(s.id, 30) == {"code": None,
                                              "signal": "TERM"}
    assert sandbox.get_session(s.id).state == "exited"


@sc("session.wait")
def test_session_wait(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="sleep 1; exit 4")
    assert sandbox.wait_session(s.id, 30) == {"code": 4, "signal": None}
    assert sandbox.wait_session(s.id, 5) == {"code": 4, "signal": None}
    t = sessions(command="exec sleep 60")
    with pytest.raises(lodge.LodgeTimeoutError):
        sandbox.wait_session(t.id, 0.3)


@sc("session.delete")
def test_session_delete(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="echo $$; exec sleep 600")
    eventually(lambda: log_has(sandbox, s.id, b"\n"))
    pid = int(sandbox.session_log(s.id))
    sandbox.delete_session(s.id)
    with pytest.raises(lodge.NotFoundError):
        sandbox.get_session(s.id)
    assert pid_gone(pid)


@sc("session.delete.exited")
def test_session_delete_exited(sandbox: lodge.Sandbox,
                               sessions: Make) -> None:
    s = sessions(command="true")
    sandbox.wait_session(s.id, 30)
    sandbox.delete_session(s.id)
    with pytest.raises(lodge.NotFoundError):
        sandbox.delete_session(s.id)


@sc("attach.replay")
def test_attach_replay(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command='echo one; read line; echo "got $line"')
    eventually(lambda: sandbox.session_log(s.id) == b"one\n")
    events: List[Any] = []
    live = threading.Event()

    def on_live(e: lodge.Live) -> None:
        events.append(e)
        live.set()

    h = sandbox.attach_session(s["id"], {
        "onStdout": lambda b: events.append(b), "onLive": on_live})
    assert live.wait(10)
    assert h.live and h.replay_to == 4
    h.write("x\n")
    assert h.wait(30) == {"code": 0, "signal": None}
    assert events == [b"one\n", lodge.Live(offset=4), b"got x\n"]


@sc("attach.exited")
def test_attach_exited(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="echo done; exit 2")
    sandbox.wait_session(s.id, 30)
    c = Collector()
    h = sandbox.attach_session(s.id, on_stdout=c.on_stdout,
                               on_live=c.event)
    assert h.wait(10) == {"code": 2, "signal": None}
    assert c.out == b"done\n" and len(c.events) == 1


@sc("attach.clients")
def test_attach_clients(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(args=["cat"])
    a, b = Collector(), Collector()
    ha = sandbox.attach_session(s.id, on_stdout=a.on_stdout)
    hb = sandbox.attach_session(s.id, on_stdout=b.on_stdout)
    ha.write("hi\n")
    eventually(lambda: a.has(b"hi\n") and b.has(b"hi\n"))
    assert ha.offset == hb.offset == 3
    assert sandbox.get_session(s.id).clients == 2
    ha.detach()
    eventually(lambda: sandbox.get_session(s.id).clients == 1)
    hb.write("b\n")
    eventually(lambda: b.has(b"hi\nb\n"))
    hb.detach()


@sc("attach.detach")
def test_attach_detach(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(args=["cat"])
    h = sandbox.attach_session(s.id)
    h.detach()
    with pytest.raises(lodge.DetachedError):
        h.wait(10)
    assert sandbox.get_session(s.id).state == "running"


@sc("attach.pty")
def test_attach_pty(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="bash --norc", pty=True, cols=120, rows=40)
    c = Collector()
    h = sandbox.attach_session(s.id, cols=120, rows=40,
                               on_stdout=c.on_stdout)
    h.write("echo hello\n")
    eventually(lambda: re.search(rb"[\r\n]hello\r\n", bytes(c.out)))
    h.write("exit\n")
    assert h.wait(30).code == 0


@sc("attach.readonly")
@sc("error.forbidden")
def test_attach_readonly(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(args=["cat"])
    errors: List[lodge.APIError] = []
    three = threading.Event()

    def on_error(e: lodge.APIError) -> None:
        errors.append(e)
        if len(errors) == 3:
            three.set()

    h = sandbox.attach_session(s.id, read_only=True, on_error=on_error)
    h.write("x")
    h.resize(100, 30)
    h.signal("INT")
    assert three.wait(10)
    assert all(isinstance(e, lodge.ForbiddenError) for e in errors)
    assert all(e.code == "forbidden" for e in errors)
    assert not h.done
    assert sandbox.session_log(s.id) == b""
    assert sandbox.get_session(s.id).state == "running"
    h.detach()


@sc("attach.pace")
def test_attach_pace(sandbox: lodge.Sandbox, sessions: Make) -> None:
    size = 32 << 20
    s = sessions(args=["sh", "-c", "read x; head -c %d /dev/zero" % size])
    got = [0]
    slow = threading.Event()
    slow.set()
    live = threading.Event()
    gaps: List[lodge.Gap] = []

    def on_stdout(b: bytes) -> None:
        # the reader thread held here holds the daemon back in turn
        got[0] += len(b)
        if slow.is_set():
            time.sleep(0.02)

    h = sandbox.attach_session(s.id, pace=True, on_stdout=on_stdout,
                               on_live=lambda e: live.set(),
                               on_gap=gaps.append)
    assert live.wait(10)
    h.write("go\n")
    time.sleep(1.5)
    # what lodged read beyond what this reader took: a quarter of the
    # ring, a read, and the sockets' buffers, not the whole 32 MiB
    ahead = sandbox.get_session(s.id).output_bytes - got[0]
    assert ahead < 12 << 20, "the process ran %d bytes ahead" % ahead
    slow.clear()
    assert h.wait(60) == {"code": 0, "signal": None}
    assert gaps == []
    assert got[0] == size


@sc("attach.pace.readonly")
def test_attach_pace_readonly(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(args=["cat"])
    with pytest.raises(lodge.BadRequestError) as e:
        sandbox.attach_session(s.id, pace=True, read_only=True,
                               resume=False)
    assert e.value.status == 400 and "'pace'" in e.value.message
    assert sandbox.get_session(s.id).state == "running"


@sc("attach.eof")
def test_attach_eof(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(args=["cat"])
    c = Collector()
    h = sandbox.attach_session(s.id, on_stdout=c.on_stdout)
    h.write("z\n")
    h.end()
    assert h.wait(30).code == 0 and c.out == b"z\n"

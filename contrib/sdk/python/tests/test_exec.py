"""SCENARIOS.md: Connect and Exec, through the synchronous API."""
from __future__ import annotations

import os
import pwd

import pytest

import lodge

sc = pytest.mark.scenario


@sc("connect.env")
def test_connect_env(sandbox: lodge.Sandbox) -> None:
    h = sandbox.health()
    assert h.status == "ok" and h["status"] == "ok"
    assert isinstance(h.version, str) and h.version
    assert isinstance(h.sessions, int) and h.sessions >= 0


@sc("connect.explicit")
def test_connect_explicit(monkeypatch: pytest.MonkeyPatch) -> None:
    url, token = os.environ["LODGE_URL"], os.environ["LODGE_TOKEN"]
    monkeypatch.delenv("LODGE_URL")
    monkeypatch.delenv("LODGE_TOKEN")
    with lodge.connect(url, token) as sb:
        assert sb.health().status == "ok"


@sc("connect.unix")
def test_connect_unix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LODGE_URL")
    monkeypatch.delenv("LODGE_TOKEN")
    with lodge.connect() as sb:
        assert sb.endpoint.unix_path == os.path.join(
            os.environ["LODGE_RUNDIR"], "lodged.sock")
        assert sb.health().status == "ok"
        assert sb.exec_command("echo unix").stdout == "unix\n"
        out = bytearray()
        h = sb.exec_stream(command="echo unix", on_stdout=out.extend)
        assert h.wait(30).code == 0
        assert bytes(out) == b"unix\n"


@sc("exec.basic")
def test_exec_basic(sandbox: lodge.Sandbox) -> None:
    r = sandbox.exec_command("echo hello")
    assert r["stdout"] == r.stdout == "hello\n"
    assert r.stderr == ""
    assert r["exit_code"] == r.exit_code == 0
    assert r.signal is None and r.timed_out is False
    assert r.truncated is False
    assert isinstance(r.duration_ms, int) and r.duration_ms >= 0


@sc("exec.exit_code")
def test_exec_exit_code(sandbox: lodge.Sandbox) -> None:
    r = sandbox.exec_command("echo out; echo err >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code, r.signal) == (
        "out\n", "err\n", 3, None)


@sc("exec.signal")
def test_exec_signal(sandbox: lodge.Sandbox) -> None:
    r = sandbox.exec_command("kill -TERM $$")
    assert (r.exit_code, r.signal) == (None, "TERM")
    r = sandbox.exec_command("kill -KILL $$")
    assert (r.exit_code, r.signal) == (None, "KILL")


@sc("exec.timeout")
def test_exec_timeout(sandbox: lodge.Sandbox) -> None:
    r = sandbox.exec_command("sleep 30", timeout_seconds=1,
                             request_timeout=10)
    assert r.timed_out is True
    assert (r.exit_code, r.signal) == (None, "TERM")


@sc("exec.timeout.fraction")
def test_exec_timeout_fraction(sandbox: lodge.Sandbox) -> None:
    r = sandbox.exec_command(["sleep", "30"], timeout_seconds=0.5,
                             request_timeout=10)
    assert r.timed_out is True and r.signal == "TERM"


@sc("exec.spawn_failed")
@sc("error.spawn_failed")
def test_exec_spawn_failed(sandbox: lodge.Sandbox,
                           sessions: object) -> None:
    with pytest.raises(lodge.SpawnFailedError) as ei:
        sandbox.exec_command("true", workdir="/nonexistent")
    assert ei.value.status == 422 and ei.value.code == "spawn_failed"
    assert "nonexistent" in ei.value.message
    with pytest.raises(lodge.SpawnFailedError):
        sandbox.exec_command(["/nonexistent/program"])
    with pytest.raises(lodge.SpawnFailedError) as ei:
        sandbox.create_session(command="true", workDir="/nonexistent")
    assert ei.value.status == 422


@sc("exec.base64")
def test_exec_base64(sandbox: lodge.Sandbox) -> None:
    r = sandbox.exec_command(r"printf '\377\000A\n'", encoding="base64")
    assert r.stdout == "/wBBCg=="
    assert r.stdout_bytes == b"\xff\x00A\n"
    r = sandbox.exec_command(r"printf '\377\000A\n'")
    assert r.stdout == "\ufffd\x00A\n"


@sc("exec.workdir_env_user")
def test_exec_workdir_env_user(sandbox: lodge.Sandbox) -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    r = sandbox.exec_command('pwd; echo "$FOO"; id -un', workdir="/tmp",
                             env={"FOO": "bar"}, user=me)
    assert (r.stdout, r.exit_code) == ("/tmp\nbar\n%s\n" % me, 0)
    with pytest.raises(lodge.SpawnFailedError):
        sandbox.exec_command("true", user="no-such-user-xyz")


@sc("exec.stdin")
def test_exec_stdin(sandbox: lodge.Sandbox) -> None:
    assert sandbox.exec_command(["cat"], stdin="abc").stdout == "abc"


@sc("exec.truncated")
def test_exec_truncated(sandbox: lodge.Sandbox) -> None:
    r = sandbox.exec_command("head -c 100000 /dev/zero", max_output_bytes=10)
    assert r.truncated is True and r.stdout == "\x00" * 10
    assert r.exit_code == 0

"""SCENARIOS.md: Errors, each code its typed error."""
from __future__ import annotations

import os
from typing import Callable, List

import pytest

import lodge
from lodge.errors import error_from_reply

sc = pytest.mark.scenario
Make = Callable[..., lodge.Session]


@sc("error.bad_request")
def test_bad_request(sandbox: lodge.Sandbox) -> None:
    with pytest.raises(lodge.BadRequestError) as ei:
        sandbox.create_session(command="true", cols=0)
    assert ei.value.status == 400 and ei.value.code == "bad_request"
    assert "cols" in ei.value.message
    with pytest.raises(lodge.BadRequestError):
        sandbox.get_session("a b")
    # an exec stream whose start the daemon refuses
    with pytest.raises(lodge.BadRequestError) as ei:
        sandbox.exec_stream(command="true", tty=True, cols=0)
    assert ei.value.status is None and "cols" in ei.value.message


@sc("error.unauthorized")
def test_unauthorized() -> None:
    bad = lodge.connect(os.environ["LODGE_URL"], "wrong-token-0123456789")
    with pytest.raises(lodge.UnauthorizedError) as ei:
        bad.health()
    assert ei.value.status == 401 and ei.value.message
    with pytest.raises(lodge.UnauthorizedError) as ei:
        bad.attach_session("anything")
    assert ei.value.status == 401
    with pytest.raises(lodge.UnauthorizedError):
        bad.exec_stream(command="true")


@sc("error.not_found")
def test_not_found(sandbox: lodge.Sandbox) -> None:
    calls: List[Callable[[], object]] = [
             lambda: sandbox.get_session("no-such-session"),
             lambda: sandbox.delete_session("no-such-session"),
             lambda: sandbox.session_log("no-such-session"),
             lambda: sandbox.attach_session("no-such-session")]
    for call in calls:
        with pytest.raises(lodge.NotFoundError) as ei:
            call()
        assert ei.value.status == 404 and ei.value.code == "not_found"


@sc("error.conflict")
def test_conflict(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(args=["cat"])
    with pytest.raises(lodge.ConflictError) as ei:
        sandbox.create_session(name=s.name, args=["cat"])
    assert ei.value.status == 409
    t = sessions(command="true")
    sandbox.wait_session(t.id, 30)
    with pytest.raises(lodge.ConflictError):
        sandbox.send_input(t.id, "x")


@sc("error.payload_too_large")
def test_payload_too_large(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="exec sleep 600")
    with pytest.raises(lodge.PayloadTooLargeError) as ei:
        sandbox.send_input(s.id, "x" * (9 << 20))
    assert ei.value.status == 413
    assert sandbox.health().status == "ok"  # the client goes on


@sc("error.unavailable")
def test_unavailable(sandbox: lodge.Sandbox, sessions: Make) -> None:
    s = sessions(command="exec sleep 600")
    sandbox.send_input(s.id, "x" * (3 << 20))
    with pytest.raises(lodge.UnavailableError) as ei:
        sandbox.send_input(s.id, "x" * (2 << 20))
    assert ei.value.status == 503


@sc("error.unknown_code")
def test_unknown_code() -> None:
    e = error_from_reply(418, b'{"error":{"code":"teapot","message":"m"}}')
    assert type(e) is lodge.APIError
    assert (e.code, e.status, e.message) == ("teapot", 418, "m")
    e = error_from_reply(502, b"not json")
    assert isinstance(e, lodge.APIError) and e.status == 502

"""SCENARIOS.md: Message vectors (tests/sdk/vectors/*.json): the SDK's
encoders produce the canonical bytes; its decoders read every vector."""
from __future__ import annotations

import glob
import json
import os
from typing import Any, Dict, List, Tuple

import pytest

import lodge
from conftest import KIT_DIR
from lodge import _codec
from lodge._core import AttachCore, StreamCore

sc = pytest.mark.scenario


def _vectors(direction: str, canonical_only: bool = False
             ) -> List[Tuple[str, Dict[str, Any]]]:
    out = []
    for path in sorted(glob.glob(os.path.join(KIT_DIR, "vectors",
                                              "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        if direction not in ("*", doc["direction"]):
            continue
        for v in doc["vectors"]:
            if canonical_only and not v["canonical"]:
                continue
            out.append(("%s.%s" % (doc["type"], v["name"]), v))
    assert out, "no vectors found under %s" % KIT_DIR
    return out


def from_json(v: Any) -> Any:
    if isinstance(v, dict):
        if set(v) == {"bin"}:
            return bytes.fromhex(v["bin"])
        return {k: from_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_json(x) for x in v]
    return v


def encode(m: Dict[str, Any]) -> bytes:
    """A client message through the SDK's own encoders."""
    t = m["type"]
    if t == "stdin":
        frames = list(_codec.split(m["data"], 1 << 20))
        return frames[0] if frames else _codec.stdin(b"")
    if t == "eof":
        return _codec.eof()
    if t == "resize":
        return _codec.resize(m["cols"], m["rows"])
    if t == "signal":
        return _codec.signal(m["signal"])
    if t == "start":
        return _codec.start({k: v for k, v in m.items() if k != "type"})
    raise AssertionError("no encoder for %s" % t)


@sc("vectors.encode")
@pytest.mark.parametrize("name,v", _vectors("client", True))
def test_encode(name: str, v: Dict[str, Any]) -> None:
    assert encode(from_json(v["message"])).hex() == v["hex"], name


@sc("vectors.decode")
@pytest.mark.parametrize("name,v", _vectors("*"))
def test_decode(name: str, v: Dict[str, Any]) -> None:
    raw = bytes.fromhex(v["hex"])
    msg = _codec.unpack(raw)
    want = from_json(v["message"])
    assert msg == want
    # and the typed view of each server message
    t = want["type"]
    if t in ("stdout", "stderr"):
        (ev,) = StreamCore().feed(msg)
        assert ev == {"stream": t, "data": want["data"],
                      "offset": want["offset"]}
    elif t == "exit":
        (ev,) = StreamCore().feed(msg)
        assert ev == {"code": want["exitCode"], "signal": want["signal"]}
        assert ev.timed_out == want.get("timedOut", False)
    elif t == "error":
        core = StreamCore()
        core.pid = 1
        (err,) = core.feed(msg)
        assert isinstance(err, lodge.APIError)
        assert (err.code, err.message) == (want["code"], want["message"])
    elif t == "attached":
        a = AttachCore(None, False)
        assert a.feed(msg) == []
        assert a.session is not None
        assert a.session.id == want["session"]["id"]
        assert a.session.work_dir == want["session"]["workDir"]
        assert a.next == want["replayFrom"]
        assert a.replay_to == want["replayTo"]
        lim = want.get("limits", {}).get("maxMessageBytes")
        assert a.max_message_bytes == (lim or 1 << 20)
    elif t == "gap":
        (g,) = AttachCore(None, False).feed(msg)
        assert g == {"from_": want["from"], "to": want["to"]}
    elif t == "live":
        assert AttachCore(5, False).feed(msg) == [lodge.Live(offset=5)]
    elif t == "started":
        core = StreamCore()
        assert core.feed(msg) == []
        assert core.pid == want["pid"]

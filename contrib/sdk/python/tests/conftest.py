"""Fixtures for the suite, which runs under tests/sdk/with-lodged: a real
lodged, LODGE_URL and LODGE_TOKEN, and the kit's control connection."""
from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from typing import Any, Callable, Iterator, List

import pytest

import lodge

KIT_DIR = os.environ.get("LODGE_SDK_KIT") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "..", "tests", "sdk")


def pytest_configure(config: Any) -> None:
    if "LODGE_URL" not in os.environ:
        raise pytest.UsageError("run the suite under tests/sdk/with-lodged")


class Kit:
    """tests/sdk/with-lodged's control connection."""

    def __init__(self) -> None:
        host, port = os.environ["LODGE_KIT_CONTROL"].rsplit(":", 1)
        self._sock = socket.create_connection((host, int(port)))
        self._f = self._sock.makefile("rw", buffering=1)
        self._lock = threading.Lock()

    def __call__(self, line: str) -> str:
        with self._lock:
            self._f.write(line + "\n")
            self._f.flush()
            reply = self._f.readline().strip()
        assert reply.startswith("ok"), "kit %s: %s" % (line, reply)
        return reply[2:].strip()

    def proxy_url(self) -> str:
        return "http://127.0.0.1:%s" % self("proxy")


@pytest.fixture(scope="session")
def kit() -> Kit:
    return Kit()


@pytest.fixture(scope="session")
def sandbox() -> Iterator[lodge.Sandbox]:
    sb = lodge.connect()
    yield sb
    sb.close()


@pytest.fixture
def proxied(kit: Kit) -> Iterator[lodge.Sandbox]:
    """A client whose connections go through the kit's cutting proxy."""
    sb = lodge.connect(kit.proxy_url(), os.environ["LODGE_TOKEN"])
    yield sb
    kit("cut-after 0")
    sb.close()


@pytest.fixture
def sessions(sandbox: lodge.Sandbox) -> Iterator[Callable[..., lodge.Session]]:
    """Create sessions with unique names; delete them afterwards."""
    made: List[str] = []

    def create(options: Any = None, **kw: Any) -> lodge.Session:
        o = dict(options or {})
        o.update(kw)
        o.setdefault("name", "t-" + uuid.uuid4().hex[:12])
        s = sandbox.create_session(o)
        made.append(s.id)
        return s

    yield create
    for sid in made:
        try:
            sandbox.delete_session(sid)
        except lodge.NotFoundError:
            pass


def eventually(pred: Callable[[], Any], timeout: float = 10.0,
               what: str = "condition") -> Any:
    """Poll pred until it is true; fail after a generous timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.05)


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie is gone too, for our purpose
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:  # gone while we looked
        return True


class Collector:
    """Collects a stream's output from its callbacks, thread-safely."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.out = bytearray()
        self.err = bytearray()
        self.events: List[Any] = []

    def on_stdout(self, b: bytes) -> None:
        with self.lock:
            self.out += b

    def on_stderr(self, b: bytes) -> None:
        with self.lock:
            self.err += b

    def event(self, e: Any) -> None:
        with self.lock:
            self.events.append(e)

    def has(self, s: bytes) -> bool:
        with self.lock:
            return s in self.out

"""Results and events: typed dataclasses that are also read-only mappings,
so that ``result['stdout']`` (the seeds' spelling) and ``result.stdout``
both work, and ``print(result)`` shows a dict."""
from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Union

__all__ = ["Record", "ExecResult", "ExitStatus", "Session", "Health",
           "LogChunk", "Output", "Gap", "Live", "Reconnected", "Event"]


class Record(Mapping):  # type: ignore[type-arg]
    """A dataclass that reads as a mapping of its fields."""

    def _names(self) -> List[str]:
        return [f.name for f in dataclasses.fields(self)  # type: ignore
                if f.repr]

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def to_dict(self) -> Dict[str, Any]:
        """A plain dict of the fields."""
        return {k: getattr(self, k) for k in self._names()}

    def __repr__(self) -> str:
        return repr(self.to_dict())


@dataclass(frozen=True, eq=False, repr=False)
class ExecResult(Record):
    """The result of :meth:`Sandbox.exec_command`.

    ``stdout`` and ``stderr`` are text for the default encoding (each
    ill-formed UTF-8 sequence replaced by U+FFFD), or base64 text with
    ``encoding='base64'``; ``stdout_bytes`` and ``stderr_bytes`` give the
    bytes either way."""

    stdout: str
    stderr: str
    exit_code: Optional[int]
    signal: Optional[str]
    timed_out: bool
    truncated: bool
    duration_ms: int
    encoding: str = dataclasses.field(default="utf8", repr=False)

    def _bytes(self, s: str) -> bytes:
        if self.encoding == "base64":
            return base64.b64decode(s)
        return s.encode("utf-8")

    @property
    def stdout_bytes(self) -> bytes:
        return self._bytes(self.stdout)

    @property
    def stderr_bytes(self) -> bytes:
        return self._bytes(self.stderr)

    @classmethod
    def from_json(cls, j: Dict[str, Any], encoding: str) -> "ExecResult":
        return cls(stdout=j["stdout"], stderr=j["stderr"],
                   exit_code=j.get("exitCode"), signal=j.get("signal"),
                   timed_out=bool(j.get("timedOut", False)),
                   truncated=bool(j.get("truncated", False)),
                   duration_ms=int(j.get("durationMs", 0)),
                   encoding=encoding)


@dataclass(frozen=True, eq=False, repr=False)
class ExitStatus(Record):
    """How a process ended: ``code`` (``None`` when a signal ended it) and
    ``signal`` (its name, or ``None``).  An exec stream's exit also says
    whether its ``timeout_seconds`` ran out (``timed_out``, not a key)."""

    code: Optional[int]
    signal: Optional[str]
    timed_out: bool = dataclasses.field(default=False, repr=False)


@dataclass(frozen=True, eq=False, repr=False)
class Session(Record):
    """A session object (lodge-protocol.7, THE SESSION OBJECT)."""

    id: str
    name: Optional[str]
    command: Optional[str]
    args: Optional[List[str]]
    pid: int
    pty: bool
    cols: int
    rows: int
    work_dir: str
    user: str
    created_at: str
    state: str
    exit_code: Optional[int]
    signal: Optional[str]
    clients: int
    buffer_size: int
    output_bytes: int

    @property
    def running(self) -> bool:
        return self.state == "running"

    @classmethod
    def from_json(cls, j: Dict[str, Any]) -> "Session":
        return cls(id=j["id"], name=j.get("name"), command=j.get("command"),
                   args=j.get("args"), pid=int(j.get("pid", 0)),
                   pty=bool(j.get("pty", False)), cols=int(j.get("cols", 0)),
                   rows=int(j.get("rows", 0)),
                   work_dir=j.get("workDir", ""), user=j.get("user", ""),
                   created_at=j.get("createdAt", ""),
                   state=j.get("state", ""), exit_code=j.get("exitCode"),
                   signal=j.get("signal"), clients=int(j.get("clients", 0)),
                   buffer_size=int(j.get("bufferSize", 0)),
                   output_bytes=int(j.get("outputBytes", 0)))


@dataclass(frozen=True, eq=False, repr=False)
class Health(Record):
    """GET /v1/health: ``status`` is ``"ok"``."""

    status: str
    version: str
    sessions: int
    protocol: Optional[int] = None
    limits: Optional[Dict[str, Any]] = None


@dataclass(frozen=True, eq=False, repr=False)
class LogChunk(Record):
    """A session's log from ``start`` (the offset of its first byte) to
    ``end`` (the session's output_bytes then)."""

    data: bytes
    start: int
    end: int


@dataclass(frozen=True, eq=False, repr=False)
class Output(Record):
    """Output of a stream: ``stream`` is ``"stdout"`` or ``"stderr"``;
    ``offset`` is the position of ``data``'s first byte."""

    stream: str
    data: bytes
    offset: int

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


@dataclass(frozen=True, eq=False, repr=False)
class Gap(Record):
    """Output from ``from_`` to ``to`` was lost (the ring overwrote it)."""

    from_: int
    to: int


@dataclass(frozen=True, eq=False, repr=False)
class Live(Record):
    """The replay of an attach ended at ``offset``: what follows is live."""

    offset: int


@dataclass(frozen=True, eq=False, repr=False)
class Reconnected(Record):
    """An attach reconnected and resumed at ``since``."""

    since: int
    attempts: int


Event = Union[Output, Gap, Live, Reconnected, ExitStatus]

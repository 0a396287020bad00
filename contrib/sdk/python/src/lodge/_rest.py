"""The REST calls of lodge-protocol.7 as data: method, path, body and how
to read the reply, shared by the synchronous and the asyncio clients,
which only carry them."""
from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Generic, List, Mapping, Optional,
                    Sequence, TypeVar, Union)

from . import _options
from ._http import Reply
from ._types import ExecResult, Health, LogChunk, Session

T = TypeVar("T")
Ref = Union[str, Session, Mapping[str, Any]]
Data = Union[str, bytes, bytearray, memoryview]

#: a Call's timeout when it takes the client's request_timeout
DEFAULT_TIMEOUT = -1.0


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    body: Optional[Mapping[str, Any]]
    parse: Callable[[Reply], T]
    timeout: Optional[float] = DEFAULT_TIMEOUT


def ref(r: Ref) -> str:
    """A session's id or name, as a path segment."""
    if isinstance(r, Mapping):
        r = str(r["id"])
    return urllib.parse.quote(str(r), safe="")


def _none(_: Reply) -> None:
    return None


def _session(r: Reply) -> Session:
    return Session.from_json(r.json())


def _health(r: Reply) -> Health:
    j = r.json()
    return Health(status=j.get("status", ""), version=j.get("version", ""),
                  sessions=int(j.get("sessions", 0)),
                  protocol=j.get("protocol"), limits=j.get("limits"))


def _sessions(r: Reply) -> List[Session]:
    return [Session.from_json(s) for s in r.json().get("sessions", [])]


def _log(r: Reply) -> LogChunk:
    return LogChunk(data=r.body,
                    start=int(r.headers.get("lodge-log-start", 0)),
                    end=int(r.headers.get("lodge-log-end", 0)))


def health() -> Call[Health]:
    return Call("GET", "/v1/health", None, _health)


def exec_command(command: Union[str, Sequence[str]], o: Mapping[str, Any],
                 request_timeout: Optional[float]) -> Call[ExecResult]:
    enc = "base64" if o.get("encoding") == "base64" else "utf8"
    return Call("POST", "/v1/exec", _options.exec_body(command, o),
                lambda r: ExecResult.from_json(r.json(), enc),
                request_timeout)


def create_session(o: Dict[str, Any]) -> Call[Session]:
    return Call("POST", "/v1/sessions", _options.session_body(o), _session)


def list_sessions() -> Call[List[Session]]:
    return Call("GET", "/v1/sessions", None, _sessions)


def get_session(r: Ref) -> Call[Session]:
    return Call("GET", "/v1/sessions/" + ref(r), None, _session)


def delete_session(r: Ref) -> Call[None]:
    return Call("DELETE", "/v1/sessions/" + ref(r), None, _none)


def signal_session(r: Ref, signal: Union[str, int]) -> Call[None]:
    return Call("POST", "/v1/sessions/%s/signal" % ref(r),
                {"signal": signal}, _none)


def send_input(r: Ref, data: Data) -> Call[None]:
    body: Dict[str, Any]
    if isinstance(data, str):
        body = {"data": data}
    else:
        body = {"dataBase64": base64.b64encode(bytes(data)).decode()}
    return Call("POST", "/v1/sessions/%s/input" % ref(r), body, _none)


def resize_session(r: Ref, cols: int, rows: int) -> Call[None]:
    return Call("POST", "/v1/sessions/%s/resize" % ref(r),
                {"cols": cols, "rows": rows}, _none)


def session_log(r: Ref, since: Optional[int]) -> Call[LogChunk]:
    path = "/v1/sessions/%s/log" % ref(r)
    if since is not None:
        path += "?since=%d" % since
    return Call("GET", path, None, _log)

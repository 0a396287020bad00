"""Opening a WebSocket to lodged with the websockets package, for both the
synchronous and the asyncio API, and turning a refused upgrade into the
typed error of its JSON reply."""
from __future__ import annotations

import inspect
import os
from typing import Any, Callable, Dict, Optional, Set

from websockets.exceptions import InvalidHandshake, InvalidStatus

from ._endpoint import Endpoint
from .errors import APIError, LodgeConnectionError, error_from_reply

#: the largest server message accepted: the daemon sends at most 256 KiB
#: of output and a small header (lodge-protocol.7); websockets' default of
#: 1 MiB would do, this leaves room for a session object with long args
MAX_SERVER_MESSAGE = 16 << 20

#: frames queued by websockets before it stops reading the socket: with
#: 256 KiB messages, 4 MiB in flight at most, whatever the output size
MAX_QUEUE = 16


def options(endpoint: Endpoint, connect_timeout: Optional[float],
            connect: Callable[..., Any]) -> Dict[str, Any]:
    """The keyword arguments of websockets' connect, as far as the
    installed version has them (proxy support came in 15, and 17.1 wants
    legacy=True for a connection not used as a context manager)."""
    kw: Dict[str, Any] = dict(
        additional_headers=endpoint.headers(),
        max_size=MAX_SERVER_MESSAGE,
        max_queue=MAX_QUEUE,
        compression=None,
        open_timeout=connect_timeout,
        close_timeout=5,
        user_agent_header="lodge-sdk-python",
    )
    params = _params(connect)
    if "proxy" in params and not endpoint.is_unix:
        kw["proxy"] = None  # lodged is reached directly, never by a proxy
    if "legacy" in params:
        kw["legacy"] = True
    return kw


def _params(fn: Callable[..., Any]) -> Set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def refused(e: BaseException, what: str) -> Exception:
    """The error to raise for a failed WebSocket open."""
    if isinstance(e, InvalidStatus):
        r = e.response
        return error_from_reply(r.status_code, bytes(r.body or b""))
    if isinstance(e, (InvalidHandshake, OSError, EOFError)):
        return LodgeConnectionError("%s: %s" % (what, e))
    if isinstance(e, TimeoutError):
        return LodgeConnectionError("%s: no answer in time" % what)
    return e if isinstance(e, Exception) else LodgeConnectionError(str(e))


def terminal(e: BaseException) -> bool:
    """A refusal that no reconnect can fix."""
    return isinstance(e, APIError) and e.code in (
        "not_found", "unauthorized", "forbidden", "bad_request")


def worker_socket(endpoint: Endpoint, session_id: str) -> Optional[str]:
    """A session's own socket beside the front's, which serves attach while
    the front is down (lodge-protocol.7, UNIX SOCKETS)."""
    if endpoint.unix_path is None:
        return None
    path = os.path.join(os.path.dirname(endpoint.unix_path), "sessions",
                        session_id + ".sock")
    return path if os.path.exists(path) else None

"""The errors of the lodge SDK: one class per protocol error code.

Every error the daemon reports (an HTTP error reply, a refused WebSocket
upgrade, or an ``error`` message on an open WebSocket) is raised as the
:class:`APIError` subclass of its code, carrying the code, the HTTP status
(``None`` for an error message on a WebSocket) and the daemon's message.
An unknown code is a plain :class:`APIError`, handled like ``internal``.
"""
from __future__ import annotations

import json
from typing import Dict, Optional, Type

__all__ = [
    "LodgeError", "APIError", "BadRequestError", "UnauthorizedError",
    "ForbiddenError", "NotFoundError", "MethodNotAllowedError",
    "RequestTimeoutError", "ConflictError", "PayloadTooLargeError",
    "SpawnFailedError", "HeaderTooLargeError", "InternalError",
    "UnavailableError", "ConnectionLostError", "LodgeConnectionError",
    "LodgeTimeoutError", "GapError", "DetachedError",
]


class LodgeError(Exception):
    """The base of every error raised by this SDK."""


class APIError(LodgeError):
    """The daemon refused a request or reported an error.

    :ivar code: the protocol's error code, such as ``"not_found"``
    :ivar status: the HTTP status, or ``None`` for a WebSocket message
    :ivar message: the daemon's message, for people
    """

    code: str = "internal"
    status_default: Optional[int] = None

    def __init__(self, message: str, *, code: Optional[str] = None,
                 status: Optional[int] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.status = status
        self.message = message

    def __str__(self) -> str:
        where = " (HTTP %d)" % self.status if self.status is not None else ""
        return "%s%s: %s" % (self.code, where, self.message)


class BadRequestError(APIError):
    """400 ``bad_request``: a malformed request, field or query."""
    code = "bad_request"


class UnauthorizedError(APIError):
    """401 ``unauthorized``: a missing or wrong token."""
    code = "unauthorized"


class ForbiddenError(APIError):
    """403 ``forbidden``: the caller may not do this (a read-only client,
    another user's session)."""
    code = "forbidden"


class NotFoundError(APIError):
    """404 ``not_found``: no such session or path."""
    code = "not_found"


class MethodNotAllowedError(APIError):
    """405 ``method_not_allowed``."""
    code = "method_not_allowed"


class RequestTimeoutError(APIError):
    """408 ``request_timeout``: the request was sent too slowly."""
    code = "request_timeout"


class ConflictError(APIError):
    """409 ``conflict``: the name is taken, or the process has exited or
    its input is closed."""
    code = "conflict"


class PayloadTooLargeError(APIError):
    """413 ``payload_too_large``: the request body is over the limit."""
    code = "payload_too_large"


class SpawnFailedError(APIError):
    """422 ``spawn_failed``: the process could not be started (never a
    non-zero exit code)."""
    code = "spawn_failed"


class HeaderTooLargeError(APIError):
    """431 ``header_too_large``."""
    code = "header_too_large"


class InternalError(APIError):
    """500 ``internal``: a fault in lodged."""
    code = "internal"


class UnavailableError(APIError):
    """503 ``unavailable``: a limit of sessions, clients, queued input or
    memory was reached, or a worker cannot be reached."""
    code = "unavailable"


class LodgeConnectionError(LodgeError, ConnectionError):
    """The daemon could not be reached, or answered outside the protocol."""


class ConnectionLostError(LodgeConnectionError):
    """A stream ended without an ``exit`` message: the connection failed.

    This is never a success and never exit code 0.  An exec stream's
    process is killed by the daemon when its connection drops; an attach
    raises this only once resuming has failed."""


class LodgeTimeoutError(LodgeError, TimeoutError):
    """A client-side timeout (connect, request or wait) ran out.

    Distinct from the server-side ``timeout_seconds`` of a command, which
    ends the command and reports ``timed_out`` in its result."""


class GapError(LodgeError):
    """An attach in strict mode lost output: the ring no longer held the
    bytes from ``from_`` to ``to``."""

    def __init__(self, from_: int, to: int) -> None:
        super().__init__("output lost between offsets %d and %d"
                         % (from_, to))
        self.from_ = from_
        self.to = to


class DetachedError(LodgeError):
    """The attach was detached by the caller before the process exited."""


_BY_CODE: Dict[str, Type[APIError]] = {
    c.code: c for c in (
        BadRequestError, UnauthorizedError, ForbiddenError, NotFoundError,
        MethodNotAllowedError, RequestTimeoutError, ConflictError,
        PayloadTooLargeError, SpawnFailedError, HeaderTooLargeError,
        InternalError, UnavailableError)
}


def error_for(code: str, message: str,
              status: Optional[int] = None) -> APIError:
    """The typed error of a protocol error code."""
    cls = _BY_CODE.get(code, APIError)
    return cls(message, code=code, status=status)


def error_from_reply(status: int, body: bytes) -> APIError:
    """The typed error of an HTTP error reply and its JSON body."""
    code, message = "internal", ""
    try:
        err = json.loads(body.decode("utf-8"))["error"]
        code, message = str(err["code"]), str(err["message"])
    except (ValueError, KeyError, TypeError):
        message = body.decode("utf-8", "replace") or "HTTP %d" % status
    return error_for(code, message, status)

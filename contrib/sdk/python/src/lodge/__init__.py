"""lodge: the Python client of lodged.

    import lodge
    sandbox = lodge.connect()
    print(sandbox.exec_command('echo hello')['stdout'])

The synchronous API is here; the asyncio API, with the same calls as
coroutines and async iterators over output, is :mod:`lodge.aio`.
"""
from ._sync import AttachHandle, ExecStream, Sandbox, connect
from ._types import (ExecResult, ExitStatus, Gap, Health, Live, LogChunk,
                     Output, Reconnected, Session)
from .errors import (APIError, BadRequestError, ConflictError,
                     ConnectionLostError, DetachedError, ForbiddenError,
                     GapError, HeaderTooLargeError, InternalError,
                     LodgeConnectionError, LodgeError, LodgeTimeoutError,
                     MethodNotAllowedError, NotFoundError,
                     PayloadTooLargeError, RequestTimeoutError,
                     SpawnFailedError, UnauthorizedError, UnavailableError)

__version__ = "0.1.0"

__all__ = [
    "connect", "Sandbox", "ExecStream", "AttachHandle",
    "ExecResult", "ExitStatus", "Session", "Health", "LogChunk", "Output",
    "Gap", "Live", "Reconnected",
    "LodgeError", "APIError", "BadRequestError", "UnauthorizedError",
    "ForbiddenError", "NotFoundError", "MethodNotAllowedError",
    "RequestTimeoutError", "ConflictError", "PayloadTooLargeError",
    "SpawnFailedError", "HeaderTooLargeError", "InternalError",
    "UnavailableError", "ConnectionLostError", "LodgeConnectionError",
    "LodgeTimeoutError", "GapError", "DetachedError",
]

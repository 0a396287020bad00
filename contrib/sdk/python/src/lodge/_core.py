"""What an exec stream and an attach do with the server's messages, apart
from any I/O, so that the synchronous and the asyncio APIs behave alike.

Each ``feed`` takes one decoded server message and returns the events to
deliver, in order; it raises the error that ends the stream."""
from __future__ import annotations

import codecs
import random
from typing import Any, Callable, Dict, List, Mapping, Optional

from . import _codec
from ._types import (Event, ExitStatus, Gap, Live, Output, Session)
from .errors import APIError, GapError, LodgeConnectionError, error_for

Callback = Callable[..., Any]


class TextDecoders:
    """One incremental UTF-8 decoder per stream, so that a character split
    across messages is never mangled."""

    def __init__(self) -> None:
        self._d: Dict[str, codecs.IncrementalDecoder] = {}

    def decode(self, stream: str, data: bytes, final: bool = False) -> str:
        d = self._d.get(stream)
        if d is None:
            d = self._d[stream] = codecs.getincrementaldecoder("utf-8")(
                "replace")
        return d.decode(data, final)

    def flush(self) -> Dict[str, str]:
        return {s: d.decode(b"", True) for s, d in self._d.items()}


def exit_status(msg: Mapping[str, Any]) -> ExitStatus:
    code = msg.get("exitCode")
    sig = msg.get("signal")
    return ExitStatus(code=code if isinstance(code, int) else None,
                      signal=sig if isinstance(sig, str) else None,
                      timed_out=bool(msg.get("timedOut", False)))


def output(msg: Mapping[str, Any]) -> Output:
    data = msg.get("data")
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, bytes):
        raise LodgeConnectionError("the server sent output without data")
    return Output(stream=msg["type"], data=data,
                  offset=_codec.offset_of(msg, "offset"))


class StreamCore:
    """An exec stream: started, output, exit."""

    def __init__(self) -> None:
        self.pid: Optional[int] = None
        self.max_message_bytes = _codec.DEFAULT_MAX_MESSAGE_BYTES
        self.exit: Optional[ExitStatus] = None

    def feed(self, msg: Dict[str, Any]) -> List[Any]:
        """Events, or an APIError (not raised) for a non-fatal error."""
        t = msg["type"]
        if t in ("stdout", "stderr"):
            return [output(msg)]
        if t == "started":
            pid = msg.get("pid")
            self.pid = pid if isinstance(pid, int) else None
            self.max_message_bytes = (_codec.limit(msg)
                                      or self.max_message_bytes)
            return []
        if t == "exit":
            self.exit = exit_status(msg)
            return [self.exit]
        if t == "error":
            err = error_for(str(msg.get("code")), str(msg.get("message")))
            if self.pid is None:
                raise err  # the start failed
            return [err]
        return []  # a type this client does not know: ignored


class AttachCore:
    """An attach, across reconnections: tracks the next offset it needs,
    drops what it has already delivered, reports gaps."""

    def __init__(self, since: Optional[int], strict: bool) -> None:
        self.next: Optional[int] = since
        self.strict = strict
        self.session: Optional[Session] = None
        self.max_message_bytes = _codec.DEFAULT_MAX_MESSAGE_BYTES
        self.live_seen = False
        self.live_now = False
        self.replay_to: Optional[int] = None
        self.exit: Optional[ExitStatus] = None

    def connection_started(self) -> None:
        self.live_now = False

    def _gap(self, from_: int, to: int) -> List[Any]:
        if self.strict:
            raise GapError(from_, to)
        return [Gap(from_=from_, to=to)]

    def feed(self, msg: Dict[str, Any]) -> List[Any]:
        t = msg["type"]
        if t in ("stdout", "stderr"):
            out = output(msg)
            events: List[Any] = []
            if self.next is not None:
                if out.end <= self.next:
                    return []  # delivered before a reconnect
                if out.offset < self.next:
                    out = Output(stream=out.stream,
                                 data=out.data[self.next - out.offset:],
                                 offset=self.next)
                elif out.offset > self.next:
                    events += self._gap(self.next, out.offset)
            self.next = out.end
            events.append(out)
            return events
        if t == "attached":
            s = msg.get("session")
            if isinstance(s, dict):
                self.session = Session.from_json(s)
            self.max_message_bytes = (_codec.limit(msg)
                                      or self.max_message_bytes)
            self.replay_to = _codec.offset_of(msg, "replayTo")
            if self.next is None:
                self.next = _codec.offset_of(msg, "replayFrom")
            return []
        if t == "gap":
            from_ = _codec.offset_of(msg, "from")
            to = _codec.offset_of(msg, "to")
            if self.next is not None and to <= self.next:
                return []
            self.next = to
            return self._gap(from_, to)
        if t == "live":
            self.live_now = True
            if self.live_seen:
                return []
            self.live_seen = True
            return [Live(offset=self.next if self.next is not None else 0)]
        if t == "exit":
            self.exit = exit_status(msg)
            return [ExitStatus(code=self.exit.code, signal=self.exit.signal)]
        if t == "error":
            return [error_for(str(msg.get("code")), str(msg.get("message")))]
        return []


def is_api_error(x: Any) -> bool:
    return isinstance(x, APIError)


Deliver = Callable[[Event], None]


class ResumePolicy:
    """When an attach reconnects: at once after a connection that brought
    output, then with exponential backoff (jittered, 50 ms to 2 s), giving
    up once ``timeout`` seconds have passed without a byte of progress.
    The backoff runs on across reconnects that brought nothing, so that a
    connection that always breaks at once is not retried in a tight
    loop."""

    FIRST, LAST = 0.05, 2.0

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._offset: Optional[int] = -1
        self._since = 0.0
        self._delay = 0.0

    def lost(self, offset: Optional[int], now: float) -> None:
        """The connection was lost with ``offset`` the next byte needed."""
        if offset != self._offset:
            self._offset, self._since, self._delay = offset, now, 0.0

    def next_delay(self, now: float) -> Optional[float]:
        """Seconds to sleep before the next attempt, or None: give up."""
        d = self._delay
        self._delay = min(max(d * 2, self.FIRST), self.LAST)
        if d and now + d > self._since + self.timeout:
            return None
        return d * (0.5 + random.random() / 2)

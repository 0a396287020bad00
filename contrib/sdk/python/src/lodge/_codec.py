"""The WebSocket messages of lodge-protocol.7 in msgpack, encoded in the
canonical form of tests/sdk/SCENARIOS.md ("Message vectors"): ``type``
first, then the fields in the protocol's order, only the fields set,
integers in their smallest form, stdin data as bin."""
from __future__ import annotations

from typing import Any, Dict, Iterator, Mapping, Optional, Union

import msgpack

from .errors import LodgeConnectionError

#: the order of the start message's fields after ``type``
START_FIELDS = ("command", "args", "workDir", "env", "user",
                "timeoutSeconds", "tty", "cols", "rows")

#: the header a stdin message adds to its data, at most (map, two keys, a
#: bin 32 header), rounded up
STDIN_OVERHEAD = 64

#: what the daemon accepts in one client message unless it says otherwise
#: (lodged(8) --max-message-size)
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20


def pack(message: Mapping[str, Any]) -> bytes:
    out: bytes = msgpack.packb(message, use_bin_type=True)
    return out


def stdin(data: Union[bytes, bytearray, memoryview, str]) -> bytes:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return pack({"type": "stdin", "data": bytes(data)})


def eof() -> bytes:
    return pack({"type": "eof"})


def resize(cols: int, rows: int) -> bytes:
    return pack({"type": "resize", "cols": int(cols), "rows": int(rows)})


def signal(sig: Union[str, int]) -> bytes:
    if isinstance(sig, bool) or not isinstance(sig, (str, int)):
        raise TypeError("a signal is a name such as 'TERM' or a number")
    return pack({"type": "signal", "signal": sig})


def number(x: Union[int, float]) -> Union[int, float]:
    """A whole number as an int, a fraction as a float."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def start(fields: Mapping[str, Any]) -> bytes:
    msg: Dict[str, Any] = {"type": "start"}
    for k in START_FIELDS:
        v = fields.get(k)
        if v is None:
            continue
        if k == "timeoutSeconds":
            v = number(v)
        elif k == "args":
            v = list(v)
        elif k == "env":
            v = dict(v)
        msg[k] = v
    return pack(msg)


def split(data: Union[bytes, bytearray, memoryview, str],
          max_message_bytes: int) -> Iterator[bytes]:
    """The stdin messages that carry data, each within the server's limit.
    Nothing is sent for empty data."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    view = memoryview(data)
    step = max(1, max_message_bytes - STDIN_OVERHEAD)
    for i in range(0, len(view), step):
        yield stdin(view[i:i + step])


def unpack(frame: Union[bytes, str]) -> Dict[str, Any]:
    """A server message, checked to be a map with a str ``type``."""
    if isinstance(frame, str):
        raise LodgeConnectionError("the server sent a text message")
    try:
        msg = msgpack.unpackb(frame, raw=False)
    except Exception as e:
        raise LodgeConnectionError("the server sent bad msgpack: %s" % e)
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        raise LodgeConnectionError("the server sent a message without type")
    return msg


def limit(msg: Mapping[str, Any]) -> Optional[int]:
    """maxMessageBytes from an attached or started message's limits."""
    lim = msg.get("limits")
    if isinstance(lim, dict):
        n = lim.get("maxMessageBytes")
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n
    return None


def offset_of(msg: Mapping[str, Any], key: str) -> int:
    v = msg.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise LodgeConnectionError("the server sent a bad %s" % key)
    return v

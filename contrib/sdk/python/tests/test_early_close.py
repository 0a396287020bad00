"""A server that ends its socket right after its close frame (lodged's
workers do) must not make the client lose what came before the close: on
a Unix socket the client's reply to that close fails at once (EPIPE).
A one-connection fake daemon on a Unix socket makes it happen every
time: it stops reading before it sends, so the reply always fails."""
from __future__ import annotations

import base64
import hashlib
import os
import socket
import tempfile
import threading
from typing import Any, Dict, Iterator, List

import msgpack
import pytest

import lodge

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _frame(opcode: int, payload: bytes) -> bytes:
    assert len(payload) < 126
    return bytes([0x80 | opcode, len(payload)]) + payload


def _serve(lsock: socket.socket, messages: List[Dict[str, Any]],
           served: List[int], read_first: bool) -> None:
    """Answer each upgrade (after the client's first message if
    read_first) with the messages and a close, sent in one write after
    the read side is shut, then end the socket."""
    while True:
        try:
            c, _ = lsock.accept()
        except OSError:
            return
        with c:
            head = b""
            while b"\r\n\r\n" not in head:
                b = c.recv(4096)
                if not b:
                    break
                head += b
            key = b""
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"sec-websocket-key:"):
                    key = line.split(b":", 1)[1].strip()
            accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
            c.sendall(b"HTTP/1.1 101 Switching Protocols\r\n"
                      b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
            if read_first:
                c.recv(4096)
            c.shutdown(socket.SHUT_RD)
            c.sendall(b"".join(_frame(2, msgpack.packb(m)) for m in messages)
                      + _frame(8, b"\x03\xe8"))
            served.append(1)


@pytest.fixture
def fake() -> Iterator[Any]:
    d = tempfile.mkdtemp(prefix="lodge-sdk-fake-")
    path = os.path.join(d, "lodged.sock")
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    lsock.listen(8)

    def start(messages: List[Dict[str, Any]],
              read_first: bool = False) -> List[int]:
        served: List[int] = []
        threading.Thread(target=_serve,
                         args=(lsock, messages, served, read_first),
                         daemon=True).start()
        return served

    start.path = path  # type: ignore[attr-defined]
    yield start
    lsock.close()
    os.unlink(path)
    os.rmdir(d)


def test_attach_exit_before_close(fake: Any) -> None:
    served = fake([{"type": "attached", "replayFrom": 0, "replayTo": 3},
                   {"type": "stdout", "offset": 0, "data": b"hi\n"},
                   {"type": "live"},
                   {"type": "exit", "exitCode": 3, "signal": None}])
    out = bytearray()
    with lodge.connect(socket_path=fake.path) as sb:
        h = sb.attach_session("s", on_stdout=out.extend, resume_timeout=5)
        assert h.wait(10) == {"code": 3, "signal": None}
    assert bytes(out) == b"hi\n"
    assert h.reconnects == 0 and len(served) == 1


def test_stream_exit_before_close(fake: Any) -> None:
    fake([{"type": "started", "pid": 42},
          {"type": "stdout", "offset": 0, "data": b"ok\n"},
          {"type": "exit", "exitCode": 0, "signal": None}],
         read_first=True)
    out = bytearray()
    with lodge.connect(socket_path=fake.path) as sb:
        h = sb.exec_stream(command="true", on_stdout=out.extend)
        assert h.wait(10) == {"code": 0, "signal": None}
    assert bytes(out) == b"ok\n"

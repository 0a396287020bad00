"""REST calls for the asyncio API: HTTP/1.1 over asyncio streams, with a
small pool of keep-alive connections.  lodged always answers with a
Content-Length (lodge-protocol.7, HTTP), which is all this reads."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any, List, Mapping, Optional, Tuple

from ._endpoint import Endpoint
from ._http import IDLE_REUSE_SECONDS, POOL_SIZE, Reply
from .errors import (LodgeConnectionError, LodgeTimeoutError,
                     error_from_reply)

Conn = Tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _Stale(Exception):
    """A reused connection that the daemon had closed."""


class AsyncHTTPClient:
    def __init__(self, endpoint: Endpoint, connect_timeout: float) -> None:
        self.endpoint = endpoint
        self.connect_timeout = connect_timeout
        self._idle: List[Tuple[Conn, float]] = []

    async def _new(self) -> Conn:
        ep = self.endpoint
        try:
            if ep.unix_path is not None:
                c = asyncio.open_unix_connection(ep.unix_path)
            else:
                c = asyncio.open_connection(ep.host, ep.port)
            return await asyncio.wait_for(c, self.connect_timeout)
        except asyncio.TimeoutError as e:
            raise LodgeTimeoutError("cannot reach lodged at %s in time"
                                    % ep.describe()) from e
        except OSError as e:
            raise LodgeConnectionError("cannot reach lodged at %s: %s"
                                       % (ep.describe(), e)) from e

    def _take(self) -> Optional[Conn]:
        now = time.monotonic()
        while self._idle:
            conn, since = self._idle.pop()
            if now - since < IDLE_REUSE_SECONDS and \
                    not conn[0].at_eof():
                return conn
            conn[1].close()
        return None

    def _give(self, conn: Conn) -> None:
        if len(self._idle) < POOL_SIZE:
            self._idle.append((conn, time.monotonic()))
        else:
            conn[1].close()

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for (_, w), _ in idle:
            w.close()

    async def request(self, method: str, path: str,
                      body: Optional[Mapping[str, Any]] = None,
                      timeout: Optional[float] = None) -> Reply:
        data = b""
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        head = ["%s %s HTTP/1.1" % (method, path), "Host: lodge"]
        head += ["%s: %s" % kv for kv in self.endpoint.headers().items()]
        if body is not None:
            head += ["Content-Type: application/json",
                     "Content-Length: %d" % len(data)]
        raw = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data
        for attempt in (0, 1):
            conn = self._take()
            reused = conn is not None
            if conn is None:
                conn = await self._new()
            try:
                reply = await asyncio.wait_for(
                    self._once(conn, raw, reused), timeout)
            except _Stale:
                conn[1].close()
                continue
            except asyncio.TimeoutError as e:
                conn[1].close()
                raise LodgeTimeoutError("%s %s: no reply in time"
                                        % (method, path)) from e
            except (OSError, asyncio.IncompleteReadError, ValueError) as e:
                conn[1].close()
                raise LodgeConnectionError("%s %s: %s"
                                           % (method, path, e)) from e
            except BaseException:
                conn[1].close()
                raise
            if 200 <= reply.status < 300:
                return reply
            raise error_from_reply(reply.status, reply.body)
        raise LodgeConnectionError("%s %s: the connection closed"
                                   % (method, path))

    async def _once(self, conn: Conn, raw: bytes, reused: bool) -> Reply:
        reader, writer = conn
        try:
            writer.write(raw)
            await writer.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass  # a refused body: the daemon's reply is still to be read
        line = await reader.readline()
        if not line:
            if reused:
                raise _Stale()
            raise LodgeConnectionError("the daemon closed the connection")
        parts = line.decode("latin-1").split(" ", 2)
        status = int(parts[1])
        headers = {}
        while True:
            h = await reader.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        body = await reader.readexactly(int(headers.get("content-length",
                                                        "0")))
        if headers.get("connection", "").lower() == "close":
            writer.close()
        else:
            self._give(conn)
        return Reply(status, headers, body)

"""Synchronous REST calls over http.client, with a small pool of
keep-alive connections (lodged keeps them open for 120 s)."""
from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._endpoint import Endpoint
from .errors import (LodgeConnectionError, LodgeTimeoutError,
                     error_from_reply)

#: a pooled connection idle this long is not reused: the daemon closes
#: idle ones after 120 s (lodged(8) --idle-timeout)
IDLE_REUSE_SECONDS = 60.0
POOL_SIZE = 8


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


class Reply:
    def __init__(self, status: int, headers: Dict[str, str],
                 body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


class HTTPClient:
    def __init__(self, endpoint: Endpoint, connect_timeout: float) -> None:
        self.endpoint = endpoint
        self.connect_timeout = connect_timeout
        self._idle: List[Tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()

    def _new(self) -> http.client.HTTPConnection:
        ep = self.endpoint
        if ep.unix_path is not None:
            return _UnixConnection(ep.unix_path, self.connect_timeout)
        return http.client.HTTPConnection(ep.host, ep.port,
                                          timeout=self.connect_timeout)

    def _take(self) -> Tuple[http.client.HTTPConnection, bool]:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                conn, since = self._idle.pop()
                if now - since < IDLE_REUSE_SECONDS:
                    return conn, True
                conn.close()
        return self._new(), False

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < POOL_SIZE:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    def request(self, method: str, path: str,
                body: Optional[Mapping[str, Any]] = None,
                timeout: Optional[float] = None) -> Reply:
        """Send one request; a 2xx reply is returned, any other raises its
        typed error.  A reused connection that the daemon had closed is
        retried once on a new one."""
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        for attempt in (0, 1):
            conn, reused = self._take()
            try:
                reply = self._once(conn, method, path, data, timeout)
            except (http.client.RemoteDisconnected, ConnectionResetError,
                    BrokenPipeError) as e:
                conn.close()
                if reused and attempt == 0:
                    continue
                raise LodgeConnectionError(
                    "%s %s: %s" % (method, path, e)) from e
            except socket.timeout as e:
                conn.close()
                raise LodgeTimeoutError("%s %s: no reply in time"
                                        % (method, path)) from e
            except OSError as e:
                conn.close()
                raise LodgeConnectionError("cannot reach lodged at %s: %s"
                                           % (self.endpoint.describe(), e)
                                           ) from e
            if 200 <= reply.status < 300:
                return reply
            raise error_from_reply(reply.status, reply.body)
        raise AssertionError("unreachable")

    def _once(self, conn: http.client.HTTPConnection, method: str,
              path: str, data: Optional[bytes],
              timeout: Optional[float]) -> Reply:
        headers = dict(self.endpoint.headers())
        if data is not None:
            headers["Content-Type"] = "application/json"
        if conn.sock is None:
            conn.connect()
        conn.sock.settimeout(timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
        except (BrokenPipeError, ConnectionResetError):
            # the daemon may refuse a body before reading it (413) and
            # close: its reply is still there to read
            if data is None:
                raise
        resp = conn.getresponse()
        body = resp.read()
        reply = Reply(resp.status, {k.lower(): v for k, v in
                                    resp.getheaders()}, body)
        if resp.will_close:
            conn.close()
        else:
            self._give(conn)
        return reply

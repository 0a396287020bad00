"""Where the daemon is: a TCP URL with a token, or a Unix socket."""
from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from typing import Dict, Optional

DEFAULT_RUNDIR = "/run/lodge"


@dataclass(frozen=True)
class Endpoint:
    host: str = ""
    port: int = 0
    unix_path: Optional[str] = None
    token: Optional[str] = None

    @property
    def is_unix(self) -> bool:
        return self.unix_path is not None

    def headers(self) -> Dict[str, str]:
        if self.token and not self.is_unix:
            return {"Authorization": "Bearer " + self.token}
        return {}

    def ws_uri(self, path: str) -> str:
        if self.is_unix:
            return "ws://localhost" + path
        host = "[%s]" % self.host if ":" in self.host else self.host
        return "ws://%s:%d%s" % (host, self.port, path)

    def describe(self) -> str:
        if self.is_unix:
            return "unix:%s" % self.unix_path
        return "http://%s:%d" % (self.host, self.port)


def resolve(url: Optional[str], token: Optional[str],
            socket_path: Optional[str]) -> Endpoint:
    """Explicit arguments first, then LODGE_URL and LODGE_TOKEN, then the
    Unix socket in $LODGE_RUNDIR or /run/lodge."""
    if socket_path is not None:
        return Endpoint(unix_path=socket_path)
    if url is None:
        url = os.environ.get("LODGE_URL") or None
    if url is None:
        rundir = os.environ.get("LODGE_RUNDIR") or DEFAULT_RUNDIR
        return Endpoint(unix_path=os.path.join(rundir, "lodged.sock"))
    if url.startswith("unix:"):
        return Endpoint(unix_path=url[len("unix:"):])
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "ws") or not u.hostname:
        raise ValueError("a lodge URL is http://host:port, not %r" % url)
    if token is None:
        token = os.environ.get("LODGE_TOKEN") or None
    return Endpoint(host=u.hostname, port=u.port or 5634, token=token)

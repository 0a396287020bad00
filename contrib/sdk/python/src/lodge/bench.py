"""python -m lodge.bench [--aio] [--execs N] [--keys N] [--bytes N]

The SDK's figures, measured against LODGE_URL and LODGE_TOKEN (or the
Unix socket), printed as one JSON line on stdout:

  exec_p50_us, exec_p99_us  POST /v1/exec of ["/bin/true"], sequential,
                            after 50 untimed
  stream_gbps               GB/s (10^9 bytes) of an exec stream of
                            head -c 1073741824 /dev/zero, read to its exit
  key_p50_us, key_p99_us    one-byte round trips on a PTY session running
                            stty raw -echo && printf R && exec cat,
                            after 100 untimed

A benchmark, not a test: the figures depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from typing import Dict, List

import lodge
import lodge.aio

KEY_COMMAND = "stty raw -echo && printf R && exec cat"


def _pct(xs: List[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def _us(xs: List[float], p: float) -> int:
    return int(round(_pct(xs, p) * 1e6))


def run_sync(execs: int, keys: int, nbytes: int) -> Dict[str, object]:
    sb = lodge.connect()
    lat = []
    for i in range(-50, execs):
        t = time.perf_counter()
        r = sb.exec_command(["/bin/true"])
        if i >= 0:
            lat.append(time.perf_counter() - t)
        assert r.exit_code == 0
    n = [0]

    def count(b: bytes) -> None:
        n[0] += len(b)

    t = time.perf_counter()
    h = sb.exec_stream(command="head -c %d /dev/zero" % nbytes,
                       on_stdout=count)
    assert h.wait().code == 0 and n[0] == nbytes
    gbps = nbytes / (time.perf_counter() - t) / 1e9

    s = sb.create_session(command=KEY_COMMAND, pty=True)
    got = threading.Event()
    buf = bytearray()

    def echo(b: bytes) -> None:
        buf.extend(b)
        got.set()

    a = sb.attach_session(s.id, on_stdout=echo)
    while b"R" not in buf:
        got.wait(10)
        got.clear()
    klat = []
    for i in range(-100, keys):
        del buf[:]
        got.clear()
        t = time.perf_counter()
        a.write(b"k")
        while not buf:
            got.wait(10)
            got.clear()
        if i >= 0:
            klat.append(time.perf_counter() - t)
    a.detach()
    sb.delete_session(s.id)
    sb.close()
    return {"exec": lat, "gbps": gbps, "key": klat}


async def _run_aio(execs: int, keys: int, nbytes: int) -> Dict[str, object]:
    sb = await lodge.aio.connect()
    lat = []
    for i in range(-50, execs):
        t = time.perf_counter()
        r = await sb.exec_command(["/bin/true"])
        if i >= 0:
            lat.append(time.perf_counter() - t)
        assert r.exit_code == 0
    t = time.perf_counter()
    h = await sb.exec_stream(command="head -c %d /dev/zero" % nbytes)
    n = 0
    async for ev in h:
        if isinstance(ev, lodge.Output):
            n += len(ev.data)
    assert (await h.wait()).code == 0 and n == nbytes
    gbps = nbytes / (time.perf_counter() - t) / 1e9

    s = await sb.create_session(command=KEY_COMMAND, pty=True)
    a = await sb.attach_session(s.id)
    it = a.__aiter__()
    seen = b""
    while b"R" not in seen:
        ev = await it.__anext__()
        if isinstance(ev, lodge.Output):
            seen += ev.data
    klat = []
    for i in range(-100, keys):
        t = time.perf_counter()
        await a.write(b"k")
        while True:
            ev = await it.__anext__()
            if isinstance(ev, lodge.Output):
                break
        if i >= 0:
            klat.append(time.perf_counter() - t)
    await a.detach()
    await sb.delete_session(s.id)
    await sb.close()
    return {"exec": lat, "gbps": gbps, "key": klat}


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m lodge.bench")
    ap.add_argument("--aio", action="store_true",
                    help="measure the asyncio API instead")
    ap.add_argument("--execs", type=int, default=2000)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--bytes", type=int, default=1 << 30)
    a = ap.parse_args(argv)
    if a.aio:
        r = asyncio.run(_run_aio(a.execs, a.keys, a.bytes))
    else:
        r = run_sync(a.execs, a.keys, a.bytes)
    ex, key = r["exec"], r["key"]
    assert isinstance(ex, list) and isinstance(key, list)
    out = {"sdk": "python-aio" if a.aio else "python",
           "exec_p50_us": _us(ex, 0.5), "exec_p99_us": _us(ex, 0.99),
           "stream_gbps": round(float(r["gbps"]), 3),  # type: ignore
           "key_p50_us": _us(key, 0.5), "key_p99_us": _us(key, 0.99)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

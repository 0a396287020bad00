"""Every Python example of the two seed documents, as written: each file
under tests/seeds/ is the example's text with only `import lodge` and
`sandbox = lodge.connect()` added above it (an example that uses the
`session` or `handle` of an earlier one starts with that earlier example's
text, unchanged).  Each runs as a subprocess against the kit's lodged and
is checked against what the seed says it prints.

Examples that wait on an interactive bash are ended from outside once the
test has seen `hello` in their output: the session's bash with the REST
input `exit`, the exec stream's bash (which no API call can reach) with
SIGKILL, found as the one bash that the example's run added under this
suite's own lodged front (a child of tests/sdk/with-lodged, an ancestor of
this process), so no other daemon's processes are touched."""
from __future__ import annotations

import ast
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from typing import Any, Dict, Iterator, List, Optional, Set

import pytest

import lodge

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "..", "..")
# the seed documents: $LODGE_SEEDS, or the tree's copy
SEEDS_DIRS = [os.environ.get("LODGE_SEEDS", ""),
              os.path.join(TOP, "tests", "sdk", "seeds")]
HEADER = "import lodge\nsandbox = lodge.connect()\n\n"


@pytest.fixture(autouse=True)
def workspace(sandbox: lodge.Sandbox) -> Iterator[None]:
    os.makedirs("/workspace", exist_ok=True)
    pj = "/workspace/package.json"
    if not os.path.exists(pj):  # npm install needs one; keep any there
        with open(pj, "w") as f:
            json.dump({"name": "workspace", "version": "1.0.0",
                       "private": True}, f)
    if not os.path.exists("/workspace/index.js"):
        with open("/workspace/index.js", "w") as f:
            f.write("console.log('index', process.env.NODE_ENV)\n")
    yield
    try:
        # end the seeds' bash the way a user would, so that it is not
        # killed in the middle of its start-up files (a root .bashrc may
        # hold a lock there, such as pyenv rehash's)
        if sandbox.get_session("shell").running:
            sandbox.send_input("shell", "exit\n")
            sandbox.wait_session("shell", 90)
        sandbox.delete_session("shell")
    except lodge.NotFoundError:
        pass


class Run:
    """An example running as a subprocess, its stdout read as it comes."""

    def __init__(self, name: str) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")  # see output as it comes
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, name)],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env)
        self.out = b""

    def read_until(self, pattern: bytes, timeout: float = 90) -> None:
        assert self.p.stdout is not None
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.out):
            left = deadline - time.monotonic()
            assert left > 0, "no %r in %r" % (pattern, self.out)
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                b = os.read(self.p.stdout.fileno(), 65536)
                assert b, "exited early: %r %r" % (self.out, self.finish())
                self.out += b

    def finish(self, timeout: float = 120) -> bytes:
        out, err = self.p.communicate(timeout=timeout)
        self.out += out
        assert self.p.returncode == 0, err.decode()
        return self.out


def last_mapping(out: bytes) -> Dict[str, Any]:
    line = out.decode().rstrip("\n").rsplit("\n", 1)[-1]
    line = line[line.index("{"):]
    v = ast.literal_eval(line)
    assert isinstance(v, dict)
    return v


def _stat(pid: int) -> List[str]:
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    comm = s[s.index("(") + 1:s.rindex(")")]
    return [comm] + s[s.rindex(")") + 2:].split()


def _cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _children() -> Dict[int, List[int]]:
    kids: Dict[int, List[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                kids.setdefault(int(_stat(int(d))[2]), []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return kids


def our_bashes() -> Set[int]:
    """The bash processes under this suite's own lodged."""
    pid = os.getpid()
    while pid > 1 and "with-lodged" not in _cmdline(pid):
        pid = int(_stat(pid)[2])
    assert pid > 1, "not run under tests/sdk/with-lodged"
    kids = _children()
    fronts = [k for k in kids.get(pid, [])
              if _cmdline(k).startswith("lodged")]
    found: Set[int] = set()
    todo = list(fronts)
    while todo:
        p = todo.pop()
        todo += kids.get(p, [])
        try:
            st = _stat(p)
            # a shell a session or stream started, not a subshell of one
            # (a .bashrc forks some while it starts)
            if st[0] == "bash" and _stat(int(st[2]))[0] != "bash":
                found.add(p)
        except OSError:
            pass
    return found


def seed_text(name: str) -> Optional[str]:
    for d in SEEDS_DIRS:
        if d and os.path.isdir(d):
            return "\n".join(open(os.path.join(d, f)).read()
                             for f in sorted(os.listdir(d)))
    return None


@pytest.mark.parametrize("name", sorted(os.listdir(HERE)))
def test_seed_files_are_the_seeds(name: str) -> None:
    """Each file is the seed's text with only the two lines added."""
    with open(os.path.join(HERE, name)) as f:
        text = f.read()
    assert text.startswith(HEADER)
    seeds = seed_text(name)
    assert seeds is not None, "no seed documents in tests/sdk/seeds"
    norm = re.sub(r"\n\s*\n", "\n", seeds)
    for part in re.split(r"\n\s*\n(?=import sys|session = |log = |handle"
                         r"\.signal)", text[len(HEADER):]):
        assert re.sub(r"\n\s*\n", "\n", part.strip()) in norm, part


def test_sessions_create(sandbox: lodge.Sandbox) -> None:
    out = Run("sessions_create.py").finish()
    sid = out.decode().strip()
    assert re.fullmatch("[0-9a-f]{32}", sid)
    s = sandbox.get_session("shell")
    assert (s.id, s.pty, s.cols, s.rows, s.work_dir) == (
        sid, True, 120, 40, "/workspace")


def test_sessions_attach(sandbox: lodge.Sandbox) -> None:
    r = Run("sessions_attach.py")
    r.read_until(rb"[\r\n]hello\r\n")  # the shell ran the echo
    sandbox.send_input("shell", "exit\n")
    out = r.finish()
    assert last_mapping(out) == {"code": 0, "signal": None}


def test_sessions_log(sandbox: lodge.Sandbox) -> None:
    out = Run("sessions_log.py").finish()
    printed = out.decode().split("\n", 1)[1]
    assert printed.endswith("\n")
    # what it printed is the ring's start, as the test reads it now
    assert sandbox.session_log("shell").decode().startswith(printed[:-1])


def test_exec_command() -> None:
    assert Run("exec_command.py").finish() == b"hello\n\n0\n"


def test_exec_stream_live() -> None:
    out = Run("exec_stream_live.py").finish(120)
    assert last_mapping(out)["code"] == 0
    assert os.path.exists("/workspace/package-lock.json")


def test_exec_stream_pty() -> None:
    before = our_bashes()
    r = Run("exec_stream_pty.py")
    r.read_until(rb"[\r\n]hello\r\n")
    new = our_bashes() - before
    assert len(new) == 1, new
    os.kill(new.pop(), signal.SIGKILL)
    out = r.finish()
    assert last_mapping(out) == {"code": None, "signal": "KILL"}


def test_exec_signals() -> None:
    Run("exec_signals.py").finish()

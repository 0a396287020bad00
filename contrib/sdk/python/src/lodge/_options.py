"""The options of each call, in the seeds' spellings (``workDir`` and
``workdir``, ``onStdout``) and Python's (``work_dir``, ``on_stdout``): each
alias maps to one name, and an unknown option is a TypeError that names
it, never silently ignored."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Set

_ALIASES = {
    "workDir": "work_dir", "workdir": "work_dir", "cwd": "work_dir",
    "timeoutSeconds": "timeout_seconds", "bufferSize": "buffer_size",
    "onStdout": "on_stdout", "onStderr": "on_stderr", "onExit": "on_exit",
    "onError": "on_error", "onLive": "on_live", "onGap": "on_gap",
    "onReconnect": "on_reconnect", "onOutput": "on_output", "onStdoutText": "on_stdout_text",
    "onStderrText": "on_stderr_text", "readOnly": "read_only",
    "maxOutputBytes": "max_output_bytes",
}

EXEC = {"command", "args", "work_dir", "env", "user", "timeout_seconds",
        "stdin", "encoding", "max_output_bytes", "request_timeout"}
STREAM = {"command", "args", "work_dir", "env", "user", "timeout_seconds",
          "tty", "pty", "cols", "rows", "on_stdout", "on_stderr", "on_output",
          "on_stdout_text", "on_stderr_text", "on_exit", "on_error"}
SESSION = {"name", "command", "args", "work_dir", "env", "user", "pty",
           "tty", "cols", "rows", "buffer_size"}
ATTACH = {"cols", "rows", "since", "read_only", "pace", "strict", "resume",
          "resume_timeout", "on_stdout", "on_stderr", "on_output",
          "on_stdout_text",
          "on_stderr_text", "on_exit", "on_error", "on_live", "on_gap",
          "on_reconnect"}


def merge(call: str, allowed: Set[str], options: Optional[Mapping[str, Any]],
          kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for src in (options or {}), kwargs:
        for k, v in src.items():
            name = _ALIASES.get(k, k)
            if name not in allowed:
                raise TypeError("%s() got an unknown option %r" % (call, k))
            if name in out and out[name] is not v and v is not None:
                if out[name] is not None:
                    raise TypeError("%s() got option %r twice" % (call, k))
            if v is not None or name not in out:
                out[name] = v
    return {k: v for k, v in out.items() if v is not None}


def run_fields(o: Mapping[str, Any]) -> Dict[str, Any]:
    """The protocol's fields of a run request."""
    if "command" in o and "args" in o:
        raise TypeError("give command or args, not both")
    f: Dict[str, Any] = {}
    if "command" in o:
        c = o["command"]
        if isinstance(c, str):
            f["command"] = c
        else:
            f["args"] = [str(a) for a in c]
    if "args" in o:
        f["args"] = [str(a) for a in o["args"]]
    for k, field in (("work_dir", "workDir"), ("env", "env"),
                     ("user", "user"), ("timeout_seconds", "timeoutSeconds"),
                     ("cols", "cols"), ("rows", "rows"),
                     ("buffer_size", "bufferSize"), ("name", "name"),
                     ("stdin", "stdin"), ("encoding", "encoding"),
                     ("max_output_bytes", "maxOutputBytes")):
        if k in o:
            f[field] = dict(o[k]) if k == "env" else o[k]
    return f


def exec_body(command: Any, o: Mapping[str, Any]) -> Dict[str, Any]:
    """POST /v1/exec's body."""
    body: Dict[str, Any] = ({"command": command} if isinstance(command, str)
                            else {"args": [str(a) for a in command]})
    body.update(run_fields(o))
    if "timeoutSeconds" in body:
        t = body["timeoutSeconds"]
        if isinstance(t, float) and t.is_integer():
            body["timeoutSeconds"] = int(t)
    return body


def session_body(o: Dict[str, Any]) -> Dict[str, Any]:
    """POST /v1/sessions's body."""
    if "tty" in o:
        o.setdefault("pty", o.pop("tty"))
    body = run_fields(o)
    if "pty" in o:
        body["pty"] = bool(o["pty"])
    return body


def stream_fields(o: Dict[str, Any]) -> Dict[str, Any]:
    """The start message's fields."""
    if "pty" in o:
        o.setdefault("tty", o.pop("pty"))
    fields = run_fields(o)
    if "tty" in o:
        fields["tty"] = bool(o["tty"])
    return fields


def exec_options(**kw: Any) -> Dict[str, Any]:
    kw["work_dir"] = kw.pop("work_dir", None) or kw.pop("workdir", None)
    kw.pop("workdir", None)
    return merge("exec_command", EXEC, kw, {})

#!/usr/bin/python3
"""Write the msgpack test vectors of the WebSocket messages (see
tests/sdk/SCENARIOS.md, "Message vectors"): one JSON file per message type,
each vector a message and its exact bytes in hex.

Run from anywhere with Debian's python3 and python3-msgpack:
    /usr/bin/python3 tests/sdk/vectors/generate.py
It rewrites the *.json files beside it; commit what changed.  The canonical
bytes are msgpack-python's packb with use_bin_type=True (the smallest
encoding of each integer, str as str, bytes as bin, floats as float 64),
keys in the order written below.  Decode-only vectors are spelled out byte
by byte, so that they do not depend on any encoder."""
import json
import os
import struct

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))


def to_json(v):
    if isinstance(v, bytes):
        return {"bin": v.hex()}
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    return v


def canonical(name, message, note=None):
    """A vector whose bytes are the canonical encoding of message."""
    v = {"name": name, "canonical": True, "message": to_json(message),
         "hex": msgpack.packb(message, use_bin_type=True).hex()}
    if note:
        v["note"] = note
    return v


def decode_only(name, message, raw, note):
    """A vector whose bytes are a valid, non-canonical encoding of message
    (other key order, wider integers, unknown keys): decoders must accept
    it; encoders are not compared with it."""
    got = msgpack.unpackb(raw, raw=False)
    want = dict(message)
    assert got == want, (name, got, want)
    return {"name": name, "canonical": False, "message": to_json(message),
            "hex": raw.hex(), "note": note}


def s(text):
    """The msgpack str of text (fixstr or str 8), for hand-made bytes."""
    b = text.encode()
    if len(b) < 32:
        return bytes([0xa0 | len(b)]) + b
    return b"\xd9" + bytes([len(b)]) + b


def fixmap(n):
    return bytes([0x80 | n])


PATTERN = bytes(range(256))

SESSION = {
    "id": "6f1c2b3a4d5e6f708192a3b4c5d6e7f8",
    "name": "shell",
    "command": "bash",
    "pid": 4242,
    "pty": True,
    "cols": 120,
    "rows": 40,
    "workDir": "/workspace",
    "user": "root",
    "createdAt": "2026-11-29T11:45:23.367Z",
    "state": "running",
    "exitCode": None,
    "signal": None,
    "clients": 1,
    "bufferSize": 1048576,
    "outputBytes": 4,
}

CLIENT = {
    "stdin": [
        canonical("text", {"type": "stdin", "data": b"echo hello\n"},
                  "a str written by the caller is sent as its UTF-8 bytes, "
                  "as bin"),
        canonical("empty", {"type": "stdin", "data": b""}),
        canonical("bytes", {"type": "stdin", "data": b"\x00\xff\x1b[A\x04"}),
        canonical("bin8-max", {"type": "stdin", "data": PATTERN[:255]},
                  "255 bytes: bin 8"),
        canonical("bin16", {"type": "stdin", "data": PATTERN * 2},
                  "512 bytes: bin 16"),
        canonical("bin32", {"type": "stdin", "data": PATTERN * 257},
                  "65792 bytes: bin 32"),
    ],
    "eof": [
        canonical("eof", {"type": "eof"}),
    ],
    "resize": [
        canonical("small", {"type": "resize", "cols": 120, "rows": 40}),
        canonical("uint16", {"type": "resize", "cols": 300, "rows": 10000},
                  "cols and rows above 255: uint 16"),
    ],
    "signal": [
        canonical("name", {"type": "signal", "signal": "INT"},
                  "the name as the caller wrote it"),
        canonical("realtime", {"type": "signal", "signal": "RTMIN+3"}),
        canonical("number", {"type": "signal", "signal": 9},
                  "a number given as a number is sent as an int"),
    ],
    "start": [
        canonical("command", {"type": "start", "command": "echo hello"},
                  "only the fields the caller set; no defaults sent"),
        canonical("args", {"type": "start", "args": ["/bin/true"]}),
        canonical("tty", {"type": "start", "command": "bash", "tty": True,
                          "cols": 120, "rows": 40}),
        canonical("full", {"type": "start", "command": "npm install",
                           "workDir": "/workspace",
                           "env": {"NODE_ENV": "production", "CI": "1"},
                           "user": "root", "timeoutSeconds": 30,
                           "tty": False, "cols": 80, "rows": 24},
                  "every field, in the canonical order; env in the "
                  "caller's order; a whole timeoutSeconds is an int"),
        canonical("fraction", {"type": "start", "args": ["sleep", "5"],
                               "timeoutSeconds": 1.5},
                  "a timeoutSeconds with a fraction is a float 64"),
    ],
}

BIG_OFFSET = (1 << 32) + 5

SERVER = {
    "stdout": [
        canonical("first", {"type": "stdout", "data": b"hello\n",
                            "offset": 0}),
        canonical("uint64-offset", {"type": "stdout", "data": b"x",
                                    "offset": BIG_OFFSET},
                  "an offset past 2^32: uint 64"),
        decode_only("reordered", {"type": "stdout", "data": b"ab",
                                  "offset": 7},
                    fixmap(3) + s("offset") + b"\xcf" + struct.pack(">Q", 7)
                    + s("data") + b"\xc4\x02ab" + s("type") + s("stdout"),
                    "keys in another order, the offset as a uint 64 though "
                    "small: decoders accept any order and any integer "
                    "width"),
        decode_only("unknown-key", {"type": "stdout", "data": b"z",
                                    "offset": 1, "future": [1, 2]},
                    fixmap(4) + s("type") + s("stdout") + s("data")
                    + b"\xc4\x01z" + s("offset") + b"\x01" + s("future")
                    + b"\x92\x01\x02",
                    "a key the client does not know is ignored"),
    ],
    "stderr": [
        canonical("first", {"type": "stderr", "data": b"err\n",
                            "offset": 4}),
    ],
    "exit": [
        canonical("code", {"type": "exit", "exitCode": 3, "signal": None},
                  "a session's exit"),
        canonical("signal", {"type": "exit", "exitCode": None,
                             "signal": "KILL"}),
        canonical("stream", {"type": "exit", "exitCode": 0, "signal": None,
                             "timedOut": False},
                  "an exec stream's exit carries timedOut"),
        canonical("timed-out", {"type": "exit", "exitCode": None,
                                "signal": "TERM", "timedOut": True}),
        decode_only("reordered", {"type": "exit", "exitCode": 255,
                                  "signal": None},
                    fixmap(3) + s("signal") + b"\xc0" + s("exitCode")
                    + b"\xcc\xff" + s("type") + s("exit"),
                    "keys in another order"),
    ],
    "error": [
        canonical("forbidden", {"type": "error", "code": "forbidden",
                                "message": "read-only client"}),
        canonical("unknown-code", {"type": "error", "code": "teapot",
                                   "message": "a code the client does not "
                                   "know"},
                  "an unknown code is treated like internal"),
    ],
    "attached": [
        canonical("session", {"type": "attached", "session": SESSION,
                              "replayFrom": 0, "replayTo": 4}),
        canonical("limits", {"type": "attached", "session": SESSION,
                             "replayFrom": 0, "replayTo": 4,
                             "limits": {"maxMessageBytes": 1048576}},
                  "with the limits the server announces"),
    ],
    "gap": [
        canonical("gap", {"type": "gap", "from": 100, "to": 70000}),
        canonical("uint64", {"type": "gap", "from": 0,
                             "to": BIG_OFFSET}),
    ],
    "live": [
        canonical("live", {"type": "live"}),
    ],
    "started": [
        canonical("pid", {"type": "started", "pid": 4242}),
        canonical("limits", {"type": "started", "pid": 70000,
                             "limits": {"maxMessageBytes": 1048576}}),
    ],
}


def main():
    for direction, table in (("client", CLIENT), ("server", SERVER)):
        for mtype, vectors in table.items():
            for v in vectors:
                # every vector's bytes decode to its message
                got = msgpack.unpackb(bytes.fromhex(v["hex"]), raw=False)
                assert to_json(got) == v["message"], v["name"]
            doc = {"type": mtype, "direction": direction, "vectors": vectors}
            path = os.path.join(HERE, mtype + ".json")
            with open(path, "w") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")


if __name__ == "__main__":
    main()

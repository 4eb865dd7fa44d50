"""A stand-in daemon that replays one transcript (JSONL of {"dir": "send"|"recv", "msg": ...}).

Each "send" entry waits for the client's next message and checks its method; request ids are
mapped from the transcript's to the client's, so recorded responses answer the real requests.
Each "recv" entry is written as recorded. Run: python replay_server.py TRANSCRIPT.jsonl
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

CANNED_INITIALIZE = {
    "serverInfo": {"name": "pi-rpc", "version": "replay"},
    "protocolVersion": 1,
    "cwd": "",
    "model": {"provider": "faux", "id": "scripted"},
    "scripted": True,
    "tools": [],
}


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    assert length is not None, "frame without Content-Length"
    msg: dict[str, Any] = json.loads(stream.read(length))
    return msg


def write_message(stream: IO[bytes], msg: dict[str, Any]) -> None:
    body = json.dumps(msg, ensure_ascii=False).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


CANNED_STATE = {"sessionId": "replay", "messageCount": 0, "isStreaming": False}


def read_expected(stream: IO[bytes], stdout: IO[bytes]) -> dict[str, Any] | None:
    """The client's next message, answering the `state` the plugin asks after `initialize`
    (to learn the session id) when the transcript does not have it."""
    while True:
        got = read_message(stream)
        if got is None or got.get("method") != "state" or "id" not in got:
            return got
        write_message(stdout, {"jsonrpc": "2.0", "id": got["id"], "result": CANNED_STATE})


def fail(text: str) -> None:
    sys.stderr.write(f"replay: {text}\n")
    sys.exit(3)


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:  # text files split on \n and \r only, never U+2028
        entries = [e for e in map(json.loads, filter(str.strip, f)) if e["dir"] in ("send", "recv")]
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    ids: dict[Any, Any] = {}
    sends = [e["msg"] for e in entries if e["dir"] == "send"]
    if not sends or sends[0].get("method") != "initialize":
        # The plugin always opens with initialize; answer it when the transcript does not.
        first = read_message(stdin)
        if first is None or first.get("method") != "initialize":
            fail(f"expected initialize, got {first!r}")
        assert first is not None
        write_message(stdout, {"jsonrpc": "2.0", "id": first["id"], "result": CANNED_INITIALIZE})
    for entry in entries:
        msg = entry["msg"]
        if entry["dir"] == "send":
            got = read_message(stdin) if msg.get("method") == "state" else read_expected(stdin, stdout)
            if got is None or got.get("method") != msg.get("method"):
                fail(f"expected {msg.get('method')!r}, got {got!r}")
            assert got is not None
            if "id" in msg and "id" in got:
                ids[msg["id"]] = got["id"]
            if msg.get("method") == "exit":
                return
        else:
            out = dict(msg)
            if "method" not in out and out.get("id") in ids:
                out["id"] = ids[out["id"]]
            write_message(stdout, out)
    # Past the transcript: a graceful stop still gets its answers.
    while (got := read_message(stdin)) is not None:
        if got.get("method") == "shutdown":
            write_message(stdout, {"jsonrpc": "2.0", "id": got["id"], "result": None})
        elif got.get("method") == "exit":
            return


if __name__ == "__main__":
    main(sys.argv[1])

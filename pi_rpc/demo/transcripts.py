"""Golden transcripts: record a conversation with the daemon, and replay one against a fresh daemon.

A transcript is JSON lines. The first line is `{"dir": "meta", "args": [...], "workspace": ...}`;
then `{"dir": "send", "msg": ...}` for what the client sent and `{"dir": "recv", "msg": ...}` for
what the daemon wrote, in order, normalised so that a replay can compare them: timestamps,
durations, the session id, the workspace path and temp-file paths become placeholders, and a run
of `tool_execution_update`s for one call (their number depends on timing) keeps only its last.

`python -m pi_rpc.demo.transcripts record` rewrites protocol/transcripts/*.jsonl.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from pi_rpc.demo.rpc_client import DaemonClient

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPTS = ROOT / "protocol" / "transcripts"
WORKSPACE = Path(__file__).resolve().parent / "workspace"
SCRIPT = TRANSCRIPTS / "script.json"
_TEMP_LOG = re.compile(r"/[^\s\]\"]*pi-(?:bash|output|powershell)-[0-9a-f]{16}\.log")

Json = dict[str, Any]

# name -> the requests of that conversation (method, params); each waits for its response.
SCENARIOS: dict[str, list[tuple[str, Json | None]]] = {
    "initialize": [
        ("initialize", {"clientInfo": {"name": "transcript"}}),
        ("tools/list", None),
        ("tools/setActive", {"names": ["read", "grep"]}),
        ("state", None),
        ("shutdown", None),
    ],
    "tour": [
        ("initialize", {"clientInfo": {"name": "transcript"}}),
        ("prompt", {"message": "tour"}),
    ],
    "errors": [
        ("initialize", {"clientInfo": {"name": "transcript"}}),
        ("tools/explode", None),
        ("prompt", {"message": 12}),
        ("prompt", {"message": "bad args"}),
        ("model/set", {"provider": "nope", "modelId": "x"}),
    ],
}
ARGS = ["--tools", "read,bash,edit,write,grep", "--no-session"]


def normalize(value: Any, workspace: str) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in ("timestamp", "durationMs"):
                out[key] = 0
            elif key == "sessionId":
                out[key] = "<session>"
            else:
                out[key] = normalize(item, workspace)
        return out
    if isinstance(value, list):
        return [normalize(item, workspace) for item in value]
    if isinstance(value, str):
        value = _TEMP_LOG.sub("<log>", value.replace(workspace, "<workspace>"))
        return re.sub(r"Current date: \d{4}-\d{2}-\d{2}", "Current date: <date>", value)
    return value


def collapse_updates(messages: list[Json]) -> list[Json]:
    """Keep only the last of consecutive tool_execution_update notifications for one call."""
    out: list[Json] = []
    for message in messages:
        event = message.get("params") if message.get("method") == "agent/event" else None
        if out and event is not None and event.get("type") == "tool_execution_update":
            previous = out[-1].get("params") if out[-1].get("method") == "agent/event" else None
            if previous is not None and previous.get("type") == "tool_execution_update" \
                    and previous.get("toolCallId") == event.get("toolCallId"):
                out[-1] = message
                continue
        out.append(message)
    return out


def run_scenario(requests: list[tuple[str, Json | None]], framing: str = "lsp") -> tuple[list[Json], str]:
    """Run a conversation on a fresh workspace; returns every message in wire order, normalised."""
    workspace = tempfile.mkdtemp(prefix="pi-rpc-transcript-")
    shutil.copytree(WORKSPACE, workspace, dirs_exist_ok=True)
    entries: list[Json] = []
    client = DaemonClient(["--cwd", workspace, "--script", str(SCRIPT), *ARGS], framing=framing)
    try:
        for method, params in requests:
            received = len(client.messages)
            msg_id = client.request_nowait(method, params)
            sent: Json = {"jsonrpc": "2.0", "id": msg_id, "method": method}
            if params is not None:
                sent["params"] = params
            client.response(msg_id)  # wait; the response is in client.messages too
            _settle(client)
            entries.append({"dir": "send", "msg": sent})
            entries += [{"dir": "recv", "msg": m} for m in collapse_updates(client.messages[received:])]
    finally:
        client.terminate()
        shutil.rmtree(workspace, ignore_errors=True)
    return [normalize(entry, workspace) for entry in entries], workspace


def _settle(client: DaemonClient) -> None:
    """After a prompt's response, the run's last event (agent_settled) may still be in flight."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        events = client.events()
        if not events or events[-1].get("type") in ("agent_settled",) or not _run_open(events):
            return
        time.sleep(0.01)


def _run_open(events: list[Json]) -> bool:
    starts = sum(1 for e in events if e.get("type") == "agent_start")
    settled = sum(1 for e in events if e.get("type") == "agent_settled")
    return starts > settled


def load(path: Path) -> tuple[Json, list[Json]]:
    lines = [msgspec.json.decode(line) for line in path.read_bytes().splitlines() if line.strip()]
    return lines[0], lines[1:]


def record() -> None:
    for name, requests in SCENARIOS.items():
        entries, _ = run_scenario(requests)
        meta = {"dir": "meta", "args": ["--script", "protocol/transcripts/script.json", *ARGS],
                "workspace": "pi_rpc/demo/workspace", "requests": [[m, p] for m, p in requests]}
        lines = [msgspec.json.encode(meta)] + [msgspec.json.encode(entry) for entry in entries]
        (TRANSCRIPTS / f"{name}.jsonl").write_bytes(b"\n".join(lines) + b"\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        sys.exit("usage: python -m pi_rpc.demo.transcripts record")
    record()

"""Golden transcripts: record a conversation with the daemon, and replay one against a fresh daemon.

A transcript is JSON lines. The first line is `{"dir": "meta", "args": [...], "workspace": ...}`;
then `{"dir": "send", "msg": ...}` for what the client sent and `{"dir": "recv", "msg": ...}` for
what the daemon wrote, in order, normalised so that a replay can compare them: timestamps,
durations (a bash result's `wall_time_seconds` too), the session id, the workspace path and
temp-file paths become placeholders, and a run of `tool_execution_update`s for one call (their
number depends on timing) keeps only its last.

Conversations in which the daemon also sends requests to the client (`approval/request`) live in
protocol/transcripts/answered/: their meta line adds `answers`, the client's results by method, in
order, and the client's answers appear as `send` entries where it sent them. Clients that only
replay request/response conversations read the top folder alone.

`python -m pi_rpc.demo.transcripts record` rewrites protocol/transcripts/*.jsonl and answered/*.jsonl.
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
from pi_rpc.demo.sample_project import copy_sample_project

ROOT = Path(__file__).resolve().parents[2]
TRANSCRIPTS = ROOT / "protocol" / "transcripts"
SCRIPT = TRANSCRIPTS / "script.json"
_TEMP_LOG = re.compile(r"/[^\s\]\"]*pi-(?:bash|output|powershell)-[0-9a-f]{16}\.log")

Json = dict[str, Any]
# A request's param that stands for the entry id of the newest checkpoint the last
# `session/checkpoints` listed (entry ids are random: the transcript shows them as <entry>).
CHECKPOINT = "<newest checkpoint>"

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
    "checkpoints": [
        ("initialize", {"clientInfo": {"name": "transcript"}}),
        ("prompt", {"message": "fix and note"}),
        ("session/checkpoints", None),
        ("session/rewind", {"entryId": CHECKPOINT, "restore": "files"}),
        ("session/checkpoints", None),
    ],
}
ARGS = ["--tools", "read,bash,edit,write,grep", "--no-session"]

ANSWERED = TRANSCRIPTS / "answered"
# name -> (requests, the client's results for the daemon's requests by method, in order)
ANSWERED_SCENARIOS: dict[str, tuple[list[tuple[str, Json | None]], dict[str, list[Json]]]] = {
    "approvals": (
        [
            ("initialize", {"clientInfo": {"name": "transcript"}, "capabilities": {"approvals": True}}),
            ("prompt", {"message": "fix greeting"}),
            ("prompt", {"message": "fix greeting"}),
            ("state", None),
        ],
        {"approval/request": [{"outcome": "reject", "reason": "not before the release"}, {"outcome": "allow"}]},
    ),
}


def normalize(value: Any, workspace: str) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in ("timestamp", "durationMs", "wall_time_seconds"):
                out[key] = 0
            elif key == "entryId":
                out[key] = "<entry>"
            elif key == "sessionId":
                out[key] = "<session>"
            else:
                out[key] = normalize(item, workspace)
        return out
    if isinstance(value, list):
        return [normalize(item, workspace) for item in value]
    if isinstance(value, str):
        return _TEMP_LOG.sub("<log>", value.replace(workspace, "<workspace>"))
    return value


def collapse_updates(messages: list[Json]) -> list[Json]:
    """Keep only the last of consecutive tool_execution_update notifications for one call."""
    out: list[Json] = []
    for message in messages:
        event = message.get("params") if message.get("method") == "agent/event" else None
        if out and event is not None and event.get("type") == "tool_execution_update":
            previous = out[-1].get("params") if out[-1].get("method") == "agent/event" else None
            if (
                previous is not None
                and previous.get("type") == "tool_execution_update"
                and previous.get("toolCallId") == event.get("toolCallId")
            ):
                out[-1] = message
                continue
        out.append(message)
    return out


def run_scenario(
    requests: list[tuple[str, Json | None]], framing: str = "lsp", answers: dict[str, list[Json]] | None = None
) -> tuple[list[Json], str]:
    """Run a conversation on a fresh workspace; returns every message in wire order, normalised.
    `answers`: what the client answers to the daemon's requests, by method, in order."""
    workspace = tempfile.mkdtemp(prefix="pi-rpc-transcript-")
    copy_sample_project(workspace)
    entries: list[Json] = []
    queued = {method: list(results) for method, results in (answers or {}).items()}
    client = DaemonClient(["--cwd", workspace, "--script", str(SCRIPT), *ARGS], framing=framing)
    try:
        for method, params in requests:
            received = len(client.messages)
            params = _with_checkpoint(params, client)
            msg_id = client.request_nowait(method, params)
            sent: Json = {"jsonrpc": "2.0", "id": msg_id, "method": method}
            if params is not None:
                sent["params"] = params
            entries.append({"dir": "send", "msg": sent})
            received = _answer_until_response(client, msg_id, received, queued, entries)
            client.response(msg_id)  # the response is in client.messages too
            _settle(client)
            entries += [{"dir": "recv", "msg": m} for m in collapse_updates(client.messages[received:])]
    finally:
        client.terminate()
        shutil.rmtree(workspace, ignore_errors=True)
    return [normalize(entry, workspace) for entry in entries], workspace


def _with_checkpoint(params: Json | None, client: DaemonClient) -> Json | None:
    if params is None or CHECKPOINT not in params.values():
        return params
    listed = [m for m in client.messages if isinstance(m.get("result"), dict) and "checkpoints" in m["result"]]
    entry_id = listed[-1]["result"]["checkpoints"][0]["entryId"]
    return {key: entry_id if value == CHECKPOINT else value for key, value in params.items()}


def _answer_until_response(
    client: DaemonClient, msg_id: int, received: int, queued: dict[str, list[Json]], entries: list[Json]
) -> int:
    """Wait for the response to `msg_id`, answering each request the daemon sends meanwhile from
    `queued`; the messages before each answer are recorded. Returns how many are recorded."""
    while True:
        found = client.wait_for_message(
            lambda m: ("method" in m and "id" in m) or ("method" not in m and m.get("id") == msg_id), start=received
        )
        index = next(i for i in range(received, len(client.messages)) if client.messages[i] is found)
        if "method" not in found:
            return received
        entries += [{"dir": "recv", "msg": m} for m in collapse_updates(client.messages[received : index + 1])]
        received = index + 1
        answer = {"jsonrpc": "2.0", "id": found["id"], "result": queued[found["method"]].pop(0)}
        client.send(answer)
        entries.append({"dir": "send", "msg": answer})


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
        meta: Json = {
            "dir": "meta",
            "args": ["--script", "protocol/transcripts/script.json", *ARGS],
            "workspace": "pi_rpc/demo/workspace",
            "requests": [[m, p] for m, p in requests],
        }
        lines = [msgspec.json.encode(meta)] + [msgspec.json.encode(entry) for entry in entries]
        (TRANSCRIPTS / f"{name}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    ANSWERED.mkdir(exist_ok=True)
    for name, (requests, answers) in ANSWERED_SCENARIOS.items():
        entries, _ = run_scenario(requests, answers=answers)
        meta = {
            "dir": "meta",
            "args": ["--script", "protocol/transcripts/script.json", *ARGS],
            "workspace": "pi_rpc/demo/workspace",
            "requests": [[m, p] for m, p in requests],
            "answers": answers,
        }
        lines = [msgspec.json.encode(meta)] + [msgspec.json.encode(entry) for entry in entries]
        (ANSWERED / f"{name}.jsonl").write_bytes(b"\n".join(lines) + b"\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        sys.exit("usage: python -m pi_rpc.demo.transcripts record")
    record()

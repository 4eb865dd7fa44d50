"""Golden transcripts replayed through the plugin's client: every message decodes without loss."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import GUARD_MS, PI_RPC, ROOT, require_daemon
from .replay_server import read_message, write_message

pytestmark = pytest.mark.nvim

TRANSCRIPTS = sorted((ROOT / "protocol" / "transcripts").glob("*.jsonl"))
REPLAY_SERVER = Path(__file__).with_name("replay_server.py")

# Runs inside Neovim: sends the transcript's client messages through pi_rpc.daemon and records
# what the client decoded. initialize is the plugin's own; shutdown/exit come from stop_sync.
DRIVER = """
local sends, expected, guard_ms = ...
local daemon = require('pi_rpc.daemon')
local got = {}
daemon.trace = function(kind, method, a, b)
  if kind == 'response' then
    -- The plugin's own `state` after `initialize` (it learns the session id) is no part of
    -- the transcript.
    if method ~= 'shutdown' and not (method == 'state' and not daemon.is_ready()) then
      table.insert(got, { kind = kind, method = method, error = a, result = b })
    end
  else
    table.insert(got, { kind = kind, method = method, params = a })
  end
end
daemon.ensure()
vim.wait(10000, daemon.is_ready, 10)
local ids = {}
for _, msg in ipairs(sends) do
  local method = msg.method
  if method == 'initialize' or method == 'shutdown' or method == 'exit' then
    -- sent by the plugin itself
  elseif msg.id ~= nil then
    ids[msg.id] = daemon.request(method, msg.params, nil)
  else
    local params = msg.params
    if method == '$/cancelRequest' then
      params = { id = ids[params.id] }
    end
    daemon.notify(method, params)
  end
end
vim.wait(guard_ms, function() return #got >= expected end, 10)
daemon.stop_sync()
daemon.trace = nil
return got
"""


def normalise(value: Any) -> Any:
    """JSON as a Lua client can hold it: a null member is an absent one, {} and [] are one empty
    table, and an integral float is an integer."""
    if isinstance(value, dict):
        out = {k: normalise(v) for k, v in value.items() if v is not None}
        return out or []
    if isinstance(value, list):
        return [normalise(v) for v in value] or []
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def expected_decoding(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    methods = {e["msg"]["id"]: e["msg"]["method"] for e in entries if e["dir"] == "send" and "id" in e["msg"]}
    out: list[dict[str, Any]] = []
    for entry in entries:
        msg = entry["msg"]
        if entry["dir"] != "recv":
            continue
        if "method" in msg:
            kind = "request" if "id" in msg else "notification"
            out.append({"kind": kind, "method": msg["method"], "params": msg.get("params")})
            continue
        method = methods.get(msg.get("id"))
        error = msg.get("error")
        # vim.lsp.rpc keeps a -32800 (request cancelled) to itself: it is RPC-internal.
        if method in (None, "shutdown") or (error or {}).get("code") == -32800:
            continue
        out.append({"kind": "response", "method": method, "error": error, "result": msg.get("result")})
    return out


def replay(make_editor: Any, transcript: Path) -> None:
    # split on LF only: str.splitlines would also cut at a U+2028 inside a JSON string
    entries = [
        e
        for e in (json.loads(line) for line in transcript.read_text(encoding="utf-8").split("\n") if line.strip())
        if e["dir"] in ("send", "recv")
    ]
    expected = expected_decoding(entries)
    # resume_last off: the replayed daemon answers only the transcript's requests after `state`.
    ed = make_editor(cmd=[sys.executable, str(REPLAY_SERVER), str(transcript)], resume_last=False)
    sends = [e["msg"] for e in entries if e["dir"] == "send"]
    got = ed.lua(DRIVER, sends, len(expected), GUARD_MS)
    assert len(got) == len(expected), ed.log_file.read_text()
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert normalise(g) == normalise(e), f"message {i} ({e['kind']} {e['method']})"


@pytest.mark.skipif(not TRANSCRIPTS, reason="protocol/transcripts/ has no *.jsonl transcripts yet")
@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=[t.name for t in TRANSCRIPTS])
def test_golden_transcript_decodes_without_loss(make_editor: Any, transcript: Path) -> None:
    replay(make_editor, transcript)


# --- the replay machinery itself, on a transcript recorded from the real daemon now ------------


def record(path: Path, argv: list[str], requests: list[tuple[str, dict[str, Any] | None]]) -> None:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    lines = []
    for n, (method, params) in enumerate(requests, start=1):
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if method != "exit":
            msg["id"] = n
        if params is not None:
            msg["params"] = params
        write_message(proc.stdin, msg)
        lines.append({"dir": "send", "msg": msg})
        if method == "exit":
            break
        while (got := read_message(proc.stdout)) is not None:
            lines.append({"dir": "recv", "msg": got})
            if got.get("id") == n and "method" not in got:
                break
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")


def test_replay_of_a_recorded_session(make_editor: Any, tmp_path: Path, workspace: Path) -> None:
    """spec 9.12, 15.2, 18.6: a prompt with read and a truncated bash, tool toggles, state and
    errors, recorded from the real daemon, come out of the plugin's client intact."""
    require_daemon()
    script = tmp_path / "rec.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {
                        "turns": [
                            [
                                {"thinking": "Hmm \u2028 ok", "chunk": 3},
                                {"text": "Reading — ünïcode ✓", "chunk": 5},
                                {"toolCall": {"name": "read", "arguments": {"path": "README.md"}}},
                                {"toolCall": {"name": "bash", "arguments": {"command": "seq 1 4000"}}},
                            ],
                            [{"text": "Done."}],
                        ]
                    }
                ]
            }
        )
    )
    transcript = tmp_path / "recorded.jsonl"
    record(
        transcript,
        [str(PI_RPC), "--cwd", str(workspace), "--script", str(script)],
        [
            ("initialize", {"clientInfo": {"name": "recorder"}}),
            ("tools/list", None),
            ("prompt", {"message": "go"}),
            ("tools/setActive", {"names": ["read", "grep", "nope"]}),
            ("state", None),
            ("no/such/method", None),
            ("prompt", {}),
            ("shutdown", None),
            ("exit", None),
        ],
    )
    text = transcript.read_text(encoding="utf-8")
    assert "Full output: " in text and '"code": -32601' in text and '"code": -32602' in text
    replay(make_editor, transcript)


def test_a_prompt_refused_for_want_of_a_model_says_why_in_the_chat(make_editor: Any, tmp_path: Path) -> None:
    """With no key and no script the daemon serves, but a prompt fails naming what to set; the
    chat says so rather than staying silent."""
    reason = "No model configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY, or add one to models.json"
    transcript = tmp_path / "no-model.jsonl"
    entries = [
        {"dir": "send", "msg": {"jsonrpc": "2.0", "id": 1, "method": "prompt", "params": {"message": "hi"}}},
        {"dir": "recv", "msg": {"jsonrpc": "2.0", "id": 1, "error": {"code": -32003, "message": reason}}},
    ]
    transcript.write_text("".join(json.dumps(e) + "\n" for e in entries))
    # resume_last off: the replayed daemon answers only the transcript's requests after `state`.
    ed = make_editor(cmd=[sys.executable, str(REPLAY_SERVER), str(transcript)], resume_last=False)
    ed.lua("pcall(vim.cmd, 'PiPrompt hi')")
    ed.wait(f"require('pi_rpc.chat').text():find({json.dumps(reason)}, 1, true) ~= nil")
    assert ed.chat_lines()[-1] == "**Error:** " + reason

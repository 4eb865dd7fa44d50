"""`export_html` shows what real Pi's exported page shows of the same session file: every entry of
the current branch, the turns a compaction summarised and the compaction where it was made
included (Pi's page renders them from the entries it embeds; pi-rpc's shows them as sections)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.node_packages import real_pi16

from .conftest import daemon_env
from .pi_conversations import PI_RPC, Json, answer, converse
from .pi_parity import agent_dir_for, loopback_server, turn

pytestmark = pytest.mark.e2e


def shown_by_pi(page: str) -> list[str]:
    """The ids of the entries Pi's page shows, in order: the path from its first entry to the leaf,
    less the entries its renderer draws nothing for (a tool result is drawn inside its call)."""
    embedded = re.search(r'<script id="session-data" type="application/json">(.*?)</script>', page, re.DOTALL)
    assert embedded is not None
    data: dict[str, Any] = json.loads(base64.b64decode(embedded.group(1)))
    by_id = {entry["id"]: entry for entry in data["entries"] if entry["type"] != "session"}
    path: list[Json] = []
    current = by_id.get(data["leafId"])
    while current is not None:
        path.insert(0, current)
        current = by_id.get(current.get("parentId"))

    def drawn(entry: Json) -> bool:
        if entry["type"] == "message":
            return bool(entry["message"]["role"] in ("user", "assistant", "bashExecution"))
        return entry["type"] in ("model_change", "compaction", "branch_summary") or (
            entry["type"] == "custom_message" and bool(entry.get("display"))
        )

    return [entry["id"] for entry in path if drawn(entry)]


def shown_by_us(page: str) -> list[str]:
    """The ids of the entries our page shows, tool results (a section of their own here) aside."""
    return [
        entry_id
        for entry_id, kind in re.findall(r'<section id="entry-([^"]+)" class="([^"]+)">', page)
        if not kind.startswith("toolResult")
    ]


def test_the_page_of_a_compacted_session_shows_the_entries_pis_page_shows(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.md").write_text("some notes\n")
    sessions = tmp_path / "sessions"
    replies = [
        turn(call=("c1", "read", {"path": "notes.md"})),
        turn("answer one"),
        turn("answer two"),
        turn("THE SUMMARY"),
        turn("answer three"),
    ]
    ours = tmp_path / "ours.html"
    with loopback_server(replies) as server:
        agent_dir = agent_dir_for(tmp_path, server, {"compaction": {"keepRecentTokens": 1000}})
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
        commands = [
            {"id": "1", "type": "prompt", "message": "read the notes"},
            {"id": "2", "type": "prompt", "message": "two " + "x" * 4000},
            {"id": "3", "type": "compact"},
            {"id": "4", "type": "prompt", "message": "three"},
            {"id": "5", "type": "get_messages"},
            {"id": "6", "type": "export_html", "outputPath": str(ours)},
        ]
        lines = converse([*PI_RPC, "--session-dir", str(sessions)], commands, env, workspace)
    assert answer(lines, "6") == {"path": str(ours)}
    in_context = answer(lines, "5")["messages"]
    # The system message the compaction kept, then its summary (spec 16.2).
    assert [m["role"] for m in in_context[:2]] == ["system", "compactionSummary"]
    assert not any(m["role"] == "toolResult" for m in in_context)  # the first turn was summarised away
    [session] = sessions.glob("*.jsonl")
    pis = tmp_path / "pi.html"
    subprocess.run(
        [*real_pi16(), "--export", str(session), str(pis)],
        check=True,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    page = ours.read_text()
    assert shown_by_us(page) == shown_by_pi(pis.read_text())
    entries = [json.loads(line) for line in session.read_text().splitlines()[1:]]
    [compaction] = [e for e in entries if e["type"] == "compaction"]
    first_prompt = next(e for e in entries if e["type"] == "message" and e["message"]["role"] == "user")
    assert {compaction["id"], first_prompt["id"]} <= set(shown_by_us(page))
    assert "read the notes" in page and "some notes" in page  # the summarised turn, its tool result too

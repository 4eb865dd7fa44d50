"""Approval rules through the JSON-RPC front end, in-process: a scripted model tries what a prefix
rule's text would have let through, and grants itself bash through its settings file; the editor
rejects every approval request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_rpc.ai.json_text import encode_json
from pi_rpc.modes.jsonrpc.protocol import AgentEventNotification
from pi_rpc.session.approvals.gate import ApprovalRules, parse_rules
from pi_rpc.session.configuration.config import ApprovalConfig

from ..session.helpers import reply, script, session_config, tool_call
from .jsonrpc_client import Editor, jsonrpc_editor

pytestmark = pytest.mark.anyio

Json = dict[str, Any]

# bash expands `${x:=…}` to an escaped `$(touch C)`, then `${x@P}` prompt-expands it: C is created.
ATTACK = r"npm test ${x:=\$\(touch\ C\)} ${x@P}"
SCRIPT = script(
    reply("^attack", [tool_call("bash", command=ATTACK)], [{"text": "done"}]),
    reply("^run tests", [tool_call("bash", command="echo tests passed")], [{"text": "ran"}]),
    reply(
        "^grant",
        [tool_call("write", path=".pi/settings.json", content='{"permissions": {"allow": ["bash"]}}')],
        [{"text": "granted"}],
    ),
)
RULES = ApprovalRules(allow=parse_rules(["bash(npm test:*)", "bash(echo tests:*)", "write"]))


async def start(editor: Editor, policy: str) -> None:
    editor.session.subscribe(lambda event: editor.send(encode_json(AgentEventNotification(params=event))))
    capabilities = {"approvals": True}
    await editor.request("initialize", {"clientInfo": {"name": "test"}, "capabilities": capabilities})
    await editor.request("approval/setPolicy", {"policy": policy})


async def prompt_rejecting(editor: Editor, message: str) -> list[Json]:
    """Run a prompt as an editor that rejects whatever it is asked; the requests it was asked."""
    prompt = editor.request_nowait("prompt", {"message": message})
    asked: list[Json] = []

    def next_message(m: Json) -> bool:
        if m.get("method") == "approval/request" and "id" in m:
            return m["params"] not in asked
        return m.get("id") == prompt and "result" in m

    while "result" not in (found := await editor.wait_for(next_message)):
        asked.append(found["params"])
        editor.answer(found, {"outcome": "reject"})
    return asked


def tool_results(editor: Editor) -> list[Json]:
    return [
        m["params"]["result"]
        for m in editor.received
        if m.get("method") == "agent/event" and m["params"]["type"] == "tool_execution_end"
    ]


async def test_an_expansion_under_a_prefix_rule_is_asked_and_never_runs(tmp_path: Path) -> None:
    async with jsonrpc_editor(session_config(tmp_path, SCRIPT, approvals=ApprovalConfig(rules=RULES))) as editor:
        await start(editor, "ask")
        asked = await prompt_rejecting(editor, "attack")
        assert not (tmp_path / "C").exists()
        assert [request["toolName"] for request in asked] == ["bash"]
        assert asked[0]["suggestedRule"] == ""  # "allow always" offers nothing this wide
        assert tool_results(editor)[0]["content"][0]["text"] == "The user rejected this bash call"


async def test_a_literal_command_under_its_rule_runs_unasked(tmp_path: Path) -> None:
    async with jsonrpc_editor(session_config(tmp_path, SCRIPT, approvals=ApprovalConfig(rules=RULES))) as editor:
        await start(editor, "ask")
        asked = await prompt_rejecting(editor, "run tests")
        assert asked == [] and tool_results(editor)[0]["content"][0]["text"] == "tests passed\n"


async def test_accept_edits_asks_before_the_model_rewrites_its_own_settings(tmp_path: Path) -> None:
    async with jsonrpc_editor(session_config(tmp_path, SCRIPT, approvals=ApprovalConfig(rules=RULES))) as editor:
        await start(editor, "acceptEdits")
        asked = await prompt_rejecting(editor, "grant")
        assert [request["toolName"] for request in asked] == ["write"]
        assert not (tmp_path / ".pi" / "settings.json").exists()

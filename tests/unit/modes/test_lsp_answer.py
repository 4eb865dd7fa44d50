"""The LSP mode's answer to a code action: the run's last assistant text, whatever the user's own
bash commands added to the transcript after it, and whatever a compaction after the run left of
the transcript (pi_rpc/modes/lsp/runs.py)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import anyio
import pytest
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.types import AssistantMessage, BashExecutionMessage, CompactionSummaryMessage, TextContent
from pi_rpc.modes.lsp.runs import Runs, last_answer
from pi_rpc.session.compaction.planning import CompactionSettings
from pi_rpc.session.session import AgentSession

from ..session.helpers import reply, script, session_config


def test_a_users_bash_command_after_the_answer_is_not_the_answer() -> None:
    answer = AssistantMessage(content=[TextContent(text="Renamed it.")], api="faux", provider="faux", model="m")
    ran = BashExecutionMessage(command="git diff", output="diff", exit_code=0, cancelled=False, truncated=False)
    assert last_answer([answer, ran]) == "Renamed it."


class MessagesOnly:
    """An editor that shows neither progress nor documents: answers come as messages."""

    client_capabilities = lsp.ClientCapabilities()

    def __init__(self) -> None:
        self.shown: list[str] = []

    def window_show_message(self, params: lsp.ShowMessageParams) -> None:
        self.shown.append(params.message)


@pytest.mark.anyio
async def test_the_answer_survives_a_compaction_after_the_run(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    near = CompactionSettings(reserve_tokens=FAUX_MODEL.context_window - 1000, keep_recent_tokens=100)
    replies = [
        reply("^<conversation>", [{"text": "THE SUMMARY"}]),
        *(reply(f"^{word}", [{"text": f"r {word}"}]) for word in ("one", "two")),
        reply("^explain", [{"usage": {"input": 1500, "output": 1}}, {"text": "It returns a greeting."}]),
    ]
    editor = MessagesOnly()
    async with anyio.create_task_group() as tasks:
        session = AgentSession(session_config(workspace, script(*replies), compaction=near), tasks)
        await session.prompt(f"one {'f' * 400}")
        await session.prompt(f"two {'f' * 400}")
        await Runs(cast(LanguageServer, editor), session, tasks).run("Explain with Pi", "explain greet")
        await session.close()
    assert isinstance(session.messages[1], CompactionSummaryMessage)  # compacted (after the system message)
    assert editor.shown == ["It returns a greeting."]

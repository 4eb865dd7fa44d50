"""The LSP mode's answer to a code action: the run's last assistant text, whatever the user's own
bash commands added to the transcript after it (pi_rpc/modes/lsp/runs.py)."""

from __future__ import annotations

from pi_rpc.ai.types import AssistantMessage, BashExecutionMessage, TextContent
from pi_rpc.modes.lsp.runs import last_answer


def test_a_users_bash_command_after_the_answer_is_not_the_answer() -> None:
    answer = AssistantMessage(content=[TextContent(text="Renamed it.")], api="faux", provider="faux", model="m")
    ran = BashExecutionMessage(command="git diff", output="diff", exit_code=0, cancelled=False, truncated=False)
    assert last_answer([answer, ran]) == "Renamed it."

"""The system prompt: who the agent is, the active tools' snippets and guidelines, the workspace.

Rebuilt whenever the active tool set changes (spec 5.4), in the spirit of Pi's
`buildSystemPrompt`: only active tools are listed, and their guidelines, deduplicated, in order.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

from pi_rpc.tools.base import ToolDefinition

_INTRO = (
    "You are an expert coding assistant operating inside pi-rpc, a coding agent harness embedded in "
    "the user's editor. You help users by reading files, executing commands, editing code, and writing "
    "new files."
)

_BASE_GUIDELINES = (
    "Be concise in your responses",
    "Show file paths clearly when working with files",
)


def build_system_prompt(tools: Sequence[ToolDefinition], cwd: str, append: str | None = None) -> str:
    lines = [_INTRO, "", "Available tools:"]
    if tools:
        lines += [f"- {tool.name}: {tool.prompt_snippet or tool.description}" for tool in tools]
    else:
        lines.append("(none)")
    guidelines: list[str] = []
    for tool in tools:
        for rule in tool.prompt_guidelines:
            if rule not in guidelines:
                guidelines.append(rule)
    guidelines += [rule for rule in _BASE_GUIDELINES if rule not in guidelines]
    lines += ["", "Guidelines:"] + [f"- {rule}" for rule in guidelines]
    if append:
        lines += ["", append]
    lines += ["", f"Current date: {datetime.date.today().isoformat()}", f"Current working directory: {cwd}"]
    return "\n".join(lines)

"""The system prompt: who the agent is, the active tools' snippets and guidelines, the workspace.

Rebuilt whenever the active tool set changes (spec 5.4), in the spirit of Pi's
`buildSystemPrompt`: only active tools are listed, and their guidelines, deduplicated, in order;
then the user's appended text, the project's context files and the skills.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

from pi_rpc.session.context_files import format_context_files
from pi_rpc.session.resources import Resources
from pi_rpc.session.skills import format_skills
from pi_rpc.tools import ToolDefinition

_INTRO = (
    "You are an expert coding assistant operating inside pi-rpc, a coding agent harness embedded in "
    "the user's editor. You help users by reading files, executing commands, editing code, and writing "
    "new files."
)

_BASE_GUIDELINES = (
    "Be concise in your responses",
    "Show file paths clearly when working with files",
)


def build_system_prompt(
    tools: Sequence[ToolDefinition],
    cwd: str,
    append: str | None = None,
    resources: Resources | None = None,
    custom: str | None = None,
    sections: Mapping[str, str] | None = None,
) -> str:
    """After the tools and guidelines (or the `custom` base prompt that replaces them, Pi's
    `--system-prompt`) come the appended text, the project's context files and, when `read` is
    active to load them, the skills (Pi's order); the date and the workspace; last the named
    `sections` as Pi renders them (`<name>\n…\n</name>`: the MCP servers', session/mcp_tools.py)."""
    lines = [custom] if custom else _base_prompt(tools)
    if append:
        lines += ["", append]
    if resources is not None:
        if resources.context_files:
            lines += ["", format_context_files(resources.context_files)]
        skills = format_skills(resources.skills) if any(tool.name == "read" for tool in tools) else ""
        if skills:
            lines += ["", skills]
    lines += ["", f"Current date: {datetime.date.today().isoformat()}", f"Current working directory: {cwd}"]
    for name, content in (sections or {}).items():  # after the workspace, in Pi's order
        lines += ["", f"<{name}>\n{content}\n</{name}>"]
    return "\n".join(lines)


def _base_prompt(tools: Sequence[ToolDefinition]) -> list[str]:
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
    return [*lines, "", "Guidelines:", *(f"- {rule}" for rule in guidelines)]

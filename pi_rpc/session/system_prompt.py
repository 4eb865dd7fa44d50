"""The system prompt: who the agent is, the active tools' snippets and guidelines, the workspace.

Rebuilt whenever the active tool set changes (spec 5.4), in the spirit of Pi's
`buildSystemPromptSections`: only active tools are listed, and their guidelines, deduplicated, in
order; then the user's appended text, the project's context files and the skills. As in Pi 1.6.0
the prompt is a set of named sections, which the transcript's system messages declare (a section
that changed is declared again) and no date, so that a new day keeps the provider's prompt cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pi_rpc.session.resources.context_files import format_context_files
from pi_rpc.session.resources.loading import Resources
from pi_rpc.session.resources.skills import format_skills
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
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The prompt in Pi 1.6.0's named sections, in its order: the `preamble` (the `custom` base
    prompt, Pi's `--system-prompt`, replaces it and the tools and rules), the `tools` and their
    `rules`, the appended text (`addendum`), the project's context files, the skills when `read`
    is active to load them, the workspace (`cwd`), and last the `extra` named sections (the MCP
    servers', session/mcp_tools.py). Every section but the preamble is wrapped in its name's tag,
    as Pi wraps it; the model is sent them joined (`sections_text`)."""
    sections = {"preamble": custom} if custom else _base_sections(tools)
    if append:
        sections["addendum"] = append
    if resources is not None:
        if resources.context_files:
            sections["project_context"] = format_context_files(resources.context_files)
        skills = format_skills(resources.skills) if any(tool.name == "read" for tool in tools) else ""
        if skills:
            sections["skills"] = skills
    sections["cwd"] = cwd
    sections.update(extra or {})  # after the workspace, in Pi's order
    return {
        name: text if name == "preamble" else f"<{name}>\n{text.strip()}\n</{name}>" for name, text in sections.items()
    }


def _base_sections(tools: Sequence[ToolDefinition]) -> dict[str, str]:
    listed = [f"- {tool.name}: {tool.prompt_snippet or tool.description}" for tool in tools] or ["(none)"]
    guidelines: list[str] = []
    for tool in tools:
        for rule in tool.prompt_guidelines:
            if rule not in guidelines:
                guidelines.append(rule)
    guidelines += [rule for rule in _BASE_GUIDELINES if rule not in guidelines]
    return {"preamble": _INTRO, "tools": "\n".join(listed), "rules": "\n".join(f"- {rule}" for rule in guidelines)}

"""The system prompt: who the agent is, the active tools' snippets and guidelines, the workspace.

Rebuilt whenever the active tool set changes (spec 5.4), as Pi 1.6.0's `buildSystemPromptSections`
builds it, in its words: only active tools are listed, and their guidelines, deduplicated, in
order; then the user's appended text, the project's context files and the skills. As in Pi 1.6.0
the prompt is a set of named sections, which the transcript's system messages declare (a section
that changed is declared again) and no date, so that a new day keeps the provider's prompt cache.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pi_rpc.session.resources.context_files import format_context_files
from pi_rpc.session.resources.loading import Resources
from pi_rpc.session.resources.skills import SkillReader, format_skills
from pi_rpc.tools import ToolDefinition

# Pi 1.6.0's generic texts (system-prompt.js `buildSystemPromptSections`), so the model reads the prompt
# Pi's would and a session moving between the two declares no section again. Its `docs` section is
# left out: it names Pi's installed README, docs and examples, which pi-rpc has none of (spec 5.4).
_PREAMBLE = (
    "You are a coding assistant running inside pi, a coding agent harness. Help users inspect files, "
    "run commands, and modify code."
)
_MORE_TOOLS = "Additional tools may be available."
_BASE_GUIDELINES = (
    "Be concise in your responses",
    "Show file paths clearly when working with files",
)
_SEARCH_TOOLS = ("grep", "find", "ls")
# What the model is told to list and search files with when only a shell can.
_SHELL_FILE_RULES = {
    ("bash",): "Use bash for file operations like ls, rg, find",
    ("powershell",): "Use PowerShell for file operations like listing, searching, and finding files",
    ("bash", "powershell"): "Use bash or PowerShell for file operations like listing, searching, and finding files",
}


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
    `rules`, the appended text (`addendum`), the project's context files, the skills when a tool
    can load them, the workspace (`cwd`), and last the `extra` named sections (the MCP servers',
    session/mcp_tools.py). Only the tools declared to the model count (not those only codemode
    scripts call). Every section but the preamble is wrapped in its name's tag, as Pi wraps it; the
    model is sent them joined (`sections_text`)."""
    declared = [tool for tool in tools if tool.exposure == "direct"]
    sections = {"preamble": custom} if custom else _base_sections(declared)
    if append:
        sections["addendum"] = append
    if resources is not None:
        if resources.context_files:
            sections["project_context"] = format_context_files(resources.context_files)
        reader = _skill_reader(declared, tools)
        skills = format_skills(resources.skills, reader) if reader is not None else ""
        if skills:
            sections["skills"] = skills
    sections["cwd"] = cwd.replace("\\", "/")
    sections.update(extra or {})  # after the workspace, in Pi's order
    return {name: text if name == "preamble" else f"<{name}>\n{text}\n</{name}>" for name, text in sections.items()}


def _base_sections(tools: Sequence[ToolDefinition]) -> dict[str, str]:
    """Pi's default preamble, the tools that have a snippet (one line each) and the rules."""
    listed = "\n".join(f"- {tool.name}: {tool.prompt_snippet}" for tool in tools if tool.prompt_snippet) or "(none)"
    return {"preamble": _PREAMBLE, "tools": f"{listed}\n\n{_MORE_TOOLS}", "rules": _rules(tools)}


def _rules(tools: Sequence[ToolDefinition]) -> str:
    """Pi's rules: how to search files when only a shell can, each tool's guidelines in the tools'
    order, then the base ones; each rule once."""
    names = [tool.name for tool in tools]
    shells = tuple(shell for shell in ("bash", "powershell") if shell in names)
    rules: list[str] = []
    if shells and not any(name in names for name in _SEARCH_TOOLS):
        rules.append(_SHELL_FILE_RULES[shells])
    for rule in (*(rule for tool in tools for rule in tool.prompt_guidelines), *_BASE_GUIDELINES):
        if rule.strip() and rule.strip() not in rules:
            rules.append(rule.strip())
    return "\n".join(f"- {rule}" for rule in rules)


def _skill_reader(declared: Sequence[ToolDefinition], active: Sequence[ToolDefinition]) -> SkillReader | None:
    """The tool the skills' hint names: `read`, else `bash`; `indirect` when only a codemode script
    can reach one; None when no tool can load a skill's file (no skills section)."""
    names = {tool.name for tool in declared}
    if "read" in names:
        return "read"
    if "bash" in names:
        return "bash"
    return "indirect" if any(tool.name in ("read", "bash") for tool in active) else None

"""Prompt templates: Markdown files a user invokes as `/name args`, as Pi loads and expands them.

Loaded from `{agent folder}/prompts/` then `{workspace}/.pi/prompts/` (not recursive), then any
explicit paths (files or folders). The name is the file name without `.md`; the description is
the front matter's `description`, else the body's first non-blank line (60 characters, then
"..."). Expansion substitutes `$1`, `$2`…, `${@:N}` / `${@:N:L}` slices, `$ARGUMENTS` and `$@`;
substituted values are never substituted again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pi_rpc.session.frontmatter import parse_frontmatter, text_value

Scope = Literal["user", "project", "path"]


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    description: str
    content: str
    path: str
    scope: Scope
    argument_hint: str = ""


def _load_template(path: Path, scope: Scope) -> PromptTemplate | None:
    try:
        keys, body = parse_frontmatter(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    description = text_value(keys, "description")
    if not description:
        first = next((line for line in body.split("\n") if line.strip()), "")
        description = first[:60] + ("..." if len(first) > 60 else "")
    return PromptTemplate(
        name=path.name.removesuffix(".md"),
        description=description,
        content=body,
        path=str(path),
        scope=scope,
        argument_hint=text_value(keys, "argument-hint"),
    )


def _templates_in(folder: Path, scope: Scope) -> list[PromptTemplate]:
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    loaded = (_load_template(path, scope) for path in entries if path.name.endswith(".md") and path.is_file())
    return [template for template in loaded if template is not None]


def load_prompt_templates(
    cwd: str, agent_dir: Path, extra_paths: Sequence[str] = (), include_defaults: bool = True
) -> list[PromptTemplate]:
    templates: list[PromptTemplate] = []
    if include_defaults:
        templates += _templates_in(agent_dir / "prompts", "user")
        templates += _templates_in(Path(cwd) / ".pi" / "prompts", "project")
    for raw in extra_paths:
        path = Path(cwd, Path(raw).expanduser())
        if path.is_dir():
            templates += _templates_in(path, "path")
        elif path.is_file() and path.name.endswith(".md"):
            template = _load_template(path, "path")
            if template is not None:
                templates.append(template)
    return templates


def parse_command_args(text: str) -> list[str]:
    """Split on spaces and tabs; single or double quotes group (and are dropped), as a shell would."""
    args: list[str] = []
    current = ""
    quote: str | None = None
    for char in text:
        if quote is not None:
            if char == quote:
                quote = None
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char in " \t":
            if current:
                args.append(current)
            current = ""
        else:
            current += char
    if current:
        args.append(current)
    return args


_PLACEHOLDER = re.compile(r"\$(\d+)|\$\{@:(\d+)(?::(\d+))?\}|\$ARGUMENTS|\$@")


def substitute_args(content: str, args: Sequence[str]) -> str:
    """One pass over the template, so a value that itself holds `$1` or `$@` stays as it is."""

    def replace(match: re.Match[str]) -> str:
        position, start, length = match.groups()
        if position is not None:
            index = int(position) - 1
            return args[index] if 0 <= index < len(args) else ""
        if start is not None:
            first = max(int(start) - 1, 0)  # `${@:0}` means from the first, as in bash
            return " ".join(args[first : first + int(length)] if length is not None else args[first:])
        return " ".join(args)

    return _PLACEHOLDER.sub(replace, content)


def expand_prompt_template(text: str, templates: Sequence[PromptTemplate]) -> str:
    """`/name args` becomes the template's content with the arguments substituted; any other text,
    or an unknown name, is returned as it is."""
    if not text.startswith("/"):
        return text
    name, _, rest = text[1:].partition(" ")
    template = next((t for t in templates if t.name == name), None)
    if template is None:
        return text
    return substitute_args(template.content, parse_command_args(rest))

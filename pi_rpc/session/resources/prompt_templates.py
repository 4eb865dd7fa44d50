"""Prompt templates: Markdown files a user invokes as `/name args`, as Pi loads and expands them.

Where they are found is discovery.py's. The name is the file name without `.md`; the
description is the front matter's `description`, else the body's first non-blank line (60
characters, then "..."). When two have a name, the first loaded wins (the order of precedence)
and the other is dropped with a warning. Expansion substitutes `$1`, `$2`…, `${@:N}` /
`${@:N:L}` slices, `$ARGUMENTS` and `$@`; substituted values are never substituted again.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from pi_rpc.session.resources.discovery import ResourceOrigin, Walk, markdown_files
from pi_rpc.session.resources.frontmatter import parse_frontmatter, text_value
from pi_rpc.session.resources.limits import LoadBudget, read_bounded

_log = logging.getLogger(__name__)


class PromptTemplate(msgspec.Struct, frozen=True):
    name: str
    description: str
    content: str
    path: str
    origin: ResourceOrigin
    argument_hint: str = ""


def _load_template(path: Path, origin: ResourceOrigin, budget: LoadBudget) -> PromptTemplate | None:
    text = read_bounded(path, budget, "prompt template", strict=True)
    if text is None:
        return None
    keys, body = parse_frontmatter(text)
    description = text_value(keys, "description")
    if not description:
        first = next((line for line in body.split("\n") if line.strip()), "")
        description = first[:60] + ("..." if len(first) > 60 else "")
    return PromptTemplate(
        name=path.name.removesuffix(".md"),
        description=description,
        content=body,
        path=str(path),
        origin=origin,
        argument_hint=text_value(keys, "argument-hint"),
    )


def load_prompt_templates(
    paths: Sequence[Path], origin_of: Callable[[Path], ResourceOrigin], budget: LoadBudget
) -> list[PromptTemplate]:
    """The templates at `paths` (`.md` files, or folders: every `.md` file directly in one, the
    command line's), in order, within the load's bounds; `origin_of` tells where each file came
    from."""
    loaded: dict[str, PromptTemplate] = {}
    for path in paths:
        if path.is_dir():
            files = markdown_files(path, Walk(budget.source(path)), recursive=False, filtered=False)
        elif path.is_file() and path.name.endswith(".md"):
            files = [path]
        else:
            if not path.exists():
                _log.warning("prompt template path %s does not exist", path)
            continue
        for file in files:
            template = _load_template(file, origin_of(file), budget)
            if template is None:
                continue
            if template.name in loaded:
                _log.warning(
                    "prompt template /%s at %s ignored: %s has the same name",
                    template.name,
                    file,
                    loaded[template.name].path,
                )
            else:
                loaded[template.name] = template
    return list(loaded.values())


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

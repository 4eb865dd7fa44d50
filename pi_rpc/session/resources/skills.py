"""Skills: Markdown instructions the model reads on demand, listed in the system prompt, and that a
user invokes as `/skill:name args`, as Pi loads them.

Where they are found is discovery.py's: a folder searched for skills yields its
`SKILL.md` if it has one (nothing below it is searched then), else the skills of its subfolders,
and the `.md` files at the top of the search are skills too. A skill needs a front matter
`description`; its name is the front matter's `name`, else its folder's. When two have a name,
the first loaded wins (the order of precedence) and the other is dropped with a warning.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from pi_rpc.session.resources.discovery import ResourceOrigin, Walk, skill_files
from pi_rpc.session.resources.frontmatter import parse_frontmatter, text_value
from pi_rpc.session.resources.limits import LoadBudget, read_bounded

_log = logging.getLogger(__name__)


class Skill(msgspec.Struct, frozen=True):
    name: str
    description: str
    path: str
    base_dir: str  # the skill's folder: what its relative references are relative to
    origin: ResourceOrigin
    disable_model_invocation: bool = False
    # The file the load checked (symlinks resolved); `/skill:name` reads only that same file, so a
    # symlink swapped in after the load (by a command the model ran, say) is not followed.
    real_path: str = ""


def _load_skill(path: Path, origin: ResourceOrigin, budget: LoadBudget) -> Skill | None:
    text = read_bounded(path, budget, "skill", strict=True)
    if text is None:
        return None
    keys, _ = parse_frontmatter(text)
    description = text_value(keys, "description").strip()
    if not description:
        _log.warning("skill %s has no description and is skipped", path)
        return None
    return Skill(
        name=text_value(keys, "name") or path.parent.name,
        description=description,
        path=str(path),
        base_dir=str(path.parent),
        origin=origin,
        disable_model_invocation=keys.get("disable-model-invocation") is True,
        real_path=os.path.realpath(path),
    )


def load_skills(paths: Sequence[Path], origin_of: Callable[[Path], ResourceOrigin], budget: LoadBudget) -> list[Skill]:
    """The skills at `paths` (skill files, or folders searched for them: the command line's, the
    user's own), in order, within the load's bounds; `origin_of` tells where each file came from."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += skill_files(path, Walk(budget.source(path)))
        elif path.is_file() and path.name.endswith(".md"):
            files.append(path)
        elif path.exists():
            _log.warning("skill path %s is not a Markdown file", path)
        else:
            _log.warning("skill path %s does not exist", path)
    loaded: dict[str, Skill] = {}
    read: set[str] = set()  # a file reached twice (a symlink) counts once
    for file in files:
        if (real := os.path.realpath(file)) in read or (skill := _load_skill(file, origin_of(file), budget)) is None:
            continue
        if skill.name in loaded:
            _log.warning("skill %r at %s ignored: %s has the same name", skill.name, file, loaded[skill.name].path)
        else:
            loaded[skill.name] = skill
            read.add(real)
    return list(loaded.values())


# How the model can load a skill's file: with `read`, with `bash`, or only through another tool
# (codemode), as Pi 1.6.0's prompt says it.
SkillReader = Literal["read", "bash", "indirect"]
_LOAD_HINTS: dict[SkillReader, str] = {
    "read": "Use the read tool to load a skill's file when the task matches its description.",
    "bash": "Use bash to load a skill's file when the task matches its description.",
    "indirect": "Load a skill's file when the task matches its description.",
}


def format_skills(skills: Sequence[Skill], reader: SkillReader = "read") -> str:
    """The system prompt's list of skills the model may load (with `reader`), in Pi 1.6.0's words;
    empty when there are none."""
    visible = [skill for skill in skills if not skill.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "The following skills provide specialized instructions for specific tasks.",
        _LOAD_HINTS[reader],
        "Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{_xml_escaped(skill.name)}</name>",
            f"    <description>{_xml_escaped(skill.description)}</description>",
            f"    <location>{_xml_escaped(skill.path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


# XML's five entities, as Pi escapes a skill's fields (xml.sax.saxutils would do the same, but it
# imports urllib.request and costs the daemon about 2.7 MiB of memory for this one function).
_XML_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"})


def _xml_escaped(text: str) -> str:
    return text.translate(_XML_ENTITIES)


def expand_skill_command(text: str, skills: Sequence[Skill]) -> str:
    """`/skill:name args` becomes the skill's instructions (then the arguments); any other text, or an
    unknown skill, is returned as it is."""
    if not text.startswith("/skill:"):
        return text
    name, _, rest = text[len("/skill:") :].partition(" ")
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text
    if os.path.realpath(skill.path) != skill.real_path:
        _log.warning("skill %s now resolves to another file than when it was loaded; not expanded", skill.path)
        return text
    content = read_bounded(Path(skill.path), None, "skill", strict=True)
    if content is None:
        return text
    _, body = parse_frontmatter(content)
    block = (
        f'<skill name="{skill.name}" location="{skill.path}">\n'
        f"References are relative to {skill.base_dir}.\n\n{body.strip()}\n</skill>"
    )
    args = rest.strip()
    return f"{block}\n\n{args}" if args else block

"""Skills: Markdown instructions the model reads on demand, listed in the system prompt, and that a
user invokes as `/skill:name args`, as Pi loads them.

Loaded from `{agent folder}/skills/` then `{workspace}/.pi/skills/`, then explicit paths. In a
folder that holds a `SKILL.md`, that file is the skill and nothing below it is searched; otherwise
subfolders are searched, and the top folder's own `.md` files are skills too. Hidden entries and
node_modules are skipped, and so is what the `.gitignore`, `.ignore` and `.fdignore` files met on
the way ignore (their rules are relative to the skills folder, as in Pi; the workspace's own
`.gitignore` above it does not count). A skill needs a front matter `description`; its name is the
front matter's `name`, else its folder's. The first skill of a name wins.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from pi_rpc.session.frontmatter import parse_frontmatter, text_value
from pi_rpc.session.gitignore import IgnoreRules

_log = logging.getLogger(__name__)

# Read in every folder searched, their rules relative to the skills folder (Pi's skill loader).
IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    path: str
    base_dir: str
    scope: str
    disable_model_invocation: bool = False


def _load_skill(path: Path, scope: str) -> Skill | None:
    try:
        keys, _ = parse_frontmatter(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        _log.warning("skill %s cannot be read: %s", path, exc)
        return None
    description = text_value(keys, "description").strip()
    if not description:
        _log.warning("skill %s has no description and is skipped", path)
        return None
    return Skill(
        name=text_value(keys, "name") or path.parent.name,
        description=description,
        path=str(path),
        base_dir=str(path.parent),
        scope=scope,
        disable_model_invocation=keys.get("disable-model-invocation") is True,
    )


def _prefixed(line: str, prefix: str) -> str | None:
    """A line of an ignore file in folder `prefix` as a rule relative to the skills folder (Pi's
    `prefixIgnorePattern`); None for a blank line or a comment."""
    trimmed = line.strip()
    if not trimmed or trimmed.startswith("#"):
        return None
    negated = line.startswith("!")
    pattern = line[1:] if negated or line.startswith("\\!") else line
    pattern = pattern.removeprefix("/")
    return ("!" if negated else "") + prefix + pattern


def _add_ignore_files(rules: IgnoreRules, folder: Path, root: Path) -> None:
    relative = folder.relative_to(root).as_posix()
    prefix = "" if relative == "." else f"{relative}/"
    for name in IGNORE_FILE_NAMES:
        try:
            lines = (folder / name).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        rules.add(rule for line in lines if (rule := _prefixed(line, prefix)) is not None)


def _skills_in(
    folder: Path, scope: str, top: bool = True, root: Path | None = None, rules: IgnoreRules | None = None
) -> list[Skill]:
    root = root or folder
    rules = rules if rules is not None else IgnoreRules()
    if not folder.is_dir():
        return []
    _add_ignore_files(rules, folder, root)
    skill_file = folder / "SKILL.md"
    if skill_file.is_file() and not rules.ignores(skill_file.relative_to(root).as_posix()):
        skill = _load_skill(skill_file, scope)
        return [skill] if skill is not None else []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    found: list[Skill] = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        relative = entry.relative_to(root).as_posix()
        is_dir = entry.is_dir()
        if rules.ignores(f"{relative}/" if is_dir else relative):
            continue
        if is_dir:
            found += _skills_in(entry, scope, top=False, root=root, rules=rules)
        elif top and entry.name.endswith(".md") and entry.is_file():
            skill = _load_skill(entry, scope)
            if skill is not None:
                found.append(skill)
    return found


def load_skills(
    cwd: str, agent_dir: Path, extra_paths: Sequence[str] = (), include_defaults: bool = True
) -> list[Skill]:
    found: list[Skill] = []
    if include_defaults:
        found += _skills_in(agent_dir / "skills", "user")
        found += _skills_in(Path(cwd) / ".pi" / "skills", "project")
    for raw in extra_paths:
        path = Path(cwd, Path(raw).expanduser())
        if path.is_dir():
            found += _skills_in(path, "path")
        elif path.is_file():
            skill = _load_skill(path, "path")
            found += [skill] if skill is not None else []
    unique: dict[str, Skill] = {}
    for skill in found:
        if skill.name in unique:
            _log.warning(
                "skill %r at %s ignored: %s has the same name", skill.name, skill.path, unique[skill.name].path
            )
        else:
            unique[skill.name] = skill
    return list(unique.values())


def format_skills(skills: Sequence[Skill]) -> str:
    """The system prompt's list of skills the model may read; empty when there are none."""
    visible = [skill for skill in skills if not skill.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "The following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory (parent of "
        "SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    quote = {'"': "&quot;", "'": "&apos;"}
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{escape(skill.name, quote)}</name>",
            f"    <description>{escape(skill.description, quote)}</description>",
            f"    <location>{escape(skill.path, quote)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def expand_skill_command(text: str, skills: Sequence[Skill]) -> str:
    """`/skill:name args` becomes the skill's instructions (then the arguments); any other text, or an
    unknown skill, is returned as it is."""
    if not text.startswith("/skill:"):
        return text
    name, _, rest = text[len("/skill:") :].partition(" ")
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text
    try:
        _, body = parse_frontmatter(Path(skill.path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        _log.warning("skill %s cannot be read: %s", skill.path, exc)
        return text
    block = (
        f'<skill name="{skill.name}" location="{skill.path}">\n'
        f"References are relative to {skill.base_dir}.\n\n{body.strip()}\n</skill>"
    )
    args = rest.strip()
    return f"{block}\n\n{args}" if args else block

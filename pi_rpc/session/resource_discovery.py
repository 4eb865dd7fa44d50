"""Where skills and prompt templates are found, as Pi's package manager resolves them (spec 18.3-18.5).

In order of precedence (when two of a name are loaded, the first wins and the other is dropped):
1. the project settings' entries (`skills`, `prompts` in `<workspace>/.pi/settings.json`),
   relative to `<workspace>/.pi`;
2. the project's folders: `.pi/skills`, then `.agents/skills` in the workspace and in each folder
   above it up to the git repository's root (the nearest folder holding `.git`; without one, up
   to the filesystem root), and `.pi/prompts`;
3. the user settings' entries, relative to the settings file's folder;
4. the user's folders: `{agent folder}/skills`, `~/.agents/skills`, `{agent folder}/prompts`;
then the paths given on the command line (`--skill`, `--prompt-template`), relative to the
workspace. A file met twice (a symlink, a folder listed twice) counts once.

A settings entry is a path (a file, or a folder searched as below; `~` is the home folder) or a
pattern, matched as minimatch matches (path_patterns.py) against the file's path relative to the
settings' folder, its name and its absolute path (for a `SKILL.md`, its folder's too): a plain
glob keeps only the entries' files it matches, `!glob` drops what it matches, `+path` brings back
an exact path and `-path` drops one, in that order. The `!`, `+` and `-` entries also filter the
folders of the same scope (2 or 4): `"!old-skill"` turns off a skill found there.

Folders are searched as Pi searches them: skills as skills.py says (`.agents/skills` without the
loose `.md` files at its top); prompt templates are the `.md` files directly in the folder, and
in a folder a settings entry names, in its subfolders too. Hidden entries and `node_modules` are
skipped, as is what the `.gitignore`, `.ignore` and `.fdignore` files met on the way ignore. A
folder given on the command line holds templates: every `.md` file directly in it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from pi_rpc.session.gitignore import IgnoreRules, add_ignore_files
from pi_rpc.session.path_patterns import glob_matches

Kind = Literal["skills", "prompts"]


@dataclass(frozen=True)
class ResourceOrigin:
    """Where a skill or template was found, in the terms of Pi's `sourceInfo`: `auto` for the
    folders searched by default, `local` for a settings entry or a command-line path (scope
    `temporary`). `base_dir` as Pi gives it: the `.pi` folder or the agent folder for `auto`,
    the file's folder for the command line, none for a settings entry."""

    source: Literal["auto", "local"]
    scope: Literal["user", "project", "temporary"]
    base_dir: str | None = None


@dataclass(frozen=True)
class SettingsEntries:
    """A settings file's `skills` and `prompts` entries, and the folder they are relative to."""

    base_dir: Path
    skills: Sequence[str] = ()
    prompts: Sequence[str] = ()


@dataclass(frozen=True)
class Found:
    path: Path
    origin: ResourceOrigin
    enabled: bool  # False: a settings pattern turned it off (and no later place brings it back)


def _searchable(folder: Path, root: Path, rules: IgnoreRules) -> list[tuple[Path, bool]]:
    """`folder`'s entries, sorted, with whether each is a folder: not hidden, not `node_modules`,
    not ignored by the ignore files met from `root` down to here."""
    add_ignore_files(rules, folder, root)
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    kept = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        is_dir = entry.is_dir()  # through a symlink, as Pi stats one
        relative = entry.relative_to(root).as_posix()
        if not rules.ignores(f"{relative}/" if is_dir else relative):
            kept.append((entry, is_dir))
    return kept


def skill_files(
    folder: Path, root_files: bool = True, root: Path | None = None, rules: IgnoreRules | None = None
) -> list[Path]:
    """The skill files under `folder`: its `SKILL.md` if it has one (nothing below it then), else
    those of its subfolders, and with `root_files` the `.md` files at the top of the search."""
    root = root or folder
    rules = rules if rules is not None else IgnoreRules()
    if not folder.is_dir():
        return []
    entries = _searchable(folder, root, rules)
    skill = folder / "SKILL.md"
    if skill.is_file() and not rules.ignores(skill.relative_to(root).as_posix()):
        return [skill]
    found: list[Path] = []
    for entry, is_dir in entries:
        if is_dir:
            found += skill_files(entry, root_files, root, rules)
        elif root_files and folder == root and entry.name.endswith(".md") and entry.is_file():
            found.append(entry)
    return found


def markdown_files(folder: Path, recursive: bool, filtered: bool = True) -> list[Path]:
    """The `.md` files in `folder` (and its subfolders when `recursive`); not `filtered`, every
    one directly in it, hidden or ignored (a command-line folder, as Pi reads one)."""
    if not filtered:
        try:
            return [p for p in sorted(folder.iterdir()) if p.name.endswith(".md") and p.is_file()]
        except OSError:
            return []

    def walk(current: Path, rules: IgnoreRules) -> list[Path]:
        found: list[Path] = []
        for entry, is_dir in _searchable(current, folder, rules):
            if is_dir and recursive:
                found += walk(entry, rules)
            elif not is_dir and entry.name.endswith(".md") and entry.is_file():
                found.append(entry)
        return found

    return walk(folder, IgnoreRules()) if folder.is_dir() else []


def expand_path(entry: str, base: Path) -> Path:
    """A settings entry as a normalised absolute path: `~` is the home folder, else relative to
    `base`."""
    entry = entry.strip()
    if entry.startswith("~"):
        base, entry = Path.home(), entry[1:].removeprefix("/")
    return Path(os.path.normpath(base / entry))


def _is_pattern(entry: str) -> bool:
    return entry.startswith(("!", "+", "-")) or "*" in entry or "?" in entry


def _candidates(path: Path, base: Path) -> tuple[list[str], list[str]]:
    """What a glob may match for `path` (relative path, name, absolute path; a skill's folder's
    too), and what an exact `+`/`-` path may equal."""
    relative = os.path.relpath(path, base)
    globbed, exact = [relative, path.name, str(path)], [relative, str(path)]
    if path.name == "SKILL.md":
        parent_relative = os.path.relpath(path.parent, base)
        globbed += [parent_relative, path.parent.name, str(path.parent)]
        exact += [parent_relative, str(path.parent)]
    return globbed, exact


def _matches_glob(path: Path, patterns: Sequence[str], base: Path) -> bool:
    globbed, _ = _candidates(path, base)
    return any(glob_matches(candidate, pattern) for pattern in patterns for candidate in globbed)


def _matches_exact(path: Path, patterns: Sequence[str], base: Path) -> bool:
    _, exact = _candidates(path, base)
    return any(pattern.removeprefix("./") in exact for pattern in patterns)


def _enabled(path: Path, entries: Sequence[str], base: Path, includes_filter: bool) -> bool:
    """Whether the entries' patterns keep `path`: plain globs (only when `includes_filter`: a
    settings entry's own files), then `!`, then `+`, then `-`."""
    excludes = [e[1:] for e in entries if e.startswith("!")]
    force_in = [e[1:] for e in entries if e.startswith("+")]
    force_out = [e[1:] for e in entries if e.startswith("-")]
    includes = [e for e in entries if includes_filter and _is_pattern(e) and e[0] not in "!+-"]
    enabled = not includes or _matches_glob(path, includes, base)
    enabled = enabled and not (excludes and _matches_glob(path, excludes, base))
    enabled = enabled or _matches_exact(path, force_in, base)
    return enabled and not _matches_exact(path, force_out, base)


def _files_of(kind: Kind, path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        return skill_files(path) if kind == "skills" else markdown_files(path, recursive=True)
    return []


def _ancestor_agents_folders(cwd: Path) -> list[Path]:
    """`.agents/skills` in `cwd` and each folder above it, up to the git root (or the top)."""
    folders = [cwd, *cwd.parents]
    git_root = next((f for f in folders if (f / ".git").exists()), None)
    if git_root is not None:
        folders = folders[: folders.index(git_root) + 1]
    return [folder / ".agents" / "skills" for folder in folders]


def _rank(origin: ResourceOrigin) -> int:
    return (0 if origin.scope == "project" else 2) + (origin.source == "auto")


def discover(kind: Kind, cwd: Path, agent_dir: Path, project: SettingsEntries, user: SettingsEntries) -> list[Found]:
    """Every `kind` file the settings and folders name, in precedence order, each path once."""
    found: dict[Path, Found] = {}  # the first place a path is met decides its origin and state

    def add(paths: Sequence[Path], origin: ResourceOrigin, entries: Sequence[str], base: Path, own: bool) -> None:
        for path in paths:
            found.setdefault(path, Found(path, origin, _enabled(path, entries, base, includes_filter=own)))

    project_entries = project.skills if kind == "skills" else project.prompts
    user_entries = user.skills if kind == "skills" else user.prompts
    for entries, base, origin in (
        (project_entries, project.base_dir, ResourceOrigin("local", "project")),
        (user_entries, user.base_dir, ResourceOrigin("local", "user")),
    ):
        plain = [expand_path(e, base) for e in entries if not _is_pattern(e)]
        add([file for path in plain for file in _files_of(kind, path)], origin, entries, base, own=True)
    home_agents = Path.home() / ".agents" / "skills"
    if kind == "skills":
        agents = [f for f in _ancestor_agents_folders(cwd) if f != home_agents]
        project_files = [*skill_files(cwd / ".pi" / "skills"), *(p for f in agents for p in skill_files(f, False))]
        user_files = [*skill_files(agent_dir / "skills"), *skill_files(home_agents, root_files=False)]
    else:
        project_files = markdown_files(cwd / ".pi" / "prompts", recursive=False)
        user_files = markdown_files(agent_dir / "prompts", recursive=False)
    add(project_files, ResourceOrigin("auto", "project", str(cwd / ".pi")), project_entries, project.base_dir, False)
    add(user_files, ResourceOrigin("auto", "user", str(agent_dir)), user_entries, user.base_dir, False)
    ranked = sorted(found.values(), key=lambda f: _rank(f.origin))  # stable: met order within a rank
    seen: set[str] = set()
    unique = []
    for entry in ranked:
        if (real := os.path.realpath(entry.path)) not in seen:
            seen.add(real)
            unique.append(entry)
    return unique


def command_line_origin(kind: Kind, path: Path, cwd: Path, agent_dir: Path) -> ResourceOrigin:
    """The origin Pi gives a file loaded from a `--skill`/`--prompt-template` path: `temporary`,
    unless it lies in a folder searched by default."""
    folder = "skills" if kind == "skills" else "prompts"
    for origin, root in (
        (ResourceOrigin("local", "user"), agent_dir / folder),
        (ResourceOrigin("local", "project"), cwd / ".pi" / folder),
    ):
        if path.is_relative_to(root):
            return replace(origin, base_dir=str(path.parent if kind == "skills" else root))
    return ResourceOrigin("local", "temporary", str(path.parent))


def files_to_load(
    kind: Kind,
    cwd: Path,
    agent_dir: Path,
    settings: tuple[SettingsEntries, SettingsEntries],
    command_line: Sequence[str],
    include_found: bool,
) -> tuple[list[Path], Callable[[Path], ResourceOrigin]]:
    """The paths to load, in precedence order (what `discover` found and keeps, unless
    `include_found` is False, as Pi's `--no-skills` leaves it out; then the command line's), and
    the origin of each file loaded from them."""
    found = discover(kind, cwd, agent_dir, *settings) if include_found else []
    paths: list[Path] = []
    seen: set[str] = set()
    # A command-line path is relative to the workspace, `~` included (a shell expands it), as in Pi.
    given = [Path(os.path.normpath(cwd / p)) for p in command_line]
    for path in [*(f.path for f in found if f.enabled), *given]:
        if (real := os.path.realpath(path)) not in seen:
            seen.add(real)
            paths.append(path)
    origins = {f.path: f.origin for f in found}
    return paths, lambda file: origins.get(file) or command_line_origin(kind, file, cwd, agent_dir)

"""Where skills and prompt templates are found, as Pi's package manager resolves them (spec 17.3-17.5).

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

An untrusted workspace (`include_workspace` False) has no places of its own: neither 1 nor 2,
as Pi 1.6.0 leaves an untrusted project's out (its settings are not read, so their filters do
not apply to the user's places either).

Unlike Pi, what a workspace holds stays inside it (docs/BEHAVIOUR.md, 17.8): a workspace settings
entry naming a place outside the workspace is ignored, and a file or folder of the project's
places (an ancestor's `.agents/skills`: of that ancestor) that resolves outside is skipped, each
with a warning; the user's places may point anywhere. Every source is walked within the load's
bounds (limits.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from pi_rpc.session.resources.gitignore import IgnoreRules, add_ignore_files
from pi_rpc.session.resources.limits import LoadBudget, SourceBudget, resolves_inside
from pi_rpc.session.resources.path_patterns import glob_matches

Kind = Literal["skills", "prompts"]


class ResourceOrigin(msgspec.Struct, frozen=True):
    """Where a skill or template was found, in the terms of Pi's `sourceInfo`: `auto` for the
    folders searched by default, `local` for a settings entry or a command-line path (scope
    `temporary`). `base_dir` as Pi 1.6.0 gives it: the `.pi` folder or the agent folder for
    `auto` (for a skill of an `.agents/skills` folder, that `.agents` folder), the file's folder
    for the command line, none for a settings entry."""

    source: Literal["auto", "local"]
    scope: Literal["user", "project", "temporary"]
    base_dir: str | None = None


class SettingsEntries(msgspec.Struct, frozen=True):
    """A settings file's `skills` and `prompts` entries, the folder they are relative to, and for
    a workspace's settings the tree they must stay in."""

    base_dir: Path
    skills: Sequence[str] = ()
    prompts: Sequence[str] = ()
    bound: Path | None = None  # a workspace's: the workspace, outside which its entries are ignored


class Found(msgspec.Struct, frozen=True):
    path: Path
    origin: ResourceOrigin
    enabled: bool  # False: a settings pattern turned it off (and no later place brings it back)
    real: str = ""  # the resolved path, once `discover` has resolved it (each file is resolved once)


class Walk(msgspec.Struct, frozen=True):
    """One source's search: its share of the load's bounds, and the tree its files must resolve
    inside (None: anywhere, for the user's own places)."""

    budget: SourceBudget
    bound: Path | None = None

    def admits(self, path: Path) -> bool:
        """Whether `path` may be used: inside the bound, else skipped with a warning naming it."""
        if self.bound is None or resolves_inside(path, self.bound):
            return True
        self.budget.load.warn(f"resources: {path} is skipped: it resolves outside {self.bound}")
        return False


def _listing(folder: Path, walk: Walk) -> list[os.DirEntry[str]]:
    """`folder`'s entries, sorted by name, no more than the source may still look at."""
    entries: list[os.DirEntry[str]] = []
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                if not walk.budget.take():
                    break
                entries.append(entry)
    except OSError:
        return []
    return sorted(entries, key=lambda entry: entry.name)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # through a symlink, as Pi stats one
    except OSError:
        return False


def _searchable(folder: Path, root: Path, rules: IgnoreRules, walk: Walk) -> list[tuple[Path, bool]]:
    """`folder`'s entries, sorted, with whether each is a folder: not hidden, not `node_modules`,
    not ignored by the ignore files met from `root` down to here, not a symlink out of the bound."""
    add_ignore_files(rules, folder, root, walk.budget.load)
    kept = []
    for entry in _listing(folder, walk):
        if entry.name.startswith(".") or entry.name == "node_modules":
            continue
        path = folder / entry.name
        if entry.is_symlink() and not walk.admits(path):
            continue
        is_dir = _is_dir(entry)
        relative = path.relative_to(root).as_posix()
        if not rules.ignores(f"{relative}/" if is_dir else relative):
            kept.append((path, is_dir))
    return kept


def skill_files(
    folder: Path, walk: Walk, root_files: bool = True, root: Path | None = None, rules: IgnoreRules | None = None
) -> list[Path]:
    """The skill files under `folder`: its `SKILL.md` if it has one (nothing below it then), else
    those of its subfolders, and with `root_files` the `.md` files at the top of the search."""
    if root is None:  # the top of a search: the folder itself must lie inside the bound
        if not folder.is_dir() or not walk.admits(folder):
            return []
        root = folder
    rules = rules if rules is not None else IgnoreRules()
    skill = folder / "SKILL.md"
    add_ignore_files(rules, folder, root, walk.budget.load)
    if skill.is_file() and not rules.ignores(skill.relative_to(root).as_posix()):
        return [skill] if walk.admits(skill) else []  # a skill's folder is not listed: it may be large
    found: list[Path] = []
    for entry, is_dir in _searchable(folder, root, rules, walk):
        if is_dir:
            found += skill_files(entry, walk, root_files, root, rules)
        elif root_files and folder == root and entry.name.endswith(".md") and entry.is_file():
            found.append(entry)
    return found


def markdown_files(folder: Path, walk: Walk, recursive: bool, filtered: bool = True) -> list[Path]:
    """The `.md` files in `folder` (and its subfolders when `recursive`); not `filtered`, every
    one directly in it, hidden or ignored (a command-line folder, as Pi reads one)."""
    if not folder.is_dir() or not walk.admits(folder):
        return []
    if not filtered:
        return [
            path
            for entry in _listing(folder, walk)
            if entry.name.endswith(".md") and (path := folder / entry.name).is_file() and walk.admits(path)
        ]

    def search(current: Path, rules: IgnoreRules) -> list[Path]:
        found: list[Path] = []
        for entry, is_dir in _searchable(current, folder, rules, walk):
            if is_dir and recursive:
                found += search(entry, rules)
            elif not is_dir and entry.name.endswith(".md") and entry.is_file():
                found.append(entry)
        return found

    return search(folder, IgnoreRules())


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
    enabled = enabled or bool(force_in and _matches_exact(path, force_in, base))
    return enabled and not (force_out and _matches_exact(path, force_out, base))


def _files_of(kind: Kind, path: Path, walk: Walk) -> list[Path]:
    if path.is_file():
        return [path] if walk.admits(path) else []
    if path.is_dir():
        return skill_files(path, walk) if kind == "skills" else markdown_files(path, walk, recursive=True)
    return []


def _entry_paths(kind: Kind, settings: SettingsEntries, budget: LoadBudget) -> list[Path]:
    """The files of a settings file's plain entries. A workspace's entry naming a place outside
    the workspace (symlinks resolved) is ignored with a warning: a repository's settings cannot
    make pi-rpc read the user's other files."""
    files: list[Path] = []
    for entry in settings.skills if kind == "skills" else settings.prompts:
        if _is_pattern(entry):
            continue
        path = expand_path(entry, settings.base_dir)
        if settings.bound is not None and not resolves_inside(path, settings.bound):
            budget.warn(
                f"resources: {settings.base_dir / 'settings.json'}: {kind} entry {entry!r} is ignored:"
                f" a workspace's settings may not name a place outside the workspace ({settings.bound})"
            )
            continue
        files += _files_of(kind, path, Walk(budget.source(path), settings.bound))
    return files


def ancestor_agents_folders(cwd: Path) -> list[Path]:
    """`.agents/skills` in `cwd` and each folder above it, up to the git root (or the top): the
    project's, so not the user's own `~/.agents/skills` met on the way."""
    folders = [cwd, *cwd.parents]
    git_root = next((f for f in folders if (f / ".git").exists()), None)
    if git_root is not None:
        folders = folders[: folders.index(git_root) + 1]
    home_agents = Path.home() / ".agents" / "skills"
    return [path for folder in folders if (path := folder / ".agents" / "skills") != home_agents]


def _rank(origin: ResourceOrigin) -> int:
    return (0 if origin.scope == "project" else 2) + (origin.source == "auto")


def discover(
    kind: Kind,
    cwd: Path,
    agent_dir: Path,
    project: SettingsEntries,
    user: SettingsEntries,
    budget: LoadBudget,
    include_workspace: bool = True,
) -> list[Found]:
    """Every `kind` file the settings and folders name, in precedence order, each path once. What
    the project's folders hold must resolve inside the workspace; an ancestor's `.agents/skills`,
    inside that ancestor; the user's places may point anywhere. Without `include_workspace` (an
    untrusted folder) the project's settings and folders are not searched at all."""
    found: dict[Path, Found] = {}  # the first place a path is met decides its origin and state

    def add(paths: Sequence[Path], origin: ResourceOrigin, entries: Sequence[str], base: Path, own: bool) -> None:
        for path in paths:
            found.setdefault(path, Found(path, origin, _enabled(path, entries, base, includes_filter=own)))

    project_entries = project.skills if kind == "skills" else project.prompts
    user_entries = user.skills if kind == "skills" else user.prompts
    if not include_workspace:
        project = SettingsEntries(project.base_dir)
    for settings, origin in ((project, ResourceOrigin("local", "project")), (user, ResourceOrigin("local", "user"))):
        entries = settings.skills if kind == "skills" else settings.prompts
        add(_entry_paths(kind, settings, budget), origin, entries, settings.base_dir, own=True)

    def walk(folder: Path, bound: Path | None) -> Walk:
        return Walk(budget.source(folder), bound)

    def add_agents(folder: Path, scope: Literal["user", "project"], entries: Sequence[str], bound: Path | None) -> None:
        """An `.agents/skills` folder's skills, whose base is that `.agents` folder, as Pi 1.6.0
        names it (`baseDir`) and matches the settings' entries against it."""
        agents = folder.parent
        files = skill_files(folder, walk(folder, bound), root_files=False)
        add(files, ResourceOrigin("auto", scope, str(agents)), entries, agents, False)

    project_origin = ResourceOrigin("auto", "project", str(cwd / ".pi"))
    user_origin = ResourceOrigin("auto", "user", str(agent_dir))
    if kind == "skills":
        if include_workspace:
            pi_skills = cwd / ".pi" / "skills"
            add(skill_files(pi_skills, walk(pi_skills, cwd)), project_origin, project_entries, project.base_dir, False)
            for folder in ancestor_agents_folders(cwd):
                add_agents(folder, "project", project_entries, folder.parent.parent)
        user_skills = agent_dir / "skills"
        add(skill_files(user_skills, walk(user_skills, None)), user_origin, user_entries, user.base_dir, False)
        add_agents(Path.home() / ".agents" / "skills", "user", user_entries, None)
    else:
        if include_workspace:
            prompts = cwd / ".pi" / "prompts"
            files = markdown_files(prompts, walk(prompts, cwd), recursive=False)
            add(files, project_origin, project_entries, project.base_dir, False)
        user_prompts = agent_dir / "prompts"
        files = markdown_files(user_prompts, walk(user_prompts, None), recursive=False)
        add(files, user_origin, user_entries, user.base_dir, False)
    ranked = sorted(found.values(), key=lambda f: _rank(f.origin))  # stable: met order within a rank
    seen: set[str] = set()
    unique = []
    for entry in ranked:
        if (real := os.path.realpath(entry.path)) not in seen:
            seen.add(real)
            unique.append(msgspec.structs.replace(entry, real=real))
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
            return msgspec.structs.replace(origin, base_dir=str(path.parent if kind == "skills" else root))
    return ResourceOrigin("local", "temporary", str(path.parent))


def files_to_load(
    kind: Kind,
    cwd: Path,
    agent_dir: Path,
    settings: tuple[SettingsEntries, SettingsEntries],
    command_line: Sequence[str],
    include_found: bool,
    budget: LoadBudget,
    include_workspace: bool = True,
) -> tuple[list[Path], Callable[[Path], ResourceOrigin]]:
    """The paths to load, in precedence order (what `discover` found and keeps, unless
    `include_found` is False, as Pi's `--no-skills` leaves it out; then the command line's), and
    the origin of each file loaded from them. `include_workspace`: as `discover` takes it."""
    found = discover(kind, cwd, agent_dir, *settings, budget, include_workspace) if include_found else []
    paths: list[Path] = []
    seen: set[str] = set()
    # A command-line path is relative to the workspace, `~` included (a shell expands it), as in Pi.
    given = [Path(os.path.normpath(cwd / p)) for p in command_line]
    for path, known in [*((f.path, f.real) for f in found if f.enabled), *((p, "") for p in given)]:
        if (real := known or os.path.realpath(path)) not in seen:
            seen.add(real)
            paths.append(path)
    origins = {f.path: f.origin for f in found}
    return paths, lambda file: origins.get(file) or command_line_origin(kind, file, cwd, agent_dir)

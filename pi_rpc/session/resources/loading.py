"""What a session loads from the user's and the project's folders: context files, prompt templates,
skills, and a replacement or an addition to the system prompt (`SYSTEM.md`, `APPEND_SYSTEM.md` in
the project's `.pi/` folder, else the agent folder). Loaded when a session starts and again whenever
it becomes another session (new, loaded, switched to, forked, cloned), as Pi reloads them, settings
files included.

An untrusted workspace (session/configuration/trust.py) gets none of its own resources, as Pi 1.6.0 leaves an
untrusted project's out: not its settings' `skills`/`prompts` entries, not `.pi/skills`,
`.pi/prompts`, the `.agents/skills` folders of the workspace and above it, `.pi/SYSTEM.md` or
`.pi/APPEND_SYSTEM.md`. Its `AGENTS.md`/`CLAUDE.md` still load (Pi loads them too: they are text
for the model, they enable nothing), as does everything of the user's and the command line's."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import msgspec

from pi_rpc.ai import pi_agent_dir
from pi_rpc.session.configuration.settings import (
    SettingsError,
    load_settings,
    settings_paths,
    skill_entries,
    workspace_settings_path,
)
from pi_rpc.session.resources.context_files import ContextFile, load_context_files
from pi_rpc.session.resources.discovery import ResourceOrigin, SettingsEntries, ancestor_agents_folders, files_to_load
from pi_rpc.session.resources.limits import LoadBudget, read_bounded, resolves_inside
from pi_rpc.session.resources.prompt_templates import PromptTemplate, expand_prompt_template, load_prompt_templates
from pi_rpc.session.resources.skills import Skill, expand_skill_command, load_skills

_log = logging.getLogger(__name__)


class ResourceOptions(msgspec.Struct):
    """Where resources come from; the switches are Pi's `--no-context-files`, `--no-skills`, … flags."""

    # None: Pi's agent folder (`PI_CODING_AGENT_DIR`, else ~/.pi/agent), and the user settings
    # pi-rpc reads (pi_rpc/session/configuration/settings.py); given: that folder and its settings.json.
    agent_dir: Path | None = None
    context_files: bool = True
    skills: bool = True
    skill_paths: list[str] = msgspec.field(default_factory=list)
    prompt_templates: bool = True
    prompt_template_paths: list[str] = msgspec.field(default_factory=list)
    # Whether the workspace's own resources load (the module's docstring): session/configuration/factory.py sets
    # it from the folder's trust; a config built by hand (a test's) trusts its workspace.
    workspace_resources: bool = True


class ResourceCommand(msgspec.Struct, frozen=True):
    """A `/name` a prompt can start with, and where it came from."""

    name: str  # `skill:<name>` for a skill
    description: str
    kind: Literal["prompt", "skill"]
    path: str
    origin: ResourceOrigin
    argument_hint: str = ""


class Resources(msgspec.Struct):
    context_files: list[ContextFile] = msgspec.field(default_factory=list)
    prompt_templates: list[PromptTemplate] = msgspec.field(default_factory=list)
    skills: list[Skill] = msgspec.field(default_factory=list)
    system_prompt: str | None = None  # SYSTEM.md: replaces the base prompt
    append_system_prompt: str | None = None  # APPEND_SYSTEM.md: follows the guidelines
    warnings: list[str] = msgspec.field(default_factory=list)  # what the load skipped or cut, as logged

    def expand(self, text: str) -> str:
        """A `/skill:name …` or `/template …` prompt as the model is to see it (Pi expands both)."""
        return expand_prompt_template(expand_skill_command(text, self.skills), self.prompt_templates)

    def commands(self) -> Iterator[ResourceCommand]:
        """The templates, then the skills, each in precedence order: what every mode lists."""
        for t in self.prompt_templates:
            yield ResourceCommand(t.name, t.description, "prompt", t.path, t.origin, t.argument_hint)
        for s in self.skills:
            yield ResourceCommand(f"skill:{s.name}", s.description, "skill", s.path, s.origin)


def _entries(path: Path | None) -> SettingsEntries | None:
    """A settings file's `skills` and `prompts`; None when there is no such file. A file that
    does not parse is left out with a warning: a session must still start or switch."""
    if path is None or not path.is_file():
        return None
    try:
        settings = load_settings(path)
    except SettingsError as exc:
        _log.warning("skills and prompt templates of %s are not loaded: %s", path, exc)
        return None
    return SettingsEntries(path.parent, skill_entries(settings), settings.prompts)


def _settings(cwd: str, options: ResourceOptions, agent_dir: Path) -> tuple[SettingsEntries, SettingsEntries]:
    """(project, user) settings entries; an untrusted workspace's file is not read, as Pi reads
    no settings of an untrusted project (its `!`, `+` and `-` filters do not apply either)."""
    project_file = workspace_settings_path(cwd)
    if options.agent_dir is not None:
        user_file: Path | None = options.agent_dir / "settings.json"
    else:
        user_file = next((p for p in settings_paths() if p.is_file()), None)
    project = (_entries(project_file) if options.workspace_resources else None) or SettingsEntries(project_file.parent)
    user = _entries(user_file) or SettingsEntries(agent_dir)
    return msgspec.structs.replace(project, bound=Path(cwd)), user


def prompt_input(value: str, what: str) -> str:
    """A prompt given on the command line: the contents of the file it names when there is one
    (relative to the daemon's working directory), else the text itself, as Pi reads it."""
    if not os.path.exists(value):
        return value
    try:
        with open(value, encoding="utf-8") as source:
            return source.read()
    except OSError as exc:  # a folder, or unreadable: Pi warns and takes the text
        _log.warning("Could not read %s file %s: %s", what, value, exc)
        return value


def _prompt_file(cwd: str, agent_dir: Path, name: str, budget: LoadBudget, workspace: bool) -> str | None:
    """The project's `.pi/<name>` (resolving inside the workspace; only when the `workspace`'s own
    resources load), else the agent folder's."""
    places = ((Path(cwd) / ".pi" / name, Path(cwd)),) if workspace else ()
    for path, bound in (*places, (agent_dir / name, None)):
        if not path.is_file():
            continue
        if bound is not None and not resolves_inside(path, bound):
            budget.warn(f"resources: {path} is skipped: it resolves outside {bound}")
            continue
        text = read_bounded(path, budget, name)
        if text is not None:
            return text
    return None


def load_resources(cwd: str, options: ResourceOptions) -> Resources:
    """Everything a session loads, within the bounds of limits.py (files per source,
    bytes per file, a deadline for the whole load): cheap enough to run as the session is made,
    whatever the workspace holds. What the workspace's files or settings name outside it is
    skipped, and all of the workspace's own resources when `options.workspace_resources` is False
    (an untrusted folder's: `untrusted_resources` names them); what was skipped or cut is in
    `Resources.warnings`."""
    agent_dir = options.agent_dir or pi_agent_dir()
    workspace = Path(cwd)
    budget = LoadBudget.start()
    settings = _settings(cwd, options, agent_dir)
    context_files = load_context_files(cwd, agent_dir, budget) if options.context_files else []
    own = options.workspace_resources
    system_prompt = _prompt_file(cwd, agent_dir, "SYSTEM.md", budget, own)
    append_system_prompt = _prompt_file(cwd, agent_dir, "APPEND_SYSTEM.md", budget, own)
    template_paths, template_origin = files_to_load(
        "prompts", workspace, agent_dir, settings, options.prompt_template_paths, options.prompt_templates, budget, own
    )
    templates = load_prompt_templates(template_paths, template_origin, budget)
    skill_paths, skill_origin = files_to_load(
        "skills", workspace, agent_dir, settings, options.skill_paths, options.skills, budget, own
    )
    return Resources(
        context_files=context_files,
        prompt_templates=templates,
        skills=load_skills(skill_paths, skill_origin, budget),
        system_prompt=system_prompt,
        append_system_prompt=append_system_prompt,
        warnings=budget.warnings,
    )


def untrusted_resources(cwd: str, options: ResourceOptions) -> list[str]:
    """What `cwd` holds of its own resources that an untrusted folder does not load (the module's
    docstring), for the folder's warning: `.pi/skills`, `.pi/prompts`, `.agents/skills` (an
    ancestor's by its path), `.pi/SYSTEM.md`, `.pi/APPEND_SYSTEM.md`, `.pi/mcp.json` (Pi's MCP
    servers, which tools/mcp_files.py reads only when trusted), and "skills/prompts
    entries" for its settings'. What `options` turns off anyway (`--no-skills`, …) is not named."""
    workspace = Path(cwd)
    skipped: list[str] = []
    if options.skills:
        skipped += [".pi/skills"] if (workspace / ".pi" / "skills").is_dir() else []
        for folder in ancestor_agents_folders(workspace):
            if folder.is_dir():
                skipped.append(".agents/skills" if folder.parent.parent == workspace else str(folder))
    if options.prompt_templates and (workspace / ".pi" / "prompts").is_dir():
        skipped.append(".pi/prompts")
    skipped += [f".pi/{name}" for name in ("SYSTEM.md", "APPEND_SYSTEM.md") if (workspace / ".pi" / name).is_file()]
    skipped += [".pi/mcp.json"] if (workspace / ".pi" / "mcp.json").is_file() else []  # tools/mcp_files.py
    entries = _entries(workspace_settings_path(cwd))
    if entries is not None:
        keys = [
            key
            for key, named in (
                ("skills", options.skills and entries.skills),
                ("prompts", options.prompt_templates and entries.prompts),
            )
            if named
        ]
        skipped += [f"{'/'.join(keys)} entries"] if keys else []
    return skipped

"""What a session loads from the user's and the project's folders: context files, prompt templates,
skills, and a replacement or an addition to the system prompt (`SYSTEM.md`, `APPEND_SYSTEM.md` in
the project's `.pi/` folder, else the agent folder). Loaded when a session starts and again for
every new session, as Pi reloads them."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from pi_rpc.ai.config import pi_agent_dir
from pi_rpc.session.context_files import ContextFile, load_context_files
from pi_rpc.session.prompt_templates import PromptTemplate, expand_prompt_template, load_prompt_templates
from pi_rpc.session.skills import Skill, expand_skill_command, load_skills


@dataclass
class ResourceOptions:
    """Where resources come from; the switches are Pi's `--no-context-files`, `--no-skills`, … flags."""

    agent_dir: Path | None = None  # None: Pi's agent folder (`PI_CODING_AGENT_DIR`, else ~/.pi/agent)
    context_files: bool = True
    skills: bool = True
    skill_paths: list[str] = field(default_factory=list)
    prompt_templates: bool = True
    prompt_template_paths: list[str] = field(default_factory=list)


_log = logging.getLogger(__name__)


@dataclass
class Resources:
    context_files: list[ContextFile] = field(default_factory=list)
    prompt_templates: list[PromptTemplate] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    system_prompt: str | None = None  # SYSTEM.md: replaces the base prompt
    append_system_prompt: str | None = None  # APPEND_SYSTEM.md: follows the guidelines

    def expand(self, text: str) -> str:
        """A `/skill:name …` or `/template …` prompt as the model is to see it (Pi expands both)."""
        return expand_prompt_template(expand_skill_command(text, self.skills), self.prompt_templates)


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


def _prompt_file(cwd: str, agent_dir: Path, name: str) -> str | None:
    for path in (Path(cwd) / ".pi" / name, agent_dir / name):
        if path.is_file():
            return prompt_input(str(path), name)
    return None


def load_resources(cwd: str, options: ResourceOptions) -> Resources:
    agent_dir = options.agent_dir or pi_agent_dir()
    return Resources(
        context_files=load_context_files(cwd, agent_dir) if options.context_files else [],
        prompt_templates=load_prompt_templates(
            cwd, agent_dir, options.prompt_template_paths, include_defaults=options.prompt_templates
        ),
        skills=load_skills(cwd, agent_dir, options.skill_paths, include_defaults=options.skills),
        system_prompt=_prompt_file(cwd, agent_dir, "SYSTEM.md"),
        append_system_prompt=_prompt_file(cwd, agent_dir, "APPEND_SYSTEM.md"),
    )

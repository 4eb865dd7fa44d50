"""Context files: `AGENTS.md` (or `CLAUDE.md`) instructions that reach the system prompt.

In Pi's order: the global one from the agent folder first, then one per folder from the filesystem
root down to the workspace, each folder contributing its first of AGENTS.md, AGENTS.MD, CLAUDE.md,
CLAUDE.MD. A file met twice (the agent folder inside the workspace's ancestry) counts once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

_log = logging.getLogger(__name__)

CONTEXT_FILE_NAMES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


@dataclass(frozen=True)
class ContextFile:
    path: str
    content: str


def _context_file_in(folder: Path) -> ContextFile | None:
    for name in CONTEXT_FILE_NAMES:
        path = folder / name
        if path.is_file():
            try:
                return ContextFile(path=str(path), content=path.read_text(encoding="utf-8", errors="replace"))
            except OSError as exc:
                _log.warning("cannot read context file %s: %s", path, exc)
    return None


def load_context_files(cwd: str, agent_dir: Path) -> list[ContextFile]:
    found: list[ContextFile] = []
    global_file = _context_file_in(agent_dir)
    if global_file is not None:
        found.append(global_file)
    workspace = Path(cwd).resolve()
    for folder in [*reversed(workspace.parents), workspace]:  # root first, the workspace last
        context = _context_file_in(folder)
        if context is not None and all(context.path != seen.path for seen in found):
            found.append(context)
    return found


def format_context_files(files: list[ContextFile]) -> str:
    """The system prompt's "Project Context" section; empty without files."""
    if not files:
        return ""
    parts = ["# Project Context", "", "Project-specific instructions and guidelines:", ""]
    for file in files:
        parts += [f"## {file.path}", "", file.content, ""]
    return "\n".join(parts)

"""Context files: `AGENTS.md` (or `CLAUDE.md`) instructions that reach the system prompt.

In Pi's order: the global one from the agent folder first, then one per folder from the filesystem
root down to the workspace, each folder contributing its first of AGENTS.md, AGENTS.MD, CLAUDE.md,
CLAUDE.MD. A file met twice (the agent folder inside the workspace's ancestry) counts once.

A file found in a folder must resolve inside that folder's tree: `<workspace>/AGENTS.md` as a
symlink to `~/.ssh/id_rsa` is skipped with a warning, while a parent's `AGENTS.md` linking to a
file elsewhere below that parent is read. The agent folder is the user's own, and its file may
point anywhere. Each file is read within the load's bounds (limits.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec

from pi_rpc.session.resources.limits import LoadBudget, read_bounded, resolves_inside

_log = logging.getLogger(__name__)

CONTEXT_FILE_NAMES = ("AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


class ContextFile(msgspec.Struct, frozen=True):
    path: str
    content: str


def _context_file_in(folder: Path, budget: LoadBudget | None, bound: Path | None) -> ContextFile | None:
    """`folder`'s first context file; with a `bound`, one resolving outside it is skipped with a
    warning (and the next name is tried, as for a file that is not there)."""
    for name in CONTEXT_FILE_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        if bound is not None and not resolves_inside(path, bound):
            message = f"resources: context file {path} is skipped: it resolves outside {bound}"
            if budget is not None:
                budget.warn(message)
            else:
                _log.warning("%s", message)
            continue
        content = read_bounded(path, budget, "context file")
        if content is not None:
            return ContextFile(path=str(path), content=content)
    return None


def load_context_files(cwd: str, agent_dir: Path, budget: LoadBudget | None = None) -> list[ContextFile]:
    """The agent folder's file (the user's own: it may point anywhere), then one per folder from
    the root down to the workspace, each resolving inside the folder it was found in."""
    found: list[ContextFile] = []
    global_file = _context_file_in(agent_dir, budget, None)
    if global_file is not None:
        found.append(global_file)
    workspace = Path(cwd).resolve()
    for folder in [*reversed(workspace.parents), workspace]:  # root first, the workspace last
        context = _context_file_in(folder, budget, folder)
        if context is not None and all(context.path != seen.path for seen in found):
            found.append(context)
    return found


def format_context_files(files: list[ContextFile]) -> str:
    """The system prompt's `project_context` section, as Pi 1.6.0 words it: each file's content in a
    `project_instructions` tag naming its path; empty without files."""
    if not files:
        return ""
    parts = ["Project-specific instructions and guidelines:"]
    parts += [f'<project_instructions path="{file.path}">\n{file.content}\n</project_instructions>' for file in files]
    return "\n\n".join(parts)

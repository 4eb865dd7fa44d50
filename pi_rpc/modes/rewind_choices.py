"""Rewind for the front ends whose client has no picker of its own (ACP, LSP): what the user picks
from, the argument form for clients that cannot pick, the steps of a rewind that may ask about
conflicts, and the report the user reads afterwards.

ACP and LSP each ask through the one question their protocol has (`session/request_permission`,
`window/showMessageRequest`); the choices they offer, the words of each and what a pick means are
the same for both, so they live here. The session's `rewind` decides what happens to the files
(pi_rpc/session/checkpoints/session_checkpoints.py); this module only words it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence

import msgspec
from msgspec import UNSET

from pi_rpc.session import AgentSession, CheckpointInfo, RewindConflict, RewindResult, RewindTarget

# How much of a message and of its file list a choice shows (choices are one line in editors).
_TEXT_CHARS = 60
_FILES_SHOWN = 3
# How many checkpoints one question offers; older ones are picked by number (`/rewind 12`).
MAX_OFFERED = 9

RESTORE_CHOICES: tuple[tuple[RewindTarget, str], ...] = (
    ("files", "Files only (the conversation stays)"),
    ("conversation", "Conversation only (a fork at that message; the files stay)"),
    ("both", "Files and conversation"),
)
_TARGETS: dict[str, RewindTarget] = {target: target for target, _ in RESTORE_CHOICES}
KEEP_CHANGES, OVERWRITE = "Keep my changes", "Restore anyway"


def relative(path: str, cwd: str) -> str:
    """A path as the user knows it: relative to the workspace when it is inside it."""
    inside = os.path.relpath(path, cwd)
    return path if inside.startswith(os.pardir) else inside


def message_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TEXT_CHARS else line[: _TEXT_CHARS - 1] + "…"


def files_text(info: CheckpointInfo, cwd: str) -> str:
    if not info.files:
        return "no file changes"
    named = [f"{relative(f.path, cwd)} ({f.change})" for f in info.files[:_FILES_SHOWN]]
    more = len(info.files) - _FILES_SHOWN
    return ", ".join(named) + (f", +{more} more" if more > 0 else "")


def checkpoint_label(number: int, info: CheckpointInfo, cwd: str) -> str:
    """One choice: its number (1 is the most recent message), the message, what it would change."""
    return f"{number}. “{message_line(info.text)}”: {files_text(info, cwd)}"


def listing_text(listing: Sequence[CheckpointInfo], cwd: str) -> str:
    """Every checkpoint, numbered, with its files and what it could not capture (Markdown)."""
    lines = []
    for number, info in enumerate(listing, 1):
        lines.append(f"{number}. “{message_line(info.text)}”")
        lines += [f"   - {relative(f.path, cwd)} ({f.change})" for f in info.files]
        lines += [f"   - not captured: {note}" for note in info.not_captured]
    return "\n".join(lines)


class RewindArgs(msgspec.Struct, frozen=True):
    number: int  # 1: the most recent user message
    restore: RewindTarget | None  # None: ask
    force: bool


def parse_rewind_args(words: Sequence[str]) -> RewindArgs | str:
    """`<n> [files|conversation|both] [force]` (the argument form, for clients that cannot pick);
    the reason as text when the words are not that."""
    usage = "Usage: rewind <n> [files|conversation|both] [force], n = 1 for the most recent message"
    if not words or not (words[0].isascii() and words[0].isdigit()) or int(words[0]) < 1:
        return usage
    rest = [word.lower() for word in words[1:]]
    force = "force" in rest
    rest = [word for word in rest if word != "force"]
    if len(rest) > 1 or (rest and rest[0] not in _TARGETS):
        return usage
    return RewindArgs(int(words[0]), _TARGETS[rest[0]] if rest else None, force)


# Asked with the conflicts a rewind of the files found: True restores them anyway.
AskForce = Callable[[list[RewindConflict]], Awaitable[bool]]


async def rewind_asking(
    session: AgentSession, entry_id: str, restore: RewindTarget, force: bool, ask_force: AskForce | None
) -> RewindResult:
    """The rewind, asked about conflicts first: a preview finds the files changed since the
    agent's last change, `ask_force` decides whether they are restored too, then one rewind does
    it all (nothing is written before the user has answered)."""
    checkpoints = session.checkpoints
    if restore != "conversation" and not force and ask_force is not None:
        preview = await checkpoints.rewind(entry_id, "files", preview=True)
        if preview.conflicts:
            force = await ask_force(preview.conflicts)
    return await checkpoints.rewind(entry_id, restore, force)


async def preview_text(session: AgentSession, entry_id: str, with_diffs: bool) -> str:
    """What rewinding the files to before `entry_id` would change, for the question that asks
    what to restore: the files (with their diffs when `with_diffs`) and the conflicts."""
    preview = await session.checkpoints.rewind(entry_id, "files", preview=True)
    cwd = session.cwd
    changing = preview.diffs if isinstance(preview.diffs, list) else []
    parts = []
    if changing:
        parts.append("Rewinding the files would change:\n" + "\n".join(f"- {relative(d.path, cwd)}" for d in changing))
        if with_diffs:
            parts.append("\n\n".join(f"{relative(d.path, cwd)}:\n```diff\n{d.diff.rstrip()}\n```" for d in changing))
    else:
        parts.append("The files are as they were then: rewinding them changes nothing.")
    if preview.conflicts:
        named = ", ".join(relative(c.path, cwd) for c in preview.conflicts)
        parts.append(f"Changed since the agent's last change (you will be asked about them): {named}")
    return "\n\n".join(parts)


def conflicts_text(conflicts: Sequence[RewindConflict], cwd: str) -> str:
    """Each conflict with its diff (the file now against what the rewind would restore)."""
    return "\n\n".join(f"{relative(c.path, cwd)}:\n```diff\n{c.diff.rstrip()}\n```" for c in conflicts)


def report_text(info: CheckpointInfo, restore: RewindTarget, result: RewindResult, cwd: str, force_hint: str) -> str:
    """What the rewind did, in Markdown: restored files, conflicts with their diffs (left alone;
    `force_hint` says how to restore them anyway), files it could not restore, what the checkpoint
    never captured, and the fork."""
    parts = [f"Rewound to before “{message_line(info.text)}” ({restore})."]
    if restore != "conversation":
        if result.restored:
            parts.append("Restored:\n" + "\n".join(f"- {relative(p, cwd)}" for p in result.restored))
        else:
            parts.append("No file needed restoring.")
    if result.conflicts:
        parts.append(
            f"Changed since the agent's last change, so left alone ({force_hint}):\n\n"
            + conflicts_text(result.conflicts, cwd)
        )
    if result.not_restored:
        parts.append("Not restored:\n" + "\n".join(f"- {reason}" for reason in result.not_restored))
    if info.not_captured and restore != "conversation":
        parts.append("Not captured by this checkpoint:\n" + "\n".join(f"- {n}" for n in info.not_captured))
    if result.session_id is not UNSET:
        parts.append(
            f"The conversation now continues from before that message (session {result.session_id}); "
            "the earlier branch is kept."
        )
    return "\n\n".join(parts)


__all__ = [
    "KEEP_CHANGES",
    "MAX_OFFERED",
    "OVERWRITE",
    "RESTORE_CHOICES",
    "AskForce",
    "RewindArgs",
    "checkpoint_label",
    "conflicts_text",
    "files_text",
    "listing_text",
    "message_line",
    "parse_rewind_args",
    "preview_text",
    "relative",
    "report_text",
    "rewind_asking",
]

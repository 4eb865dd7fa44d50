"""`/rewind` for ACP editors: put the files (and optionally the conversation) back to before a
user message, picked through the client.

ACP has no generic picker; what every client can show is `session/request_permission`, a question
on a tool-call row with one button per option. So a pick is a row of its own ("Rewind", kind
`other`) and a permission request whose options are the choices: first the checkpoints (the most
recent first, each labelled by its message and the files it would change), then files,
conversation or both, and, when files changed since the agent's last change, whether to restore
them anyway (their diffs in the row). `/rewind <n> [files|conversation|both] [force]` does the
same without asking, for clients that cannot pick. The report (restored files, conflicts with
their diffs, what was never captured) is the agent message the command answers with.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence

import anyio
from acp import RequestError
from acp.helpers import ToolCallContentVariant, start_tool_call, text_block, tool_content, update_tool_call
from acp.schema import AllowedOutcome, PermissionOption, ToolCallProgress, ToolCallStart, ToolCallUpdate

from pi_rpc.modes.acp.connection import PermissionAsker
from pi_rpc.modes.editor_requests import EditorDeadlines, within
from pi_rpc.modes.rewind_choices import (
    KEEP_CHANGES,
    MAX_OFFERED,
    OVERWRITE,
    RESTORE_CHOICES,
    checkpoint_label,
    conflicts_text,
    listing_text,
    message_line,
    parse_rewind_args,
    preview_text,
    report_text,
    rewind_asking,
)
from pi_rpc.session import SESSION_REFUSALS, AgentSession, RewindConflict
from pi_rpc.tools import EditorRequestError

# (title, detail in Markdown, choices) -> the index picked, or None when the user cancelled.
Pick = Callable[[str, str, Sequence[str]], Awaitable[int | None]]
SendUpdates = Callable[[Sequence[ToolCallStart | ToolCallProgress]], None]

CANCEL = "cancel"
USAGE = "`/rewind <n> [files|conversation|both] [force]`"


class CannotPickError(Exception):
    """The client answered "method not found", or did not answer: the argument form is left."""


class PermissionPicker:
    """A pick through `session/request_permission`, on a tool-call row made for it."""

    def __init__(self, conn: PermissionAsker, session_id: str, send: SendUpdates, deadlines: EditorDeadlines) -> None:
        self._conn = conn
        self._session_id = session_id
        self._send = send
        self._deadlines = deadlines
        self._asking: anyio.CancelScope | None = None
        self.cancelled = False  # `session/cancel` came: every pick from then on is a cancel

    def cancel(self) -> None:
        self.cancelled = True
        if self._asking is not None:
            self._asking.cancel()

    async def __call__(self, title: str, detail: str, choices: Sequence[str]) -> int | None:
        if self.cancelled:
            return None
        call_id = f"pi-rpc-rewind-{uuid.uuid4().hex[:12]}"
        content: list[ToolCallContentVariant] | None = [tool_content(text_block(detail))] if detail else None
        self._send([start_tool_call(call_id, title, kind="other", status="pending", content=content)])
        options = [
            *(PermissionOption(option_id=str(i), name=choice, kind="allow_once") for i, choice in enumerate(choices)),
            PermissionOption(option_id=CANCEL, name="Cancel", kind="reject_once"),
        ]
        picked: int | None = None
        try:
            with anyio.CancelScope() as self._asking:
                response = await within(
                    self._deadlines.question,
                    "session/request_permission",
                    self._conn.request_permission(
                        session_id=self._session_id,
                        tool_call=ToolCallUpdate(tool_call_id=call_id, title=title, kind="other", content=content),
                        options=options,
                    ),
                )
                outcome = response.outcome
                if isinstance(outcome, AllowedOutcome) and outcome.option_id.isdigit():
                    picked = int(outcome.option_id) if int(outcome.option_id) < len(choices) else None
        except (RequestError, EditorRequestError) as exc:
            raise CannotPickError(str(exc)) from exc
        finally:
            self._asking = None
            self._send([update_tool_call(call_id, status="completed" if picked is not None else "failed")])
        return picked


async def rewind_command(session: AgentSession, argument: str, pick: Pick | None) -> str:
    """The answer to `/rewind [argument]`: what the rewind did, or why nothing was done."""
    cwd = session.cwd
    listing = session.checkpoints.listing()
    if not listing:
        return "Nothing to rewind to: this session has no message yet."
    words = argument.split()
    args = parse_rewind_args(words) if words else None
    if isinstance(args, str):
        return f"{args}\n\n{listing_text(listing, cwd)}"
    if args is not None and args.number > len(listing):
        return f"There are {len(listing)} messages to rewind to, not {args.number}.\n\n{listing_text(listing, cwd)}"
    try:
        if args is None:
            if pick is None:
                return f"Pick a message by its number: {USAGE}\n\n{listing_text(listing, cwd)}"
            offered = [checkpoint_label(n, info, cwd) for n, info in enumerate(listing[:MAX_OFFERED], 1)]
            more = f"\n\nOlder messages: {USAGE}." if len(listing) > MAX_OFFERED else ""
            chosen = await pick("Rewind to before which message?", listing_text(listing, cwd) + more, offered)
            if chosen is None:
                return "Rewind cancelled: nothing changed."
            number, restore, force = chosen + 1, None, False
        else:
            number, restore, force = args.number, args.restore, args.force
        info = listing[number - 1]
        if restore is None:
            if pick is None:
                restore = "files"
            else:
                question = f"Rewind to before “{message_line(info.text)}”: restore what?"
                detail = await preview_text(session, info.entry_id, with_diffs=True)
                target = await pick(question, detail, [label for _, label in RESTORE_CHOICES])
                if target is None:
                    return "Rewind cancelled: nothing changed."
                restore = RESTORE_CHOICES[target][0]
        ask = None if force or pick is None else _ask_force(pick, cwd)
        result = await rewind_asking(session, info.entry_id, restore, force, ask)
    except CannotPickError as exc:
        return f"This client could not pick ({exc}): {USAGE}\n\n{listing_text(listing, cwd)}"
    except SESSION_REFUSALS as exc:  # a run is going, no such message: said in the chat
        return f"Not rewound: {exc}"
    return report_text(info, restore, result, cwd, f"`/rewind {number} {restore} force` restores them")


def _ask_force(pick: Pick, cwd: str) -> Callable[[list[RewindConflict]], Awaitable[bool]]:
    async def ask(conflicts: list[RewindConflict]) -> bool:
        title = f"{len(conflicts)} file(s) changed since the agent's last change: restore them anyway?"
        return await pick(title, conflicts_text(conflicts, cwd), [KEEP_CHANGES, OVERWRITE]) == 1

    return ask


__all__ = ["CannotPickError", "Pick", "PermissionPicker", "rewind_command"]

"""`pi.rewind`: put the files (and optionally the conversation) back to before a user message.

The one question an LSP server can put to the user is `window/showMessageRequest`, so the picks
are asked with it (as approvals are, modes/lsp/approvals.py): the checkpoints as its actions (the
most recent first, each its message and the files it would change), then files, conversation or
both, then, when files changed since the agent's last change, whether to restore them anyway.
Dismissing a question cancels the rewind; so does no answer within the `question` deadline.

Restores into documents the editor has open go through the session's `OpenDocuments`, one
`workspace/applyEdit` per document (one undo step); other files are written on disk. The report
is a `window/showMessage`; one with conflicts is shown as a document instead (their diffs, by
`window/showDocument`) where the client can show one.

With its arguments (`pi.rewind 2 files [force]` as words, or `{"number"|"entryId", "restore",
"force"}`) nothing is asked and the command answers with the rewind's result; without, it asks in
the background and answers at once (some clients give a command's answer a short timeout).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio.abc
import msgspec
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from pi_rpc.modes.editor_requests import EditorDeadlines
from pi_rpc.modes.lsp.approvals import MAX_DETAIL_CHARS
from pi_rpc.modes.lsp.client_requests import request
from pi_rpc.modes.lsp.runs import Runs, refusal_text
from pi_rpc.modes.rewind_choices import (
    KEEP_CHANGES,
    MAX_OFFERED,
    OVERWRITE,
    RESTORE_CHOICES,
    RewindArgs,
    checkpoint_label,
    conflicts_text,
    message_line,
    parse_rewind_args,
    preview_text,
    report_text,
    rewind_asking,
)
from pi_rpc.session import SESSION_REFUSALS, AgentSession, CheckpointInfo, RewindConflict, RewindTarget
from pi_rpc.tools import EditorRequestError

REWIND = "pi.rewind"


class _RewindParams(msgspec.Struct, kw_only=True, rename="camel"):
    number: int | None = None
    entry_id: str | None = None
    restore: RewindTarget = "files"
    force: bool = False


class Rewinds:
    """The `pi.rewind` command of one LSP front end."""

    def __init__(
        self,
        server: LanguageServer,
        session: Callable[[], AgentSession],
        runs: Runs,
        tasks: anyio.abc.TaskGroup,
        deadlines: EditorDeadlines,
    ) -> None:
        self._server = server
        self._session = session  # the front end's current one (following the root replaces it)
        self._runs = runs
        self._tasks = tasks
        self._deadlines = deadlines

    async def command(self, args: Sequence[Any]) -> Any:
        session = self._session()
        listing = session.checkpoints.listing()
        if not listing:
            self._runs.show_message("Pi: nothing to rewind to, this session has no message yet.", lsp.MessageType.Info)
            return None
        chosen = _arguments(args, listing)
        if chosen is None:
            self._tasks.start_soon(self._asking, session, listing)
            return None
        number, restore, force = chosen
        result = await self._rewind(session, listing, number, restore, force, asking=False)
        return msgspec.to_builtins(result) if result is not None else None

    async def _asking(self, session: AgentSession, listing: list[CheckpointInfo]) -> None:
        # A task of the daemon's task group: what it raises would end the daemon.
        try:
            offered = [checkpoint_label(n, info, session.cwd) for n, info in enumerate(listing[:MAX_OFFERED], 1)]
            chosen = await self._pick("Pi: rewind to before which message?", offered)
            if chosen is None:
                return
            info = listing[chosen]
            changes = await preview_text(session, info.entry_id, with_diffs=False)
            question = f"Pi: rewind to before “{message_line(info.text)}”: restore what?\n\n{changes}"
            target = await self._pick(question, [label for _, label in RESTORE_CHOICES])
            if target is None:
                return
            await self._rewind(session, listing, chosen + 1, RESTORE_CHOICES[target][0], False, asking=True)
        except EditorRequestError as exc:
            self._runs.show_message(f"Pi did not rewind: {exc}", lsp.MessageType.Warning)

    async def _rewind(
        self,
        session: AgentSession,
        listing: list[CheckpointInfo],
        number: int,
        restore: RewindTarget,
        force: bool,
        asking: bool,
    ) -> Any:
        info = listing[number - 1]
        cwd = session.cwd

        async def ask_force(conflicts: list[RewindConflict]) -> bool:
            title = f"Pi: {len(conflicts)} file(s) changed since the agent's last change: restore anyway?\n\n"
            return await self._pick(title + conflicts_text(conflicts, cwd), [KEEP_CHANGES, OVERWRITE]) == 1

        try:
            result = await rewind_asking(session, info.entry_id, restore, force, ask_force if asking else None)
        except SESSION_REFUSALS as exc:  # a run is going, the message is gone
            self._runs.show_message(f"Pi did not rewind: {refusal_text(exc)}", lsp.MessageType.Warning)
            return None
        report = report_text(info, restore, result, cwd, f"`pi.rewind {number} {restore} force` restores them")
        if result.conflicts:  # the document first: the message then tells of a diff already shown
            await self._runs.show_answer("Rewind conflicts", report)
            self._runs.show_message(
                f"Pi rewound, except {len(result.conflicts)} file(s) you changed since: see the diff.",
                lsp.MessageType.Warning,
            )
        else:
            self._runs.show_message(report, lsp.MessageType.Info)
        return result

    async def _pick(self, message: str, choices: Sequence[str]) -> int | None:
        params = lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Info,
            message=message[:MAX_DETAIL_CHARS],
            actions=[lsp.MessageActionItem(title=choice) for choice in choices],
        )
        answer = await request(self._server, lsp.WINDOW_SHOW_MESSAGE_REQUEST, params, self._deadlines.question)
        title = answer.title if isinstance(answer, lsp.MessageActionItem) else None
        return list(choices).index(title) if title is not None and title in choices else None


def _arguments(args: Sequence[Any], listing: list[CheckpointInfo]) -> tuple[int, RewindTarget, bool] | None:
    """(number, restore, force) from the command's arguments; None: none given, ask."""
    if not args:
        return None
    if len(args) == 1 and isinstance(args[0], dict):
        try:
            params = msgspec.convert(args[0], _RewindParams)
        except msgspec.ValidationError as exc:
            raise JsonRpcInvalidParams(f"{REWIND}: {exc}") from exc
        ids = [info.entry_id for info in listing]
        if params.entry_id is not None and params.entry_id in ids:
            number = ids.index(params.entry_id) + 1
        elif params.entry_id is None and params.number is not None:
            number = params.number
        else:
            raise JsonRpcInvalidParams(f"{REWIND}: no user message {params.entry_id or params.number} to rewind to")
        chosen = RewindArgs(number, params.restore, params.force)
    else:
        parsed = parse_rewind_args([str(arg) for arg in args])
        if isinstance(parsed, str):
            raise JsonRpcInvalidParams(f"{REWIND}: {parsed}")
        chosen = parsed
    if not 1 <= chosen.number <= len(listing):
        raise JsonRpcInvalidParams(f"{REWIND}: there are {len(listing)} messages to rewind to, not {chosen.number}")
    return chosen.number, chosen.restore or "files", chosen.force


__all__ = ["REWIND", "Rewinds"]

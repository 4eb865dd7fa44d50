"""One agent run started from the editor: `$/progress` while it works, cancel aborts it, and its
answer shown as a Markdown document (or a message).

Runs start detached (the command that starts one is answered at once: some clients wait for a
command's answer with a short timeout) in the daemon's task group. The agent's claim is the one
busy flag: a prompt while a run is going is refused by it (`PromptWhileRunning`), and the user sees
`BUSY_TEXT`, which says what an editor user can do (the session's own text names Pi's
`streamingBehavior`, which no LSP command sends). `REFUSAL_TEXT` is what the user reads for each
kind of session refusal, here and wherever this mode shows one (a model option, a rewind).

Every request a run makes of the client has a deadline (modes/editor_requests.py). The progress
token is asked for with `progress` seconds to answer: a client that never answers (Emacs'
lsp-mode drops a request that arrives in the same write as a reply) gets the run without
progress, said once in the log. A question the approval gate gives up on
(`permissions.timeoutSeconds`) is told to the user by `window/showMessage`, as the approver does
for its own deadline: the user may never have seen the question.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from pi_rpc.agent import (
    AgentEvent,
    MessageEnd,
    MessageUpdate,
    ToolApprovalEnd,
    ToolApprovalRequest,
    ToolExecutionStart,
)
from pi_rpc.ai import AssistantMessage, Message, TextDeltaEvent, text_of
from pi_rpc.modes.editor_requests import DEFAULT_DEADLINES, EditorDeadlines
from pi_rpc.modes.lsp.chat import PI_HEADING, USER_HEADING, ChatStream
from pi_rpc.modes.lsp.client_requests import request
from pi_rpc.modes.lsp.options import AnswerTarget
from pi_rpc.session import (
    SESSION_REFUSALS,
    AgentSession,
    CompactionRefused,
    InvalidArgument,
    NoModelConfigured,
    PromptOutcome,
    PromptWhileRunning,
    SessionBusy,
    SessionRefusal,
    UnknownModel,
    UnknownSessionOrEntry,
    private_workspace_subfolder,
    refusal_kind,
)
from pi_rpc.tools import EditorRequestError

_log = logging.getLogger(__name__)

# Progress messages are one line in most editors' status areas.
_REPORT_CHARS = 80
BUSY_TEXT = "Pi is already answering; send again when it is done."
# What an editor user reads for each kind of session refusal (in `window/showMessage`).
REFUSAL_TEXT: dict[type[SessionRefusal], Callable[[Exception], str]] = {
    PromptWhileRunning: lambda exc: BUSY_TEXT,
    SessionBusy: str,  # a rewind while a run is going
    CompactionRefused: str,
    NoModelConfigured: str,  # which variables or models.json to set
    UnknownModel: str,  # the `pi` options' model
    UnknownSessionOrEntry: str,  # a rewind to a message that is gone
    InvalidArgument: str,
}


def refusal_text(exc: Exception) -> str:
    """What the user reads for a session refusal, from `REFUSAL_TEXT` (anything else: its own text)."""
    kind = refusal_kind(exc)
    return str(exc) if kind is None else REFUSAL_TEXT[kind](exc)


class Runs:
    def __init__(
        self,
        server: LanguageServer,
        session: AgentSession,
        tasks: anyio.abc.TaskGroup,
        deadlines: EditorDeadlines = DEFAULT_DEADLINES,
    ) -> None:
        self._server = server
        self.session = session
        self._tasks = tasks
        self.deadlines = deadlines
        self.answer_target: AnswerTarget = "document"
        self._progress_unanswered = False  # logged once: the client did not answer a progress create
        self.shutting_down = False  # `shutdown` came: the client answers no more requests

    def start(self, title: str, prompt: str, chat: ChatStream | None = None) -> None:
        """Run `prompt`; `chat`: stream the answer into a chat document instead of showing it."""
        self._tasks.start_soon(self._run_guarded, title, prompt, chat)

    async def _run_guarded(self, title: str, prompt: str, chat: ChatStream | None) -> None:
        # A run is a task of the daemon's task group: what it raises would end the daemon.
        try:
            await self.run(title, prompt, chat)
        except EditorRequestError as exc:  # the client failed a request of ours, or never answered
            _log.warning("run %r: %s", title, exc)
            self.show_message(f"Pi: {exc}", lsp.MessageType.Error)
        except Exception as exc:  # anything else is a bug of ours: the traceback is for the log
            _log.exception("run %r failed", title)
            self.show_message(f"Pi: {exc}", lsp.MessageType.Error)

    async def run(self, title: str, prompt: str, chat: ChatStream | None = None) -> None:
        token = f"pi-{uuid.uuid4().hex}"
        session = self.session
        # The run's own messages, as they end: a compaction after the run replaces the transcript,
        # so no position in it marks where the run began.
        said: list[Message] = []
        has_progress = await self._begin(token, title)
        asking: dict[str, str] = {}  # tool call id -> title of the question waiting for the user

        def listen(event: AgentEvent) -> None:
            if isinstance(event, MessageEnd):
                said.append(event.message)
            if isinstance(event, ToolApprovalRequest):
                asking[event.request.tool_call_id] = event.request.title
            if isinstance(event, ToolApprovalEnd) and (asked := asking.pop(event.tool_call_id, None)):
                if event.outcome == "timeout":
                    timeout = session.approvals.timeout
                    self.show_message(
                        f"Pi did not run {asked}: no answer to the question within {timeout:g} s.",
                        lsp.MessageType.Warning,
                    )
            if has_progress:
                self._report(token, event)
            if chat is not None and isinstance(event, MessageUpdate):
                delta = event.assistant_message_event
                if isinstance(delta, TextDeltaEvent):
                    chat.feed(delta.delta)

        unsubscribe = session.subscribe(listen)
        outcome: PromptOutcome | None = None
        try:
            if chat is None:
                outcome = await session.prompt(prompt)
            else:
                outcome = await self._chat_run(prompt, chat)
        except SESSION_REFUSALS as exc:  # a run is going, no model
            self.show_message(refusal_text(exc), lsp.MessageType.Error)
        finally:
            unsubscribe()
            if has_progress:
                self._end(token, outcome)
        if outcome is None:
            return
        if outcome.stop_reason == "error":
            self.show_message(f"Pi: {outcome.error_message or 'the run failed'}", lsp.MessageType.Error)
            return
        if chat is not None:
            return
        answer = last_answer(said)
        if answer and outcome.stop_reason != "aborted":
            await self.show_answer(title, answer)

    async def _chat_run(self, prompt: str, chat: ChatStream) -> PromptOutcome:
        """The run, its text streaming into the chat under a `### Pi` heading, and a `### You`
        heading after it for the user's next turn. Nothing is written to the chat when the
        session refuses the prompt (a run is going)."""
        run = self.session.runs.start(prompt)
        async with anyio.create_task_group() as pumping:
            pumping.start_soon(chat.pump, PI_HEADING)  # the heading, then the text as it comes
            try:
                outcome = await self.session.runs.outcome_of(run)
            finally:
                # The pump sends what is left, then ends; after `shutdown` the editor answers no
                # more requests, so nothing is left to send.
                if self.shutting_down:
                    chat.stop()
                else:
                    chat.close()
        if not self.shutting_down:
            await chat.heading(USER_HEADING)
        return outcome

    # --- $/progress -----------------------------------------------------------------------------

    async def _begin(self, token: str, title: str) -> bool:
        """Work-done progress the user can cancel; False for a client that shows none."""
        window = self._server.client_capabilities.window
        if window is None or not window.work_done_progress:
            return False
        progress = self._server.work_done_progress
        params = lsp.WorkDoneProgressCreateParams(token=token)
        try:
            await request(self._server, lsp.WINDOW_WORK_DONE_PROGRESS_CREATE, params, self.deadlines.progress)
        except EditorRequestError as exc:  # refused, or never answered: run without progress
            log = _log.debug if self._progress_unanswered else _log.warning
            self._progress_unanswered = True
            log("running without progress: %s", exc)
            return False
        progress.begin(token, lsp.WorkDoneProgressBegin(title=title, cancellable=True, message="Pi is working"))
        cancel = progress.tokens[token]
        cancel.add_done_callback(self._cancelled)
        return True

    def _cancelled(self, future: Future[Any]) -> None:
        if future.cancelled() and self.session.runs.is_streaming:
            _log.info("progress cancelled by the client: aborting the run")
            self.session.agent.abort()  # the run ends gracefully; its tools' processes are killed

    def _report(self, token: str, event: AgentEvent) -> None:
        if isinstance(event, ToolExecutionStart):
            message = f"{event.tool_name} {_summary(event.args)}"
        elif isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
            message = text_of(event.message.content).strip()
        else:
            return
        if message:
            line = " ".join(message.split())
            self._server.work_done_progress.report(
                token, lsp.WorkDoneProgressReport(message=line[:_REPORT_CHARS], cancellable=True)
            )

    def _end(self, token: str, outcome: PromptOutcome | None) -> None:
        progress = self._server.work_done_progress
        if outcome is None:
            message = "Not started"
        else:
            message = {"aborted": "Aborted", "error": "Failed"}.get(str(outcome.stop_reason), "Done")
        progress.end(token, lsp.WorkDoneProgressEnd(message=message))
        progress.tokens.pop(token, None)

    # --- answers --------------------------------------------------------------------------------

    async def show_answer(self, title: str, answer: str) -> None:
        window = self._server.client_capabilities.window
        can_show = window is not None and window.show_document is not None and window.show_document.support
        if self.answer_target == "message" or not can_show:
            self.show_message(answer, lsp.MessageType.Info)
            return
        path = await anyio.to_thread.run_sync(self._write_answer, title, answer)
        params = lsp.ShowDocumentParams(uri=path.as_uri(), take_focus=True)
        await request(self._server, lsp.WINDOW_SHOW_DOCUMENT, params, self.deadlines.files)

    def _write_answer(self, title: str, answer: str) -> Path:
        """The answer as a Markdown file in the session's folder, one file per answer."""
        folder = private_workspace_subfolder(self.session.cwd, "answers", self.session.config.persistence.root)
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "answer"
        path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{uuid.uuid4().hex[:6]}.md"
        path.write_text(f"# {title}\n\n{answer.rstrip()}\n", encoding="utf-8")
        return path

    def show_message(self, text: str, kind: lsp.MessageType) -> None:
        self._server.window_show_message(lsp.ShowMessageParams(type=kind, message=text))


def last_answer(messages: Sequence[Message]) -> str:
    """The text of the run's last assistant message that has any."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            text = text_of(message.content).strip()
            if text:
                return text
    return ""


def _summary(args: dict[str, Any]) -> str:
    for key in ("path", "command", "pattern"):
        value = args.get(key)
        if isinstance(value, str):
            return value
    return ""

"""Compaction as a session does it: the summary request (a run of its own, cancelled by an abort),
its events (Pi's shapes, a failure's `errorMessage` included), the compaction entry that replaces
the older turns in the context, and what the context's size is known to be after it.

Planning and summarising are pi_rpc/session/compaction/planning.py's; this is the part that touches the
session: its agent (the transcript and the events), its history (the file), its current model, and
the way to abort its run, each handed in by the session.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
import msgspec
from msgspec import UNSET

from pi_rpc.agent import Agent, CompactionEnd, CompactionStart
from pi_rpc.ai import AssistantMessage, Message, StreamOptions, request_secrets
from pi_rpc.ai.redact import redact
from pi_rpc.session.compaction.planning import (
    CompactionError,
    CompactionPlan,
    CompactionReason,
    CompactionResult,
    CompactionSettings,
    Summary,
    context_tokens,
    estimated_tokens,
    plan_compaction,
    reported_tokens,
    summarize,
)
from pi_rpc.session.compaction.summary_retry import SummaryRetry
from pi_rpc.session.configuration.config import ModelChoice, RetryConfig
from pi_rpc.session.models.current import SessionModel
from pi_rpc.session.storage.entry_kinds import CompactionEntry
from pi_rpc.session.storage.history import SessionHistory
from pi_rpc.session.types import ContextUsage

_log = logging.getLogger(__name__)


# How compaction_end words a failure, by the compaction's reason (Pi's texts).
_FAILED = {
    "manual": "Compaction failed: ",
    "threshold": "Auto-compaction failed: ",
    "overflow": "Context overflow recovery failed: ",
}
NOTHING_TO_COMPACT = "Nothing to compact (session too small)"
ALREADY_COMPACTED = "Already compacted"
CANCELLED = "Compaction cancelled"


class SessionCompaction:
    """One compaction at a time; `cancel` ends the running one as aborted."""

    def __init__(
        self,
        agent: Agent,
        history: SessionHistory,
        model: SessionModel,
        settings: CompactionSettings,
        retry: RetryConfig,
        retry_enabled: Callable[[], bool],
        abort_run: Callable[[], Awaitable[None]],
    ) -> None:
        self._agent = agent
        self._history = history
        self._model = model
        self._settings = settings
        self._retry = retry
        # `retry.enabled`, or as a client set it since (Pi's set_auto_retry): summaries retry by it too.
        self._retry_enabled = retry_enabled
        self._abort_run = abort_run  # a manual compaction aborts the run first
        self.running = False
        self._scope: anyio.CancelScope | None = None

    async def compact(
        self,
        custom_instructions: str | None = None,
        reason: CompactionReason = "manual",
        drop_failed_reply: bool = False,
    ) -> CompactionResult:
        """Summarise the older turns with the current model and keep the recent ones (Pi's `compact`;
        a manual compaction aborts a run first, and the session file keeps everything).

        Compact between compaction_start and compaction_end; raises CompactionError when it
        fails, is cancelled or finds nothing to summarise (a manual compaction's end then says why,
        an automatic one's, as in Pi, only that it made nothing)."""
        agent = self._agent
        if reason == "manual" and agent.is_running:
            await self._abort_run()
        choice = self._model.require()
        if self.running:
            raise CompactionError("Compaction is already running")
        messages = list(agent.messages)
        omitted: AssistantMessage | None = None
        if drop_failed_reply and messages and isinstance(last := messages[-1], AssistantMessage):
            # Out of the context for good, as Pi 1.6.0 records it (a `context_edit` entry).
            omitted = last
            messages.pop()
            self._history.omit_from_context(omitted)
        self.running = True
        agent.emit(CompactionStart(reason=reason))
        plan: CompactionPlan | None = None
        summary: Summary | None = None
        error: str | None = None
        cancelled = False
        try:
            with anyio.CancelScope() as self._scope:
                plan = self._plan(messages, reply_omitted=omitted is not None)
                retry = SummaryRetry(self._retry_enabled(), self._retry.max, self._retry.base_ms, agent.emit, reason)
                summary = await summarize(
                    plan,
                    choice.stream_fn,
                    choice.model,
                    self._summary_options(choice),
                    custom_instructions,
                    self._settings.reserve_tokens,
                    retry.call,
                )
            cancelled = self._scope.cancel_called
        except CompactionError as exc:
            error = str(exc)
        except Exception as exc:
            # The summary request is a run of its own, and this its boundary: whatever breaks in it
            # ends the compaction as failed (told in compaction_end), never the session's tasks.
            _log.exception("compaction failed")
            error = redact(f"{type(exc).__name__}: {exc}", request_secrets(choice.api_key, choice.headers))
        finally:
            self._scope = None
            self.running = False
        if plan is None or summary is None or cancelled:
            if cancelled or error is None:
                agent.emit(CompactionEnd(reason=reason, aborted=True))
                raise CompactionError(CANCELLED)
            said = reason == "manual" or plan is not None  # Pi's automatic ones that find nothing say nothing
            agent.emit(CompactionEnd(reason=reason, error_message=_FAILED[reason] + error if said else UNSET))
            raise CompactionError(error)
        return self._keep(plan, summary, reason, omitted, drop_failed_reply, len(messages))

    def _plan(self, messages: list[Message], *, reply_omitted: bool) -> CompactionPlan:
        entries = self._history.entries
        leaf = entries.entries.get(entries.leaf) if entries.leaf is not None else None
        if isinstance(leaf, CompactionEntry):
            raise CompactionError(ALREADY_COMPACTED)
        previous = entries.latest_compaction()
        # Pi carries over the file lists of its own compactions, not of an extension's (`fromHook`).
        details = previous.details if previous is not None and not previous.from_hook else None
        plan = plan_compaction(
            messages, self._settings, details if isinstance(details, dict) else None, reply_omitted=reply_omitted
        )
        if plan is None:
            raise CompactionError(NOTHING_TO_COMPACT)
        return plan

    def _summary_options(self, choice: ModelChoice) -> StreamOptions:
        """The summary request's options: the session's key, headers and pool, and its thinking
        level when the model reasons (as Pi asks for its summaries)."""
        return StreamOptions(
            api_key=choice.api_key,
            headers=dict(choice.headers),
            session_id=self._history.session_id,
            thinking_level=self._model.thinking_level if choice.model.reasoning else "off",
            http=choice.http,
        )

    def _keep(
        self,
        plan: CompactionPlan,
        summary: Summary,
        reason: CompactionReason,
        omitted: AssistantMessage | None,
        drop_failed_reply: bool,
        planned: int,
    ) -> CompactionResult:
        """The compaction entry written, the context read back from it, compaction_end. With
        nothing kept after an omitted attempt, that attempt is the first kept entry, as Pi names it
        (it stays out of the context)."""
        agent, history = self._agent, self._history
        details = plan.files.details()
        first_kept = next(iter(plan.kept), omitted)
        entry = history.entries.add_compaction(
            summary.text, first_kept, plan.tokens_before, msgspec.to_builtins(details)
        )
        history.keep(entry)
        kept_id = entry.first_kept_entry_id
        assert isinstance(kept_id, str)  # every compaction made here names one
        # The context as the file reads it back; a failed reply to retry stays out of it.
        failed = agent.messages[-1] if drop_failed_reply and planned < len(agent.messages) else None
        agent.messages[:] = [m for m in history.entries.context() if m is not failed]
        result = CompactionResult(
            summary=summary.text,
            first_kept_entry_id=kept_id,
            tokens_before=plan.tokens_before,
            # Pi's estimate of the context as the compacted session now builds it.
            estimated_tokens_after=estimated_tokens(agent.messages),
            usage=summary.usage if summary.usage is not None else UNSET,
            details=details,
        )
        agent.emit(CompactionEnd(reason=reason, result=result, will_retry=reason == "overflow"))
        return result

    def context_usage(self) -> ContextUsage | None:
        """How full the window is. Right after a compaction the size is unknown (tokens and percent
        null, as Pi reports them) until a reply to the compacted context reports its usage."""
        choice = self._model.choice
        if choice is None:
            return None
        window = choice.model.context_window
        since = self._history.entries.since_compaction()
        if since is not None:
            reply = next(
                (
                    m
                    for m in reversed(since)
                    if isinstance(m, AssistantMessage) and m.stop_reason not in ("error", "aborted")
                ),
                None,
            )
            if reply is None or not reported_tokens(reply):
                return ContextUsage(tokens=None, context_window=window, percent=None)
        tokens = context_tokens(self._agent.messages)
        return ContextUsage(
            tokens=tokens, context_window=window, percent=round(100 * tokens / window, 1) if window else 0.0
        )

    def cancel(self) -> None:
        if self._scope is not None:
            self._scope.cancel("abort requested")

"""Compaction as a session does it: the summary request (a run of its own, cancelled by an abort),
its events, and the compaction entry that replaces the older turns in the context.

Planning and summarising are pi_rpc/session/compaction.py's; this is the part that touches the
session, reached through `CompactionHost` (`AgentSession` is the one host), as runs.py does.
"""

from __future__ import annotations

import logging
from typing import Protocol

import anyio

from pi_rpc.agent.agent import Agent
from pi_rpc.agent.types import CompactionEnd, CompactionStart
from pi_rpc.ai.redact import redact, request_secrets
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.types import AssistantMessage
from pi_rpc.session.compaction import (
    CompactionError,
    CompactionReason,
    CompactionResult,
    context_tokens,
    plan_compaction,
    summarize,
)
from pi_rpc.session.config import ModelChoice, SessionConfig
from pi_rpc.session.history import SessionHistory
from pi_rpc.session.types import ContextUsage

_log = logging.getLogger(__name__)


class CompactionHost(Protocol):
    agent: Agent
    config: SessionConfig
    choice: ModelChoice | None
    history: SessionHistory

    @property
    def is_streaming(self) -> bool: ...

    def require_model(self) -> ModelChoice: ...

    async def abort(self) -> None: ...


class SessionCompaction:
    """One compaction at a time; `cancel` ends the running one as aborted."""

    def __init__(self, session: CompactionHost) -> None:
        self._session = session
        self.running = False
        self._scope: anyio.CancelScope | None = None

    async def compact(
        self,
        custom_instructions: str | None = None,
        reason: CompactionReason = "manual",
        drop_failed_reply: bool = False,
    ) -> CompactionResult:
        session, agent = self._session, self._session.agent
        if reason == "manual" and session.is_streaming:
            await session.abort()
        choice = session.require_model()
        if self.running:
            raise CompactionError("Compaction is already running")
        messages = list(agent.messages)
        if drop_failed_reply and messages and isinstance(messages[-1], AssistantMessage):
            messages.pop()
        plan = plan_compaction(messages, session.config.compaction)
        if plan is None:
            raise CompactionError("Nothing to compact (no earlier turns to summarise)")
        self.running = True
        agent.emit(CompactionStart(reason=reason))
        options = StreamOptions(
            api_key=choice.api_key,
            headers=dict(choice.headers),
            session_id=session.history.session_id,
            max_tokens=int(0.8 * session.config.compaction.reserve_tokens),
            http=choice.http,
        )
        summary: str | None = None
        error: str | None = None
        try:
            with anyio.CancelScope() as self._scope:
                summary = await summarize(plan, choice.stream_fn, choice.model, options, custom_instructions)
        except CompactionError as exc:
            error = str(exc)
        except Exception as exc:
            # The summary request is a run of its own, and this its boundary: whatever breaks in it
            # ends the compaction as failed (told in compaction_end), never the session's tasks.
            _log.exception("compaction failed")
            error = redact(
                f"Compaction failed: {type(exc).__name__}: {exc}", request_secrets(choice.api_key, choice.headers)
            )
        finally:
            self._scope = None
            self.running = False
        if summary is None:
            message = error or "Compaction aborted"
            agent.emit(CompactionEnd(reason=reason, aborted=error is None, error_message=message))
            raise CompactionError(message)
        details = {"summarizedMessages": len(plan.to_summarize)}
        history = session.history
        entry = history.entries.add_compaction(summary, next(iter(plan.kept), None), plan.tokens_before, details)
        history.keep(entry)
        # The context as the file reads it back; a failed reply to retry stays out of it.
        failed = agent.messages[-1] if drop_failed_reply and len(messages) < len(agent.messages) else None
        agent.messages[:] = [m for m in history.entries.context() if m is not failed]
        result = CompactionResult(
            summary=summary,
            first_kept_entry_id=entry["firstKeptEntryId"],
            tokens_before=plan.tokens_before,
            details=details,
        )
        agent.emit(CompactionEnd(reason=reason, result=result, will_retry=reason == "overflow"))
        return result

    def context_usage(self) -> ContextUsage | None:
        choice = self._session.choice
        if choice is None:
            return None
        window = choice.model.context_window
        tokens = context_tokens(self._session.agent.messages)
        return ContextUsage(
            tokens=tokens, context_window=window, percent=round(100 * tokens / window, 1) if window else 0.0
        )

    def cancel(self) -> None:
        if self._scope is not None:
            self._scope.cancel("abort requested")

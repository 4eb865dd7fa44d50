"""Retries of a compaction's summary request, by the session's retry settings (Pi 0.81.1).

A summary request that fails for a passing reason (the auto-retry's test, `auto_retry.py`) is
asked again up to `retry.maxRetries` times (none when `retry.enabled` is false), waiting
`baseDelayMs * 2**(attempt-1)` first. The client sees `summarization_retry_scheduled {attempt,
maxAttempts, delayMs, errorMessage}` before each wait, `summarization_retry_attempt_start {source,
reason}` after it, and once a retried request has ended (answered, failed for good, or cancelled
during a wait) `summarization_retry_finished`. A request that never failed says nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import msgspec

from pi_rpc.agent import (
    AgentEvent,
    SummarizationRetryAttemptStart,
    SummarizationRetryFinished,
    SummarizationRetryScheduled,
)
from pi_rpc.ai import AssistantMessage, backoff_ms
from pi_rpc.session.auto_retry import is_passing_failure
from pi_rpc.session.compaction.planning import CompactionReason


class SummaryRetry(msgspec.Struct, frozen=True):
    """How one compaction's summary requests are retried, and where it tells about it."""

    enabled: bool
    max_retries: int
    base_ms: int
    emit: Callable[[AgentEvent], None]
    reason: CompactionReason

    async def call(self, produce: Callable[[], Awaitable[AssistantMessage]]) -> AssistantMessage:
        """`produce`'s reply, asked again while it fails for a passing reason and attempts are left."""
        max_attempts = self.max_retries if self.enabled else 0
        attempt = 0
        retried = False
        while True:
            reply = await produce()
            if reply.stop_reason != "error" or attempt >= max_attempts or not is_passing_failure(reply):
                if retried:
                    self.emit(SummarizationRetryFinished())
                return reply
            attempt += 1
            retried = True
            delay_ms = backoff_ms(attempt, self.base_ms)
            error = reply.error_message or "Unknown error"
            self.emit(
                SummarizationRetryScheduled(
                    attempt=attempt, max_attempts=max_attempts, delay_ms=delay_ms, error_message=error
                )
            )
            try:
                await anyio.sleep(delay_ms / 1000)
            except anyio.get_cancelled_exc_class():
                self.emit(SummarizationRetryFinished())
                raise
            self.emit(SummarizationRetryAttemptStart(source="compaction", reason=self.reason))

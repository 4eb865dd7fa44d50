"""Pi's automatic retry of a run whose model request failed for a passing reason, as Pi's own RPC
mode shows it (spec 18.12; Pi mode only; the other front ends retry inside the request, `ai/http.py`).

The failed reply ends its run as any failure does (`message_end` with `stopReason: "error"`,
`turn_end`, `agent_end`); then `auto_retry_start {attempt, maxAttempts, delayMs, errorMessage}`,
a wait of `backoff_ms(attempt)` (base * 2**(attempt-1) ms), and the run goes on without a new prompt (a new
`agent_start`). The failed reply leaves the context (the session file keeps it). The first reply
that does not fail is followed, at its `message_end`, by `auto_retry_end {success: true,
attempt}`; when the last attempt fails too, `auto_retry_end {success: false, attempt,
finalError}`; an abort during the wait (`abort`, `abort_retry`) ends it with `finalError: "Retry
cancelled"`. A request refused for its size is not retried: compaction handles it. Every
`agent_end` says whether the run is retried after it (`willRetry`, as newest Pi sends it): its
last reply failed for a passing reason and attempts are left (`RetrySeries`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio
import msgspec

from pi_rpc.agent import Agent, AgentEvent, MessageEnd, RunControl
from pi_rpc.ai import NOT_RETRIED_NOTE, AssistantMessage, AutoRetryEnd, AutoRetryStart, Message, backoff_ms
from pi_rpc.session.compaction.planning import is_context_overflow

if TYPE_CHECKING:
    from pi_rpc.agent import LoopConfig

# What Pi counts as passing: overload, rate limits, server errors, dropped or refused connections,
# timeouts, a stream cut short. Compiled by the first failure (`re`'s cache keeps it), not at start.
_PASSING = (
    r"overloaded|provider.?returned.?error|rate.?limit|too many requests|\b(?:429|500|502|503|504)\b"
    r"|service.?unavailable|server.?error|internal.?error|network.?error|connection.?(?:error|refused|lost)"
    r"|websocket.?(?:closed|error)|other side closed|fetch failed|upstream.?connect|reset before headers"
    r"|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated"
    r"|retry delay"
)
CANCELLED = "Retry cancelled"


def is_passing_failure(message: Message | None) -> bool:
    """A reply that failed for a reason a later attempt may not meet."""
    if not isinstance(message, AssistantMessage) or message.stop_reason != "error":
        return False
    if not isinstance(message.error_message, str) or not message.error_message:
        return False
    if NOT_RETRIED_NOTE in message.error_message:
        return False  # a 5xx that blames the request (ai/http.py): another attempt fails the same way
    text = message.error_message
    return not is_context_overflow(text) and re.search(_PASSING, text, re.IGNORECASE) is not None


class RetrySeries(msgspec.Struct):
    """The attempts made since the last reply that did not fail (Pi's `_retryAttempt`), out of
    `max_attempts`: whether a run that just ended is retried is known at its `agent_end`."""

    max_attempts: int
    attempt: int = 0

    def will_retry(self, new_messages: Sequence[Message]) -> bool:
        """Whether a run whose new messages are these is retried (Pi's `_willRetryAfterAgentEnd`:
        the run's last reply, attempts left; the retries being on is the caller's to check)."""
        last = next((m for m in reversed(new_messages) if isinstance(m, AssistantMessage)), None)
        return is_passing_failure(last) and self.attempt < self.max_attempts


async def retry_failed_run(
    agent: Agent,
    control: RunControl,
    config: LoopConfig,
    series: RetrySeries,
    base_ms: int,
    omit: Callable[[Message], None] = lambda message: None,
) -> list[Message]:
    """Run again, up to `series.max_attempts` times, while the last reply failed for a passing
    reason; the new messages of the runs made. Each failed reply leaves the context, and `omit`
    is told (the session's file records it). `series` counts the attempts as they are made
    (`config.will_retry` reads it at each `agent_end`) and is back at 0 on return."""
    made: list[Message] = []
    max_attempts = series.max_attempts
    while not control.aborted and is_passing_failure(last := agent.messages[-1] if agent.messages else None):
        assert isinstance(last, AssistantMessage) and isinstance(last.error_message, str)
        series.attempt += 1
        attempt = series.attempt
        if attempt > max_attempts:
            agent.emit(AutoRetryEnd(success=False, attempt=attempt - 1, final_error=last.error_message))
            break
        delay_ms = backoff_ms(attempt, base_ms)
        agent.emit(
            AutoRetryStart(
                attempt=attempt, max_attempts=max_attempts, delay_ms=delay_ms, error_message=last.error_message
            )
        )
        omit(agent.messages.pop())
        with control.scope():
            await anyio.sleep(delay_ms / 1000)
        if control.aborted:
            agent.emit(AutoRetryEnd(success=False, attempt=attempt, final_error=CANCELLED))
            break

        announced = False

        def announce_success(event: AgentEvent, attempt: int = attempt) -> None:
            # Any reply that did not fail ends the retries, an aborted one too (as in Pi).
            nonlocal announced
            message = event.message if isinstance(event, MessageEnd) else None
            if not announced and isinstance(message, AssistantMessage) and message.stop_reason != "error":
                announced = True
                series.attempt = 0  # a later failure, of this run too, starts a new series, as in Pi
                agent.emit(AutoRetryEnd(success=True, attempt=attempt))

        stop_listening = agent.subscribe(announce_success)
        try:
            made += await agent.run(control, [], config)
        finally:
            stop_listening()
    series.attempt = 0
    return made

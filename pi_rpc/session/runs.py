"""A session's runs: start one or queue into it, abort it, and what each one ended with.

A run is a task of the session's task group, not of the request that started it: a client that
cancels its request gets a graceful abort (agent_end, results for every call), never a torn-down
run. The session is busy for the whole run as a client sees it, agent_start … agent_settled: the
agent's claim (`Agent.begin_run` … `end_run`) is the one busy flag, and it covers the loop, the
compaction after it and the overflow retry.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Literal, Protocol

import anyio
import anyio.abc

from pi_rpc.agent.agent import Agent
from pi_rpc.agent.control import RunControl
from pi_rpc.agent.loop import LoopConfig
from pi_rpc.agent.types import AgentSettled
from pi_rpc.ai.types import AssistantMessage, ImageContent, Message, TextContent, Usage, UserContent, UserMessage
from pi_rpc.ai.usage import add_usage
from pi_rpc.session.auto_retry import retry_failed_run
from pi_rpc.session.compaction import (
    CompactionError,
    CompactionReason,
    CompactionResult,
    context_tokens,
    is_context_overflow,
    should_compact,
)
from pi_rpc.session.config import ModelChoice, SessionConfig
from pi_rpc.session.resources import Resources
from pi_rpc.session.types import PromptOutcome

StreamingBehavior = Literal["steer", "followUp"]


class RunHost(Protocol):
    """What a session offers its runs (`AgentSession` is the one host): the agent, the model and
    settings as they are now, and the session's own steps a run takes."""

    agent: Agent
    choice: ModelChoice | None
    config: SessionConfig
    resources: Resources
    auto_compaction_enabled: bool
    auto_retry_enabled: bool

    def require_model(self) -> ModelChoice: ...

    def loop_config(self) -> LoopConfig: ...

    def flush_pending_bash(self) -> None: ...

    def cancel_compaction(self) -> None: ...

    async def compact(
        self,
        custom_instructions: str | None = None,
        reason: CompactionReason = "manual",
        drop_failed_reply: bool = False,
    ) -> CompactionResult: ...


class Run:
    """One prompt as its sender sees it: a run that was started (its outcome once it settles), or
    a message queued into the running one as steer or follow-up (settled at once)."""

    def __init__(self, queued: StreamingBehavior | None = None) -> None:
        self.queued = queued
        self._outcome = None if queued is None else PromptOutcome(queued=queued)
        self._settled = anyio.Event()
        if self._outcome is not None:
            self._settled.set()

    @property
    def outcome(self) -> PromptOutcome | None:
        """How the run ended; None while it is going."""
        return self._outcome

    async def wait(self) -> PromptOutcome:
        """The outcome, once the run has settled (after its `agent_settled`)."""
        await self._settled.wait()
        assert self._outcome is not None  # set before the event
        return self._outcome

    def settle(self, outcome: PromptOutcome) -> None:
        self._outcome = outcome
        self._settled.set()


class SessionRuns:
    """Starts, queues and aborts the runs of one session."""

    def __init__(self, session: RunHost, tasks: anyio.abc.TaskGroup) -> None:
        self._session = session
        self._tasks = tasks

    @property
    def is_streaming(self) -> bool:
        return self._session.agent.is_running

    def start(
        self, text: str, images: Sequence[ImageContent] = (), streaming_behavior: StreamingBehavior | None = None
    ) -> Run:
        """Start a run, or queue the message into the running one as `streaming_behavior` says
        (else `AgentBusyError`). Nothing here awaits, so a request handled after this one
        already sees the session busy."""
        session, agent = self._session, self._session.agent
        session.require_model()
        message = user_message(session.resources.expand(text), images)
        if agent.is_running and streaming_behavior is not None:
            (agent.steer if streaming_behavior == "steer" else agent.follow_up)(message)
            return Run(queued=streaming_behavior)
        control = agent.begin_run()  # the busy error when a run is going; an abort sent next finds this one
        session.flush_pending_bash()
        run = Run()
        prompts: list[Message] = [message]
        self._tasks.start_soon(self._run, control, prompts, run)
        return run

    async def prompt(
        self, text: str, images: Sequence[ImageContent] = (), streaming_behavior: StreamingBehavior | None = None
    ) -> PromptOutcome:
        """Start a run and wait for its end, or queue the message into the running one."""
        return await self.outcome_of(self.start(text, images, streaming_behavior))

    async def outcome_of(self, run: Run) -> PromptOutcome:
        """`run`'s outcome once it settles. A run outlives whoever waits for it: a wait that is
        cancelled ($/cancelRequest, a client gone) aborts the run gracefully."""
        if run.outcome is not None:  # queued: nothing to wait for, nothing to abort
            return run.outcome
        try:
            return await run.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.abort()
            raise

    def steer(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self._session.agent.steer(user_message(self._session.resources.expand(text), images))

    def follow_up(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self._session.agent.follow_up(user_message(self._session.resources.expand(text), images))

    async def abort(self) -> None:
        """Abort the run (and a compaction), if any, and return once the session is idle."""
        self._session.cancel_compaction()
        self._session.agent.abort()
        await self._session.agent.wait_for_idle()

    async def _run(self, control: RunControl, prompts: list[Message], run: Run) -> None:
        agent = self._session.agent
        new_messages: list[Message] = []
        aborted = False
        try:
            new_messages = await agent.run(control, prompts, self._session.loop_config())
            if self._session.config.retry_after_run and self._session.auto_retry_enabled:
                config = self._session.config
                new_messages += await retry_failed_run(
                    agent, control, self._session.loop_config(), config.retry_max, config.retry_base_ms
                )
            aborted = control.aborted
            if not aborted:
                retried = await self._compact_after_run(control)
                if retried is not None:
                    new_messages += retried
                    aborted = control.aborted
        finally:
            outcome = run_outcome(new_messages, aborted=aborted)
            agent.end_run(control)
            agent.emit(AgentSettled())
            run.settle(outcome)

    async def _compact_after_run(self, control: RunControl) -> list[Message] | None:
        """Pi's automatic compaction after a run: when the context nears the window, or when the
        request failed because it overflowed (then the run is retried once, compacted, on the same
        claim; its new messages are returned, None when there was no retry)."""
        session = self._session
        settings = session.config.compaction
        if session.choice is None or not session.auto_compaction_enabled or not settings.enabled:
            return None
        messages = session.agent.messages
        last = messages[-1] if messages else None
        if isinstance(last, AssistantMessage) and last.stop_reason == "error":
            if not is_context_overflow(last.error_message or ""):
                return None
            try:
                await session.compact(reason="overflow", drop_failed_reply=True)
            except CompactionError:
                return None
            return await session.agent.run(control, [], session.loop_config())
        if should_compact(context_tokens(messages), session.choice.model.context_window, settings):
            with contextlib.suppress(CompactionError):  # the failure is reported in compaction_end
                await session.compact(reason="threshold")
        return None


def user_message(text: str, images: Sequence[ImageContent] = ()) -> UserMessage:
    """Content is always a list of blocks, as Pi builds a prompt's message (clients read it so)."""
    content: list[UserContent] = [TextContent(text=text), *images]
    return UserMessage(content=content)


def total_usage(assistants: Sequence[AssistantMessage]) -> Usage:
    usage = Usage()
    for message in assistants:
        usage = add_usage(usage, message.usage)
    return usage


def run_outcome(new_messages: list[Message], aborted: bool = False) -> PromptOutcome:
    assistants = [m for m in new_messages if isinstance(m, AssistantMessage)]
    usage = total_usage(assistants)
    if not assistants:
        return PromptOutcome(stop_reason="aborted", usage=usage)
    last = assistants[-1]
    outcome = PromptOutcome(stop_reason="aborted" if aborted else last.stop_reason, usage=usage)
    if last.error_message:
        outcome.error_message = last.error_message
    return outcome

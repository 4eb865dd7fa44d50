"""A session's runs: start one or queue into it, abort it, and what each one ended with.

A run is a task of the session's task group, not of the request that started it: a client that
cancels its request gets a graceful abort (agent_end, results for every call), never a torn-down
run. The session is busy for the whole run as a client sees it, agent_start … agent_settled: the
agent's claim (`Agent.begin_run` … `end_run`) is the one busy flag, and it covers the compaction a
prompt may need first, the loop, the compaction after it and the overflow retry.

Compaction is checked where Pi checks it (its `_checkCompaction`): after a run, on its last reply,
and before a prompt is sent, on the transcript's last reply (which catches an aborted run, a
session loaded near the window, and a switch to a model with a smaller one). A reply from before
the latest compaction is not looked at: its usage or error describes the context before it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

import anyio
import anyio.abc
import msgspec

from pi_rpc.agent import Agent, AgentSettled, CompactionEnd, RunControl
from pi_rpc.ai import AssistantMessage, ImageContent, Message, TextContent, Usage, UserContent, UserMessage, add_usage
from pi_rpc.session.auto_retry import RetrySeries, retry_failed_run
from pi_rpc.session.compaction.planning import (
    CompactionError,
    CompactionSettings,
    context_tokens,
    is_context_overflow,
    last_usage_index,
    reported_tokens,
    should_compact,
)
from pi_rpc.session.compaction.session_compaction import SessionCompaction
from pi_rpc.session.configuration.config import RetryConfig
from pi_rpc.session.models.current import SessionModel
from pi_rpc.session.storage.history import SessionHistory
from pi_rpc.session.types import PromptOutcome

if TYPE_CHECKING:
    from pi_rpc.agent import LoopConfig  # the loop itself is loaded by the first run

StreamingBehavior = Literal["steer", "followUp"]
# Pi's compaction_end when the request retried after an overflow compaction overflows again.
OVERFLOW_RECOVERY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)


class AutoToggles(msgspec.Struct):
    """Pi's switches (`set_auto_compaction`, `set_auto_retry`): a client may flip them before the
    features they govern run; the runs read them as they are then."""

    compaction: bool = True
    retry: bool = True


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
    """Starts, queues and aborts the runs of one session: its agent's, in the session's task group,
    on its current model, with its compaction; `loop_config` is the session's loop as it is now and
    `expand` its prompt templates' and skills' expansion of a prompt."""

    def __init__(
        self,
        agent: Agent,
        tasks: anyio.abc.TaskGroup,
        *,
        model: SessionModel,
        history: SessionHistory,
        compaction: SessionCompaction,
        settings: CompactionSettings,
        retry: RetryConfig,
        toggles: AutoToggles,
        loop_config: Callable[[], LoopConfig],
        expand: Callable[[str], str],
    ) -> None:
        self._agent = agent
        self._tasks = tasks
        self._model = model
        self._history = history
        self._compaction = compaction
        self._settings = settings
        self._retry = retry
        self._toggles = toggles
        self._session_loop = loop_config
        self._expand = expand
        # Pi mode's retries between runs (session/auto_retry.py): the attempts of the current series.
        self._retries = RetrySeries(retry.max)

    def _loop_config(self) -> LoopConfig:
        """The session's loop as it is now; in Pi mode each `agent_end` says whether the run is
        retried after it (Pi's `willRetry`)."""
        config = self._session_loop()
        if not self._retry.after_run:
            return config
        return msgspec.structs.replace(
            config, will_retry=lambda messages: self._toggles.retry and self._retries.will_retry(messages)
        )

    @property
    def is_streaming(self) -> bool:
        """A run is going: from the prompt that started it until its `agent_settled`."""
        return self._agent.is_running

    def start(
        self,
        text: str,
        images: Sequence[ImageContent] = (),
        streaming_behavior: StreamingBehavior | None = None,
        on_accepted: Callable[[], None] | None = None,
    ) -> Run:
        """Start a run, or queue the message into the running one as `streaming_behavior` says
        (else `AgentBusyError`). Nothing here awaits, so a request handled after this one
        already sees the session busy. `on_accepted` is called once the prompt is queued, or is
        about to be sent: after the compaction it needed first, before the run's first event
        (where Pi answers its `prompt` command)."""
        agent = self._agent
        self._model.require()
        message = user_message(self._expand(text), images)
        if agent.is_running and streaming_behavior is not None:
            (agent.steer if streaming_behavior == "steer" else agent.follow_up)(message)
            if on_accepted is not None:
                on_accepted()
            return Run(queued=streaming_behavior)
        control = agent.begin_run()  # the busy error when a run is going; an abort sent next finds this one
        self._history.flush_pending_bash()
        run = Run()
        prompts: list[Message] = [message]
        self._tasks.start_soon(self._run, control, prompts, run, on_accepted or (lambda: None))
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
        self._agent.steer(user_message(self._expand(text), images))

    def follow_up(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self._agent.follow_up(user_message(self._expand(text), images))

    async def abort(self) -> None:
        """Abort the run (and a compaction), if any, and return once the session is idle."""
        self._compaction.cancel()
        self._agent.abort()
        await self._agent.wait_for_idle()

    async def _run(
        self, control: RunControl, prompts: list[Message], run: Run, on_accepted: Callable[[], None]
    ) -> None:
        agent = self._agent
        new_messages: list[Message] = []
        aborted = False
        accepted = False
        try:
            last = _last_reply(agent.messages)
            if last is not None:  # Pi checks before sending too; the prompt itself is then the retry
                await self._check_compaction(control, last, before_prompt=True)
            accepted = True
            on_accepted()
            self._retries.attempt = 0
            new_messages = await agent.run(control, prompts, self._loop_config())
            if self._retry.after_run and self._toggles.retry:
                new_messages += await retry_failed_run(
                    agent,
                    control,
                    self._loop_config(),
                    self._retries,
                    self._retry.base_ms,
                    self._history.omit_from_context,
                )
            aborted = control.aborted
            last = _last_reply(agent.messages)
            if not aborted and last is not None:
                new_messages += await self._check_compaction(control, last)
                aborted = control.aborted
        finally:
            if not accepted:
                on_accepted()
            outcome = run_outcome(new_messages, aborted=aborted)
            agent.end_run(control)
            agent.emit(AgentSettled(aborted=control.aborted))
            run.settle(outcome)

    async def _check_compaction(
        self, control: RunControl, reply: AssistantMessage, before_prompt: bool = False, recovering: bool = False
    ) -> list[Message]:
        """Pi's automatic compaction, looking at `reply`: after an overflow (the failed reply out
        of the context; after a run, the run is retried once, compacted, on the same claim, and a
        retry that overflows again is reported as the recovery failing), or when the context nears
        the window. Returns the retry's new messages."""
        choice, settings = self._model.choice, self._settings
        if choice is None or not self._toggles.compaction or not settings.enabled:
            return []
        if not before_prompt and reply.stop_reason == "aborted":
            return []
        since = self._history.entries.since_compaction()
        if since is not None and not any(message is reply for message in since):
            return []  # from before the latest compaction: it tells nothing of the context now
        model = choice.model
        same_model = (reply.provider, reply.model) == (model.provider, model.id)
        if same_model and reply.stop_reason == "error" and is_context_overflow(reply.error_message or ""):
            if recovering:
                self._agent.emit(CompactionEnd(reason="overflow", error_message=OVERFLOW_RECOVERY_FAILED))
                return []
            try:
                await self._compaction.compact(reason="overflow", drop_failed_reply=True)
            except CompactionError:  # reported in compaction_end
                return []
            if before_prompt or control.aborted:
                return []
            retried = await self._agent.run(control, [], self._loop_config())
            last = _last_reply(retried)
            if control.aborted or last is None:
                return retried
            return retried + await self._check_compaction(control, last, recovering=True)
        tokens = reported_tokens(reply) if reply.stop_reason not in ("error", "aborted") else 0
        if not tokens:
            # No usage on the reply (a failure, an abort, a server that reports none): the last
            # good reply's and an estimate of what followed it, as Pi estimates after a failure,
            # unless that reply was sent the context from before the compaction.
            messages = self._agent.messages
            index = last_usage_index(messages)
            if index is not None and since is not None and not any(m is messages[index] for m in since):
                return []
            tokens = context_tokens(messages)
        if should_compact(tokens, model.context_window, settings):
            with contextlib.suppress(CompactionError):  # the failure is reported in compaction_end
                await self._compaction.compact(reason="threshold")
        return []


def _last_reply(messages: Sequence[Message]) -> AssistantMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)


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
    ended = "stop" if last.stop_reason == "pending" else last.stop_reason  # a run's replies have all ended
    outcome = PromptOutcome(stop_reason="aborted" if aborted else ended, usage=usage)
    if last.error_message:
        outcome.error_message = last.error_message
    return outcome

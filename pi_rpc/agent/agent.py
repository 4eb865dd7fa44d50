"""Agent: the transcript, the steering/follow-up queues, subscribers, and one run at a time.

`prompt()` runs the loop in the caller's task and returns when the run has ended; `abort()` cancels
the run's model stream and tools through its RunControl and returns once the agent is idle.
Whatever fails inside a run ends it with an assistant message carrying the error (spec 15.13), so
every run emits exactly one `agent_end`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Literal

import anyio
import msgspec

from pi_rpc.agent.control import RunControl
from pi_rpc.agent.loop import LoopConfig, run_loop
from pi_rpc.agent.types import AgentEnd, AgentEvent, MessageEnd, MessageStart, QueueUpdate
from pi_rpc.ai.types import AssistantMessage, Message, TextContent, UserMessage, text_of

_log = logging.getLogger(__name__)

QueueMode = Literal["all", "one-at-a-time"]

BUSY_PROMPT = (
    "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
)


class AgentBusyError(RuntimeError):
    pass


class Agent:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.steering_mode: QueueMode = "one-at-a-time"
        self.follow_up_mode: QueueMode = "one-at-a-time"
        self._steering: list[UserMessage] = []
        self._follow_ups: list[UserMessage] = []
        self._delivering: set[int] = set()  # ids of messages taken from a queue, not yet started
        self._listeners: list[Callable[[AgentEvent], None]] = []
        self._control: RunControl | None = None
        self._idle = anyio.Event()
        self._idle.set()
        self.last_run_aborted = False

    # --- observation ----------------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        return self._control is not None

    def subscribe(self, listener: Callable[[AgentEvent], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: AgentEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # one broken listener must not stop the run or the others
                _log.exception("event listener failed on %s", type(event).__name__)

    # --- queues ---------------------------------------------------------------------------------

    def steer(self, message: UserMessage) -> None:
        self._steering.append(message)
        self._queue_changed()

    def follow_up(self, message: UserMessage) -> None:
        self._follow_ups.append(message)
        self._queue_changed()

    def clear_queues(self) -> tuple[list[str], list[str]]:
        steering = [text_of(m.content) for m in self._steering]
        follow_ups = [text_of(m.content) for m in self._follow_ups]
        self._steering.clear()
        self._follow_ups.clear()
        self._queue_changed()
        return steering, follow_ups

    @property
    def pending_count(self) -> int:
        return len(self._steering) + len(self._follow_ups)

    def _drain(self, queue: list[UserMessage], mode: QueueMode) -> list[Message]:
        if not queue:
            return []
        taken: list[Message] = list(queue) if mode == "all" else [queue[0]]
        del queue[: len(taken)]
        # Announced as each one starts, as Pi does: a client sees the queue shrink when the
        # message enters the conversation, after the turn_start of the turn that takes it.
        self._delivering.update(id(message) for message in taken)
        return taken

    def _queue_changed(self) -> None:
        self.emit(
            QueueUpdate(
                steering=[text_of(m.content) for m in self._steering],
                follow_up=[text_of(m.content) for m in self._follow_ups],
            )
        )

    # --- runs -----------------------------------------------------------------------------------

    async def prompt(self, prompts: list[Message], config: LoopConfig) -> list[Message]:
        return await self.run(self.begin_run(), prompts, config)

    def begin_run(self) -> RunControl:
        """Claim the agent for a run, synchronously: an abort that arrives before the run's task
        has started is recorded on the returned control and takes effect as the run begins."""
        if self._control is not None:
            raise AgentBusyError(BUSY_PROMPT)
        self._control = RunControl()
        self._idle = anyio.Event()
        return self._control

    async def run(self, control: RunControl, prompts: list[Message], config: LoopConfig) -> list[Message]:
        """Run the loop on a control from `begin_run`."""
        config.options = msgspec.structs.replace(config.options, run_id=uuid.uuid4().hex)
        config.steering = lambda: self._drain(self._steering, self.steering_mode)
        config.follow_ups = lambda: self._drain(self._follow_ups, self.follow_up_mode)
        ended = False

        def emit(event: AgentEvent) -> None:
            nonlocal ended
            ended = ended or isinstance(event, AgentEnd)
            if isinstance(event, MessageStart) and id(event.message) in self._delivering:
                self._delivering.discard(id(event.message))
                self._queue_changed()
            self.emit(event)

        try:
            return await run_loop(prompts, self.messages, config, control, emit)
        except Exception as exc:
            _log.exception("agent run failed")
            if ended:
                return []
            failure = AssistantMessage(
                content=[TextContent(text="")],
                api=config.model.api,
                provider=config.model.provider,
                model=config.model.id,
                stop_reason="aborted" if control.aborted else "error",
                error_message=f"{type(exc).__name__}: {exc}",
            )
            self.messages.append(failure)
            emit(MessageStart(message=failure))
            emit(MessageEnd(message=failure))
            emit(AgentEnd(messages=[failure]))
            return [failure]
        finally:
            if self._delivering:  # taken from a queue, then the run ended before they started
                self._delivering.clear()
                self._queue_changed()
            self.last_run_aborted = control.aborted
            self._control = None
            self._idle.set()

    def abort(self) -> None:
        """Request an abort; harmless when idle or repeated."""
        if self._control is not None:
            self._control.abort()

    async def wait_for_idle(self) -> None:
        await self._idle.wait()

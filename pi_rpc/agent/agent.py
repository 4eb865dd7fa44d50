"""Agent: the transcript, the steering/follow-up queues, subscribers, and one run at a time.

A run is claimed (`begin_run`, synchronous), run (`run`: one pass of the loop, agent_start …
agent_end) and released (`end_run`); `prompt()` does all three in the caller's task. `abort()`
cancels the run's model stream and tools through its RunControl; `wait_for_idle()` returns once the
claim is released. Whatever fails inside a run ends it with an assistant message carrying the error
(spec 15.14), so every run emits exactly one `agent_end`.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import anyio
import msgspec

from pi_rpc.agent.control import RunControl
from pi_rpc.agent.types import (
    AgentEnd,
    AgentEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    QueueUpdate,
    TurnEnd,
    TurnStart,
    WaitForRoom,
)
from pi_rpc.ai import AssistantMessage, ErrorEvent, Message, ProviderEvent, UserMessage, text_of

if TYPE_CHECKING:
    from pi_rpc.agent.loop import LoopConfig

_log = logging.getLogger(__name__)

QueueMode = Literal["all", "one-at-a-time"]

# Pi's session-level text (spec 15.13): clients read it, in the JSON-RPC -32002 and pi mode's error.
BUSY_TEXT = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."


class AgentBusyError(RuntimeError):
    """A run was asked for while one is going: the one busy error, from `Agent.begin_run`."""

    def __init__(self, message: str = BUSY_TEXT) -> None:
        super().__init__(message)


class Agent:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.steering_mode: QueueMode = "one-at-a-time"
        self.follow_up_mode: QueueMode = "one-at-a-time"
        self._steering: list[UserMessage] = []
        self._follow_ups: list[UserMessage] = []
        self._delivering: set[int] = set()  # ids of messages taken from a queue, not yet started
        self._listeners: list[Callable[[AgentEvent], None]] = []
        self._rooms: list[WaitForRoom] = []
        self._control: RunControl | None = None
        self._idle = anyio.Event()
        self._idle.set()

    # --- observation ----------------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        return self._control is not None

    def subscribe(
        self, listener: Callable[[AgentEvent], None], wait_for_room: WaitForRoom | None = None
    ) -> Callable[[], None]:
        """`listener` gets every event; a listener that writes to a client may pass how to wait
        while that client is far behind, and the model's stream then holds for it."""
        self._listeners.append(listener)
        if wait_for_room is not None:
            self._rooms.append(wait_for_room)

        def unsubscribe() -> None:
            self._listeners.remove(listener)
            if wait_for_room is not None:
                self._rooms.remove(wait_for_room)

        return unsubscribe

    async def wait_for_room(self) -> None:
        """Until no listener's client is too far behind (at once, when none is)."""
        for wait in self._rooms:
            await wait()

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
        """One run from claim to release, in the caller's task."""
        control = self.begin_run()
        try:
            return await self.run(control, prompts, config)
        finally:
            self.end_run(control)

    def begin_run(self) -> RunControl:
        """Claim the agent for a run, synchronously: an abort that arrives before the run's task
        has started is recorded on the returned control and takes effect as the run begins. The
        claim is the one busy flag: it holds until `end_run`, across every `run` made on it."""
        if self._control is not None:
            raise AgentBusyError()
        self._control = RunControl()
        self._idle = anyio.Event()
        _claimed.add(self)
        return self._control

    def end_run(self, control: RunControl) -> None:
        """Release the claim `begin_run` made: the agent is idle again."""
        if self._control is control:
            self._control = None
            self._idle.set()
            _claimed.discard(self)

    async def run(self, control: RunControl, prompts: list[Message], config: LoopConfig) -> list[Message]:
        """One pass of the loop (agent_start … agent_end) on a claim from `begin_run`, which stays
        held: the session runs again after an overflow compaction before it releases the claim.

        This is the run boundary, the one place a failure is caught: whatever raises inside the
        run (a stream function that breaks its contract, a hook, a bug) ends it with an assistant
        message carrying the error and one `agent_end` (spec 15.14)."""
        config = msgspec.structs.replace(
            config,
            options=msgspec.structs.replace(config.options, run_id=uuid.uuid4().hex),
            steering=lambda: self._drain(self._steering, self.steering_mode),
            follow_ups=lambda: self._drain(self._follow_ups, self.follow_up_mode),
            wait_for_room=self.wait_for_room,
        )
        first_new = len(self.messages)
        seen = _SeenEvents()

        def emit(event: AgentEvent) -> None:
            seen.note(event)
            if isinstance(event, AgentEnd) and config.will_retry is not None:
                event.will_retry = config.will_retry(event.messages)
            if isinstance(event, MessageStart) and id(event.message) in self._delivering:
                self._delivering.discard(id(event.message))
                self._queue_changed()
            self.emit(event)

        # The loop is loaded by the first run (or the warm-up), not by the daemon's start: an agent
        # made before the handshake is answered is not yet one that runs (session/warm_up.py).
        from pi_rpc.agent.loop import run_loop

        try:
            return await run_loop(prompts, self.messages, config, control, emit)
        except Exception as exc:
            _log.exception("agent run failed")
            if seen.ended:
                return []
            failure = self._fail_run(exc, config, control, seen.streaming, emit)
            if seen.turn_open:
                emit(TurnEnd(message=failure, tool_results=[]))
            new_messages = self.messages[first_new:]
            emit(AgentEnd(messages=new_messages))
            return new_messages
        finally:
            if self._delivering:  # taken from a queue, then the run ended before they started
                self._delivering.clear()
                self._queue_changed()

    def _fail_run(
        self,
        exc: Exception,
        config: LoopConfig,
        control: RunControl,
        streaming: AssistantMessage | None,
        emit: Callable[[AgentEvent], None],
    ) -> AssistantMessage:
        """The run's last message: the one streaming when the failure came, else a new empty one,
        ended with the error as a failed stream ends (an error update, then message_end). No key
        or credential header of the request shows in its text."""
        reason: Literal["error", "aborted"] = "aborted" if control.aborted else "error"
        from pi_rpc.ai import AssistantBuilder, request_secrets

        updates: list[ProviderEvent] = []
        builder = AssistantBuilder(config.model, updates.append)
        builder.keep_secret(*request_secrets(config.options.api_key, config.options.headers))
        failed = builder.fail(reason, f"{type(exc).__name__}: {exc}")
        message = failed if streaming is None else streaming
        if streaming is None:
            emit(MessageStart(message=message))
        else:
            message.stop_reason, message.error_message = failed.stop_reason, failed.error_message
        for update in updates:
            if isinstance(update, ErrorEvent):
                emit(MessageUpdate(assistant_message_event=update))
        self.messages.append(message)
        emit(MessageEnd(message=message))
        return message

    def abort(self) -> None:
        """Request an abort; harmless when idle or repeated."""
        if self._control is not None:
            self._control.abort()

    async def wait_for_idle(self) -> None:
        await self._idle.wait()


async def all_agents_idle() -> None:
    """Return once no agent of this process holds a run claim: work that can wait (a fresh
    daemon's warm-up, session/warm_up.py) keeps out of a run's way."""
    while _claimed:
        running = next(iter(_claimed), None)
        if running is not None:
            await running.wait_for_idle()


# Process state on purpose: the agents of this process that hold a run claim, weakly (an agent
# dropped mid-run leaves the set with it).
_claimed: weakref.WeakSet[Agent] = weakref.WeakSet()


class _SeenEvents:
    """What a run has emitted so far, so that a failure can end it well formed."""

    def __init__(self) -> None:
        self.streaming: AssistantMessage | None = None  # started, not yet ended
        self.turn_open = False
        self.ended = False

    def note(self, event: AgentEvent) -> None:
        if isinstance(event, MessageStart) and isinstance(event.message, AssistantMessage):
            self.streaming = event.message
        elif isinstance(event, MessageEnd):
            self.streaming = None
        elif isinstance(event, TurnStart):
            self.turn_open = True
        elif isinstance(event, TurnEnd):
            self.turn_open = False
        elif isinstance(event, AgentEnd):
            self.ended = True

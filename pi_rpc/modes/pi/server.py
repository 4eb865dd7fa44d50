"""`pi-rpc --mode pi`: Pi's own RPC protocol (JSON lines, spec 18) over the same session core.

A client written for `pi --mode rpc` drives this daemon unchanged: commands in, `response` lines
and the agent events out. The events are the session's own, whose names and fields are Pi's;
only the command set and the response envelope differ from the JSON-RPC mode.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc
import msgspec
from msgspec import UNSET

from pi_rpc.agent import AgentEvent, MessageEnd, MessageStart, MessageUpdate
from pi_rpc.ai import AssistantMessage, DoneEvent, ErrorEvent, Message, TextContent, encode_json
from pi_rpc.modes.daemon import daemon_tables, serve
from pi_rpc.modes.envelope import is_request_id
from pi_rpc.modes.event_output import EncodeEvent, forward_event
from pi_rpc.modes.framing import DEFAULT_MAX_MESSAGE_BYTES, Frame, FrameError, JsonlFrameReader, encode_jsonl
from pi_rpc.modes.pi import commands as c
from pi_rpc.modes.pi.extension_ui import PiDialogs
from pi_rpc.modes.pi.partial_messages import with_partial
from pi_rpc.modes.pi.session_commands import CommandFailed, execute_session_command, refusal_text
from pi_rpc.modes.stdio import StdoutSink, read_frames
from pi_rpc.session import SESSION_REFUSALS, AgentSession, SessionConfig, Step
from pi_rpc.tools import ProcessTables

_log = logging.getLogger(__name__)

# What a command's response reports as its error without logging a fault: params that do not fit,
# a command that cannot be carried out, and the session's refusals (session_commands.REFUSAL_TEXT).
_REFUSED: tuple[type[Exception], ...] = (msgspec.ValidationError, CommandFailed, *SESSION_REFUSALS)
# The commands that may change the thinking level (announced with `thinking_level_changed`).
_LEVEL_COMMANDS = (c.SetThinkingLevel, c.CycleThinkingLevel, c.SetModel, c.CycleModel)


def last_assistant_text(messages: list[Message]) -> str | None:
    """Pi's `get_last_assistant_text`: the text of the last answer, trimmed; None when there is
    no text. A reply with no text that did not end normally (aborted, failed, or only calling
    tools) is skipped; one that ended normally is the last answer even without text."""
    for message in reversed(messages):
        if not isinstance(message, AssistantMessage):
            continue
        text = "".join(block.text for block in message.content if isinstance(block, TextContent)).strip()
        if message.stop_reason != "stop" and not text:
            continue
        return text or None
    return None


def with_usage(message: AssistantMessage) -> EncodeEvent:
    """Newer Pi's `message_update`: the streaming message's usage so far beside each event, read
    when the line is written (a merged delta's line says the usage as it stands then)."""

    # A provider replaces the usage object when it reports usage, so one encoding serves every
    # delta until then (most of a reply's deltas come before the provider's usage).
    encoded: list[tuple[object, bytes]] = []

    def encode(event: AgentEvent) -> bytes:
        if not isinstance(event, MessageUpdate):
            return encode_json(event)
        if not encoded or encoded[0][0] is not message.usage:
            encoded[:] = [(message.usage, encode_json(message.usage))]
        return (
            b'{"type":"message_update","usage":'
            + encoded[0][1]
            + b',"assistantMessageEvent":'
            + encode_json(event.assistant_message_event)
            + b"}"
        )

    return encode


class PiDaemon:
    """Pi's RPC front end (`serve` in modes/daemon.py runs it): JSON lines, one session."""

    def __init__(
        self,
        config: SessionConfig,
        stdin_fd: int = 0,
        stdout_fd: int | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        process_tables: ProcessTables | None = None,
        partial_messages: bool = False,
    ) -> None:
        # Pi's event order for a failed request: its run ends, then the session runs again.
        self.config = msgspec.structs.replace(config, retry=msgspec.structs.replace(config.retry, after_run=True))
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.max_message_bytes = max_message_bytes
        self.process_tables = daemon_tables(process_tables, config)
        # Pi 0.73.1's `message` and `partial` on each message_update (partial_messages.py).
        self.partial_messages = partial_messages
        self._encode_update: EncodeEvent | None = None  # while an assistant message streams

    async def run(self, warm_up: Sequence[Step] = ()) -> None:
        await serve(self, self.process_tables, self.stdout_fd, warm_up)

    def frame(self, body: bytes) -> bytes:
        return encode_jsonl(body)

    async def start(self, tasks: anyio.abc.TaskGroup, sink: StdoutSink, stop: anyio.Event) -> None:
        self.sink = sink
        self.tasks = tasks
        self.session = AgentSession(self.config, tasks)
        self.session.subscribe(self._forward, sink.wait_for_room)
        self.dialogs = PiDialogs(sink.send, lambda: self.session.approvals.timeout)
        # Pi runs every tool at once: a Pi client is asked (confirm dialogs) only when the
        # user chose a policy (--approval-policy, or permissions.defaultPolicy).
        if self.config.approvals.configured:
            self.session.set_approver(self.dialogs.approve)
        # settings.json mcpServers, before the first command (each start is bounded): Pi's
        # protocol has no way to tell a client that tools appeared later.
        await self.session.start_mcp_servers()

    async def read(self) -> None:
        """Until end of stdin, which is a clean shutdown (spec 18.4)."""
        await read_frames(self.stdin_fd, JsonlFrameReader(self.max_message_bytes), self._on_frame)

    async def close(self) -> None:
        await self.session.close()

    async def release(self) -> None:
        pass  # our own writer: nothing stands between the sink and the pipe

    def _forward(self, event: AgentEvent) -> None:
        if isinstance(event, MessageUpdate) and isinstance(event.assistant_message_event, DoneEvent | ErrorEvent):
            return  # Pi ends a message with message_end alone (spec 15.5); its clients see no update
        if isinstance(event, MessageStart | MessageEnd):
            # The encoder of the streaming message's updates, made once per message.
            self._encode_update = None
            if isinstance(event, MessageStart) and isinstance(event.message, AssistantMessage):
                wrap = with_partial if self.partial_messages else with_usage
                self._encode_update = wrap(event.message)
        if isinstance(event, MessageUpdate) and self._encode_update is not None:
            forward_event(self.sink, event, self._encode_update)
            return
        forward_event(self.sink, event, encode_json)

    def _respond(self, response: c.Response) -> None:
        self.sink.send(encode_json(response))

    def _on_frame(self, frame: Frame) -> None:
        if isinstance(frame, FrameError):
            # A line that cannot be read still gets its answer, as unparsable input does.
            _log.error("framing error: %s", frame.message)
            self._respond(c.Response(command="parse", success=False, error=f"Failed to parse command: {frame.message}"))
        else:
            self.tasks.start_soon(self._handle, frame)

    async def _handle(self, frame: bytes) -> None:
        try:
            raw = json.loads(frame)
        except (ValueError, RecursionError) as exc:
            self._respond(c.Response(command="parse", success=False, error=f"Failed to parse command: {exc}"))
            return
        kind = raw.get("type") if isinstance(raw, dict) else None
        if kind == "extension_ui_response":  # answers a dialog; Pi sends no response line for it
            if not self.dialogs.resolve(raw):
                _log.info("extension_ui_response ignored: no dialog open with its id")
            return
        msg_id = raw.get("id", UNSET) if isinstance(raw, dict) else UNSET
        if not is_request_id(msg_id):
            msg_id = UNSET
        command_type = c.COMMAND_TYPES.get(kind) if isinstance(kind, str) else None
        if command_type is None or not isinstance(kind, str):
            # Pi leaves the id out here (spec 18.4), which leaves its own RpcClient waiting 30 s for
            # a reply: every response carries the command's id.
            self._respond(c.Response(command=str(kind), id=msg_id, success=False, error=f"Unknown command: {kind}"))
            return
        try:
            command = msgspec.convert(raw, command_type)
            level = self.session.current_model.thinking_level
            if isinstance(command, c.Prompt):
                # Answered once accepted, as Pi answers it: after a compaction the prompt needs
                # first, before the run's events (spec 18.5).
                behaviour = None if command.streaming_behavior is UNSET else command.streaming_behavior
                # Queued into the running one, as `start_prompt` decides (Pi 1.6.0's disposition).
                queued = behaviour is not None and self.session.runs.is_streaming
                accepted = c.Response(
                    command=kind,
                    id=msg_id,
                    success=True,
                    data=c.Disposition(disposition="queued" if queued else "started"),
                )
                self.session.runs.start(command.message, command.images, behaviour, lambda: self._respond(accepted))
                return
            data = await self._execute(command)
            self._announce(command, level)
        except _REFUSED as exc:
            self._respond(c.Response(command=kind, id=msg_id, success=False, error=refusal_text(exc)))
            return
        except Exception as exc:  # a handler failing is the client's error response, never a crash
            _log.exception("command %s failed", kind)
            self._respond(c.Response(command=kind, id=msg_id, success=False, error=str(exc)))
            return
        self._respond(c.Response(command=kind, id=msg_id, success=True, data=data))

    def _announce(self, command: c.Command, level_before: str) -> None:
        """Pi's session events for what a command changed, sent before its response as Pi sends
        them: the thinking level (set, cycled, or clamped by a model switch) and the name. A
        session switch, fork or clone starts another session and announces nothing, as in Pi."""
        if isinstance(command, c.SetSessionName):
            name = self.session.history.session_name
            self.sink.send(encode_json(c.SessionInfoChanged(name=UNSET if name is None else name)))
        elif isinstance(command, _LEVEL_COMMANDS) and self.session.current_model.thinking_level != level_before:
            self.sink.send(encode_json(c.ThinkingLevelChanged(level=self.session.current_model.thinking_level)))

    async def _execute(self, command: c.Command) -> Any:  # one arm per command
        session = self.session
        match command:
            case c.Steer(message=message, images=images):
                session.steer(message, images)
                return c.Disposition(disposition="queued")
            case c.FollowUp(message=message, images=images):
                session.follow_up(message, images)
                return c.Disposition(disposition="queued")
            case c.Abort():
                await session.abort()
                return UNSET
            case c.NewSession(parent_session=parent):
                await session.new_session(None if parent is UNSET else parent)
                return {"cancelled": False}
            case c.GetState():
                return self._state()
            case c.GetMessages():
                return {"messages": session.messages}
            case c.SetModel(provider=provider, model_id=model_id):
                return session.current_model.set_model(provider, model_id)
            case c.GetAvailableModels():
                return {"models": session.current_model.available_models()}
            case c.SetThinkingLevel(level=level):
                session.current_model.set_thinking_level(level)
                return UNSET
            case c.GetAvailableThinkingLevels():
                return {"levels": session.current_model.thinking_levels()}
            case c.SetSteeringMode(mode=mode):
                session.set_queue_modes(steering=mode)
                return UNSET
            case c.SetFollowUpMode(mode=mode):
                session.set_queue_modes(follow_up=mode)
                return UNSET
            case c.GetSessionStats():
                return session.stats()
            case c.ClearQueue():
                steering, follow_ups = session.clear_queue()
                return {"steering": steering, "followUp": follow_ups}
            case c.GetLastAssistantText():
                return {"text": last_assistant_text(session.messages)}
        return await execute_session_command(session, command)

    def _state(self) -> c.PiState:
        state = self.session.state()
        return c.PiState(
            model=UNSET if state.model is None else state.model,
            thinking_level=state.thinking_level,
            is_streaming=state.is_streaming,
            is_compacting=self.session.compaction.running,
            steering_mode=state.steering_mode,
            follow_up_mode=state.follow_up_mode,
            # Named before the file exists (made with the first message), as Pi 1.6.0 reports it.
            session_file=UNSET if (path := self.session.history.session_path()) is None else path,
            session_id=state.session_id,
            session_name=UNSET if self.session.history.session_name is None else self.session.history.session_name,
            auto_compaction_enabled=self.session.toggles.compaction,
            message_count=state.message_count,
            pending_message_count=state.pending_message_count,
        )

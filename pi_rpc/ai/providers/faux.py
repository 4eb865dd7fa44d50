"""The scripted model: streams a script's assistant turns through the same builder as a real API.

It serves the tests, the demo (no API key set) and the editor clients' tests. The script format is
documented in protocol/PROTOCOL.md ("Scripted model"). Each run starts the next unused reply whose
`match` regex finds the prompt text; each model request in that run (after tools, steering or
follow-ups) takes the reply's next turn, and a follow-up that comes after the reply's last turn
starts the reply matching it. Pauses are real awaits, so abort cancels them exactly as
it cancels an HTTP stream.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import anyio
import msgspec

from pi_rpc.ai.provider import Provider, StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    AssistantMessage,
    Context,
    EndedStopReason,
    Model,
    Usage,
    UserMessage,
    text_of,
)


class ScriptToolCall(msgspec.Struct, rename="camel", forbid_unknown_fields=True):
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    id: str | None = None


class ScriptUsage(msgspec.Struct, forbid_unknown_fields=True):
    input: int = 0
    output: int = 0


class Step(msgspec.Struct, rename="camel", forbid_unknown_fields=True, omit_defaults=True):
    text: str | None = None
    thinking: str | None = None
    tool_call: ScriptToolCall | None = None
    chunk: int = 0
    delay_ms: int = 0
    error: str | None = None
    stop: EndedStopReason | None = None
    usage: ScriptUsage | None = None


class Reply(msgspec.Struct, forbid_unknown_fields=True):
    turns: list[list[Step]]
    match: str | None = None
    repeat: bool = False


class Script(msgspec.Struct, forbid_unknown_fields=True):
    replies: list[Reply] = msgspec.field(default_factory=list)


class ScriptError(ValueError):
    pass


def load_script(path: str | Path) -> Script:
    try:
        return msgspec.json.decode(Path(path).read_bytes(), type=Script)
    except (OSError, msgspec.DecodeError) as exc:
        raise ScriptError(f"Cannot load script {path}: {exc}") from exc


FAUX_MODEL = Model(
    id="scripted",
    name="Scripted model",
    api="faux",
    provider="faux",
    input=["text", "image"],
    context_window=200_000,
    max_tokens=32_000,
)

NO_REPLY_TEXT = "The scripted model has no reply for this prompt."


class ScriptPlayer:
    """Which reply and turn comes next; one player per session."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._used: set[int] = set()
        self._reply: Reply | None = None
        self._turn = 0
        self._run_id: str | None = None
        self._users_at_start = 0  # user messages in the context when the current reply started
        self._ids = itertools.count(1)

    def next_turn(self, context: Context, run_id: str | None) -> list[Step] | None:
        """A new run starts the next matching reply; later requests of the run take its turns. A
        user message that came in after the reply's last turn (a follow-up queued while it ran)
        starts the reply matching it, as a new prompt would."""
        users = [m for m in context.messages if isinstance(m, UserMessage)]
        exhausted = self._reply is None or self._turn >= len(self._reply.turns)
        if run_id is None or run_id != self._run_id or exhausted and len(users) != self._users_at_start:
            self._run_id = run_id
            self._users_at_start = len(users)
            self._start_reply(users[-1].content if users else "")
        if self._reply is None or self._turn >= len(self._reply.turns):
            return None
        turn = self._reply.turns[self._turn]
        self._turn += 1
        return turn

    def new_call_id(self) -> str:
        return f"call_{next(self._ids)}"

    def _start_reply(self, content: Any) -> None:
        prompt = text_of(content)
        self._reply, self._turn = None, 0
        for index, reply in enumerate(self.script.replies):
            if index in self._used:
                continue
            if reply.match is not None and re.search(reply.match, prompt) is None:
                continue
            if not reply.repeat:
                self._used.add(index)
            self._reply = reply
            return


async def play_turn(steps: list[Step] | None, player: ScriptPlayer, builder: AssistantBuilder) -> AssistantMessage:
    # Like a real request, nothing streams before the first await: an aborted run stops here.
    await anyio.lowlevel.checkpoint()
    builder.start()
    if steps is None:
        builder.text_delta(0, NO_REPLY_TEXT)
        return builder.finish("stop")
    stop: EndedStopReason | None = None
    usage = Usage(input=0, output=0)
    for index, step in enumerate(steps):
        if step.usage is not None:
            usage = Usage(input=step.usage.input, output=step.usage.output)
            builder.set_usage(usage)
        if step.text is not None:
            await _stream_text(builder, index, step.text, step, thinking=False)
        if step.thinking is not None:
            await _stream_text(builder, index, step.thinking, step, thinking=True)
        if step.tool_call is not None:
            await _stream_tool_call(builder, index, step.tool_call, step, player)
        if step.text is None and step.thinking is None and step.tool_call is None and step.delay_ms:
            await anyio.sleep(step.delay_ms / 1000)
        if step.error is not None:
            return builder.fail("error", step.error)
        if step.stop is not None:
            stop = step.stop
    if not usage.output:
        builder.set_usage(Usage(input=_approx_tokens(steps), output=_approx_tokens(steps)))
    return builder.finish(stop)


async def _stream_text(builder: AssistantBuilder, key: int, text: str, step: Step, *, thinking: bool) -> None:
    size = step.chunk if step.chunk > 0 else max(len(text), 1)
    for start in range(0, max(len(text), 1), size):
        piece = text[start : start + size]
        if thinking:
            builder.thinking_delta(key, piece)
        else:
            builder.text_delta(key, piece)
        await builder.wait_for_room()  # as a real stream does: a client far behind holds it
        if step.delay_ms:
            await anyio.sleep(step.delay_ms / 1000)
        else:
            await anyio.lowlevel.checkpoint()
    if thinking:
        builder.thinking_end(key)
    else:
        builder.text_end(key)


async def _stream_tool_call(
    builder: AssistantBuilder, key: int, call: ScriptToolCall, step: Step, player: ScriptPlayer
) -> None:
    raw = call.raw_arguments
    if raw is None:
        raw = msgspec.json.encode(call.arguments or {}).decode()
    builder.toolcall_start(key, call.id or player.new_call_id(), call.name)
    size = step.chunk if step.chunk > 0 else max(len(raw), 1)
    for start in range(0, len(raw), size):
        builder.toolcall_delta(key, raw[start : start + size])
        await builder.wait_for_room()
        if step.delay_ms:
            await anyio.sleep(step.delay_ms / 1000)
        else:
            await anyio.lowlevel.checkpoint()  # a long call must not hold the event loop
    builder.toolcall_end(key)


def _approx_tokens(steps: list[Step]) -> int:
    chars = sum(len(step.text or "") + len(step.thinking or "") for step in steps)
    return max(1, chars // 4)


class FauxProvider:
    """Holds one session's script player; `stream` has the provider signature."""

    def __init__(self, script: Script) -> None:
        self.player = ScriptPlayer(script)

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        return await play_turn(self.player.next_turn(context, options.run_id), self.player, builder)


async def stream(model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder) -> AssistantMessage:
    """Registry entry for api "faux" without a session script: says it has nothing to say."""
    return await play_turn(None, ScriptPlayer(Script()), builder)


PROVIDER = Provider(api="faux", stream=stream)

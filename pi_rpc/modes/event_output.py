"""How a stdio mode hands agent events to the writer (modes/writer.py) so that a client that
stops reading costs bounded memory: streamed deltas go in as mergeable deltas of their content
block, the events that carry whole messages are encoded only when the client can take them, and
live tool snapshots are skipped while the client is far behind (the next one, or the tool's end,
carries everything they did). The model's stream itself holds while the client is that far behind
(`StdoutSink.wait_for_room`, which each front end hands to `AgentSession.subscribe`)."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from pi_rpc.agent import AgentEnd, AgentEvent, MessageEnd, MessageUpdate, ToolExecutionUpdate, TurnEnd
from pi_rpc.ai import TextDeltaEvent, TextEndEvent, ThinkingDeltaEvent, ThinkingEndEvent, ToolcallDeltaEvent
from pi_rpc.modes.writer import StdoutSink

EncodeEvent = Callable[[AgentEvent], bytes]


def forward_event(sink: StdoutSink, event: AgentEvent, encode: EncodeEvent) -> None:
    """Write `event` through `sink`; `encode` turns an event into the mode's message body."""
    if isinstance(event, MessageUpdate):
        inner = event.assistant_message_event
        if isinstance(inner, TextDeltaEvent | ThinkingDeltaEvent | ToolcallDeltaEvent):
            sink.send_delta((type(inner), inner.content_index), inner.delta, _delta_encoder(inner, encode))
            return
    if isinstance(event, ToolExecutionUpdate) and sink.holding:
        # While the client is far behind, live tool snapshots are skipped: each one carries the
        # whole accumulated output, so the next one (or tool_execution_end) loses nothing, and a
        # client that stops reading cannot make the daemon buffer a 200 MB build log one snapshot
        # at a time.
        return
    if isinstance(event, MessageEnd | TurnEnd | AgentEnd) or (
        isinstance(event, MessageUpdate) and isinstance(event.assistant_message_event, TextEndEvent | ThinkingEndEvent)
    ):
        # Final content, never changed afterwards: while the client is behind, only a reference to
        # what the session keeps anyway waits, not an encoded copy of the whole answer.
        sink.send_lazy(lambda: encode(event))
        return
    sink.send(encode(event))  # encoded now: what it refers to may still change (a partial message)


def _delta_encoder(
    inner: TextDeltaEvent | ThinkingDeltaEvent | ToolcallDeltaEvent, encode: EncodeEvent
) -> Callable[[str], bytes]:
    # A merged delta is the newest delta (its parsed `arguments`, for a tool call) with the text
    # of every delta merged into it.
    return lambda text: encode(MessageUpdate(assistant_message_event=msgspec.structs.replace(inner, delta=text)))

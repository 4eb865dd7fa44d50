"""Pi 0.73.1's `message_update`, for clients that render from it (`--partial-messages`).

That release sent, with every streamed delta, the whole assistant message so far twice: as
`message` and as `assistantMessageEvent.partial`. Newer Pi sends neither (a client assembles the
message from `message_start` and the deltas, and `message_end` carries it whole), and so does this
mode by default: the copies make the output grow with the square of the answer's length (a 32 kB
answer streamed 4 characters at a time is 0.8 MB of events without them, 262 MB with them). A
client written against the old shape opts in; the snapshot is encoded when the line is written, so
a client that reads slowly gets merged deltas with the message as it stands then.
"""

from __future__ import annotations

from pi_rpc.agent import AgentEvent, MessageUpdate
from pi_rpc.ai import AssistantMessage, encode_json
from pi_rpc.modes.event_output import EncodeEvent


def with_partial(message: AssistantMessage) -> EncodeEvent:
    """An encoder that adds `message` (the one streaming) to each `message_update`, in both places."""

    def encode(event: AgentEvent) -> bytes:
        if not isinstance(event, MessageUpdate):
            return encode_json(event)
        snapshot = encode_json(message)
        inner = encode_json(event.assistant_message_event)  # an object: it has at least its type
        return (
            b'{"type":"message_update","assistantMessageEvent":'
            + inner[:-1]
            + b',"partial":'
            + snapshot
            + b'},"message":'
            + snapshot
            + b"}"
        )

    return encode

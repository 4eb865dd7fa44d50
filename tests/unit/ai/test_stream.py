"""The assistant builder: tool-call arguments stream with linear cost, each delta carrying the
arguments parsed so far."""

from __future__ import annotations

import msgspec

from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import ProviderEvent, ToolCall, ToolcallDeltaEvent


def stream_call(raw: str, piece: int = 4) -> tuple[AssistantBuilder, list[ProviderEvent]]:
    events: list[ProviderEvent] = []
    builder = AssistantBuilder(FAUX_MODEL, events.append)
    builder.toolcall_start(0, "call_1", "write")
    for start in range(0, len(raw), piece):
        builder.toolcall_delta(0, raw[start : start + piece])
    builder.toolcall_end(0)
    return builder, events


def test_arguments_fill_in_while_short() -> None:
    _, events = stream_call('{"path": "a.txt", "content": "hi"}')
    snapshots = [e.arguments for e in events if isinstance(e, ToolcallDeltaEvent)]
    assert all(isinstance(s, dict) for s in snapshots)  # every delta re-parsed below 512 bytes
    assert snapshots[-1] == {"path": "a.txt", "content": "hi"}
    assert {"path": "a.txt"} in snapshots


def test_a_large_call_costs_traffic_linear_in_its_size() -> None:
    content = "line of generated code\n" * 4000  # ~92 KB, in 4-character deltas
    raw = msgspec.json.encode({"path": "big.py", "content": content}).decode()
    builder, events = stream_call(raw)
    snapshot_bytes = sum(
        len(msgspec.json.encode(e.arguments))
        for e in events
        if isinstance(e, ToolcallDeltaEvent) and isinstance(e.arguments, dict)
    )
    # Re-parsing on every delta would send ~n²/8 bytes (about 1 GB here); growth steps of a
    # quarter bound it by a geometric series of the final size.
    assert snapshot_bytes < 8 * len(raw)
    call = builder.message.content[0]
    assert isinstance(call, ToolCall) and call.arguments["content"] == content


def test_absurdly_nested_arguments_parse_to_nothing_instead_of_crashing() -> None:
    builder, events = stream_call("[" * 5000, piece=500)
    call = builder.message.content[0]
    assert isinstance(call, ToolCall) and call.arguments == {}

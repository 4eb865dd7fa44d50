"""What the provider test modules share: driving a provider's `stream` against the scripted server
(to the end, or until an abort at the first text delta), and the tools of the constrained-sampling
tests (spec 4.3/4.4), which every provider declares in its own wire shape."""

from __future__ import annotations

from typing import Any, Literal

import anyio

from pi_rpc.ai.registry import StreamFn, StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    AssistantMessage,
    Context,
    JsonSchemaSampling,
    Model,
    ProviderEvent,
    TextDeltaEvent,
    Tool,
)

READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["path"],
}

# Spec 4.4's strict form of READ_SCHEMA: every property required, the optional one nullable.
STRICT_READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
    },
    "required": ["path", "limit"],
    "additionalProperties": False,
}

# Spec 4.3: the error of a `require` tool on a model without strict tools.
STRICT_UNSUPPORTED = 'Tool "edit" requires JSON-schema constrained sampling, but strict tools are unsupported.'


def sampling_tool(name: str, description: str, strict: Literal["prefer", "require"]) -> Tool:
    """A tool over READ_SCHEMA that asks for JSON-schema constrained sampling."""
    return Tool(
        name=name,
        description=description,
        parameters=READ_SCHEMA,
        constrained_sampling=JsonSchemaSampling(strict=strict),
    )


def event_types(events: list[ProviderEvent]) -> list[str]:
    return [str(type(e).__struct_config__.tag) for e in events]


async def run_provider(
    stream: StreamFn, model: Model, context: Context, options: StreamOptions
) -> tuple[AssistantMessage, list[ProviderEvent]]:
    """One call of a provider, with every event it emitted."""
    events: list[ProviderEvent] = []
    builder = AssistantBuilder(model, events.append)
    return await stream(model, context, options, builder), events


async def abort_at_first_text_delta(
    stream: StreamFn, model: Model, context: Context, options: StreamOptions
) -> tuple[AssistantBuilder, list[ProviderEvent]]:
    """Cancel a provider call the way abort does (spec 15.14): its cancel scope, at the first text
    delta. Returns the builder, which still holds the partial message, and the events seen."""
    events: list[ProviderEvent] = []
    with anyio.CancelScope() as scope:

        def emit(event: ProviderEvent) -> None:
            events.append(event)
            if isinstance(event, TextDeltaEvent):
                scope.cancel()

        builder = AssistantBuilder(model, emit)
        await stream(model, context, options, builder)
    assert scope.cancelled_caught
    return builder, events

"""The OpenAI Chat Completions stream's chunks as they are read (only the fields read), the
finish reasons they say, and the usage they report (with OpenRouter's billed cost)."""

from __future__ import annotations

import math
from typing import Any

import msgspec

from pi_rpc.ai.types import StopReason, Usage


class FunctionDelta(msgspec.Struct):
    name: str | None = None
    arguments: Any = None  # a string fragment; some servers send the whole object


class ToolCallDelta(msgspec.Struct):
    index: int | None = None
    id: str | None = None
    function: FunctionDelta | None = None


class Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_text: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class _Choice(msgspec.Struct):
    index: int = 0
    delta: Delta | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct):
    cached_tokens: int | None = None


class _CompletionDetails(msgspec.Struct):
    reasoning_tokens: int | None = None


class ChunkUsage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    prompt_cache_hit_tokens: int | None = None  # DeepSeek's spelling of cached prompt tokens
    completion_tokens_details: _CompletionDetails | None = None
    reasoning_tokens: int | None = None  # some servers' spelling, at the top level
    # OpenRouter's billed cost; with `is_byok: false` it is the whole cost of the request.
    cost: float | None = None
    is_byok: bool | None = None


class Chunk(msgspec.Struct):
    choices: list[_Choice] | None = None
    usage: ChunkUsage | None = None
    error: Any = None
    id: str | None = None  # the completion's id, the same in every chunk
    model: str | None = None


DECODE_CHUNK = msgspec.json.Decoder(Chunk).decode

FINISH_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "eos": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "model_length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "tool_use": "toolUse",
    "content_filter": "error",
    "error": "error",
}


def usage_of(usage: ChunkUsage) -> tuple[Usage, float | None]:
    """The usage a chunk reports, and the cost the provider billed when it says so (OpenRouter,
    `is_byok: false`: its `cost` is the whole of it)."""
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens if details else None) or usage.prompt_cache_hit_tokens or 0
    prompt = usage.prompt_tokens or 0
    output = usage.completion_tokens or 0
    reasoning = (usage.completion_tokens_details and usage.completion_tokens_details.reasoning_tokens) or 0
    # OpenAI counts cached tokens inside prompt_tokens; we report them separately.
    reported = Usage(
        input=max(0, prompt - cached),
        output=output,
        cache_read=cached,
        reasoning=reasoning or usage.reasoning_tokens or 0,
        total_tokens=usage.total_tokens or prompt + output,
    )
    billed = usage.cost
    return reported, billed if usage.is_byok is False and billed is not None and math.isfinite(
        billed
    ) and billed >= 0 else None

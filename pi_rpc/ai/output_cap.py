"""The output cap a request carries: the caller's, else the model's `maxTokens`, fitted into the
context window (Pi 1.6.0's `clampMaxTokensToContext`).

Without a cap a local server generates until its own limit: a looping 135M model produced 7,014
tokens in 234 s. Every HTTP provider sends this figure in its API's field. The input is estimated
as Pi does (the last good reply's reported usage plus 3.5 characters a token for what followed),
and a margin is left because a server may count the input higher than the estimate.
"""

from __future__ import annotations

import math

import msgspec

from pi_rpc.ai.provider import StreamOptions
from pi_rpc.ai.types import AssistantMessage, Context, Model, SystemMessage, TextContent, ThinkingContent, ToolCall

CHARS_PER_TOKEN = 3.5
IMAGE_CHARS = 4800
CONTEXT_SAFETY_TOKENS = 4096
# A margin of 15% of the input while it leaves this much output; below, only the fixed margin.
CONTEXT_SAFETY_RATIO = 0.15
MIN_OUTPUT_WITH_RATIO_MARGIN = 32_768


def _content_chars(content: object) -> int:
    if isinstance(content, str):
        return len(content)
    if not isinstance(content, list):
        return 0
    return sum(len(block.text) if isinstance(block, TextContent) else IMAGE_CHARS for block in content)


def _message_tokens(message: object) -> int:
    if isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(msgspec.json.encode(block.arguments))
        return math.ceil(chars / CHARS_PER_TOKEN)
    if isinstance(message, SystemMessage):
        tools = [*(message.tools_added or []), *(message.tools_removed or [])]
        extra = len(msgspec.json.encode(tools)) if tools else 0
        return math.ceil((len(message.content) + extra) / CHARS_PER_TOKEN)
    return math.ceil(_content_chars(getattr(message, "content", "")) / CHARS_PER_TOKEN)


def estimate_input_tokens(context: Context) -> int:
    """The request's input by Pi's estimate: the newest good reply's usage and what came after it."""
    messages = context.messages
    start, tokens = 0, 0
    for index in range(len(messages) - 1, -1, -1):
        reply = messages[index]
        if isinstance(reply, AssistantMessage) and reply.stop_reason not in ("error", "aborted"):
            usage = reply.usage
            reported = usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write
            if reported > 0:
                start, tokens = index + 1, reported
                break
    return tokens + sum(_message_tokens(m) for m in messages[start:])


def clamp_to_context(model: Model, context: Context, max_tokens: int) -> int:
    """`max_tokens`, lowered to what the context window leaves after the input and a margin."""
    if model.context_window <= 0:
        return max(1, max_tokens)
    used = estimate_input_tokens(context)
    margin = max(CONTEXT_SAFETY_TOKENS, math.ceil(used * CONTEXT_SAFETY_RATIO))
    room = model.context_window - used - margin
    if room < MIN_OUTPUT_WITH_RATIO_MARGIN:
        room = min(MIN_OUTPUT_WITH_RATIO_MARGIN, model.context_window - used - CONTEXT_SAFETY_TOKENS)
    return min(max_tokens, max(1, room))


def output_cap(model: Model, context: Context, options: StreamOptions) -> int | None:
    """The cap to send: the caller's (`options.max_tokens`) or the model's, clamped; None when
    neither says one (a model with `maxTokens` 0 or less means "no cap")."""
    wanted = options.max_tokens if isinstance(options.max_tokens, int) else model.max_tokens
    if wanted <= 0:
        return None
    return clamp_to_context(model, context, wanted)

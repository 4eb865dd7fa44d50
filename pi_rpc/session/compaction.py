"""Compaction: older turns summarised by the current model, recent turns kept verbatim, so a long
conversation continues instead of failing at the context window (Pi's `compaction`).

The context in use is the last successful request's reported usage plus an estimate (characters
/ 4) of what came after it. Compaction is due when that exceeds the window minus a reserve kept
for the reply. The cut keeps the newest messages worth at least `keep_recent_tokens` and falls on
a user or assistant message, never between a tool call and its result; everything before it is
serialised as plain text (so the model does not continue it) and summarised. The transcript then
starts with the summary as a user message. A summary already at the start is handed to the next
summarisation to be updated rather than summarised again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from pi_rpc.agent.llm_messages import convert_to_llm
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    AssistantMessage,
    BashExecutionMessage,
    Context,
    Message,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    Wire,
    text_of,
)

SUMMARY_OPENING = "Earlier turns of this conversation were compacted into the summary below.\n\n<summary>\n"
SUMMARY_CLOSING = "\n</summary>"

SUMMARIZER_SYSTEM_PROMPT = (
    "You condense a conversation between a user and an AI coding assistant into a checkpoint that "
    "another assistant will work from. Write only the checkpoint: do not answer questions in the "
    "conversation and do not carry on with its work."
)

CHECKPOINT_FORMAT = """Write the checkpoint with these headings:

## Goal
What the user wants done (several items if the conversation covered several tasks).

## Constraints
Requirements and preferences the user stated, or "(none)".

## Progress
What is finished, what is under way, and what is blocked.

## Decisions
Choices made so far, each with its reason.

## Next steps
A numbered list of what comes next.

## Context to keep
File paths, names, commands, error messages and data needed to continue, quoted exactly.

Be brief under every heading."""


# Why a compaction runs: asked for, the context near the window, or a request refused for its size.
CompactionReason = Literal["manual", "threshold", "overflow"]


class CompactionSettings(msgspec.Struct, rename="camel", kw_only=True):
    """`compaction` in settings.json, with Pi's names and defaults."""

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


class CompactionResult(Wire, kw_only=True):
    """What `compact` answers (Pi's `CompactionResult`)."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: dict[str, Any] = msgspec.field(default_factory=dict)


class CompactionError(RuntimeError):
    pass


@dataclass
class CompactionPlan:
    to_summarize: list[Message]
    kept: list[Message]
    previous_summary: str | None
    tokens_before: int


def estimate_tokens(message: Message) -> int:
    """A deliberately generous estimate: a token per 4 characters of what the model reads."""
    chars = 0
    match message:
        case UserMessage(content=content):
            chars = len(text_of(content))
        case ToolResultMessage(content=result):
            chars = len(text_of(result))
        case AssistantMessage(content=blocks):
            for block in blocks:
                if isinstance(block, TextContent):
                    chars += len(block.text)
                elif isinstance(block, ThinkingContent):
                    chars += len(block.thinking)
                elif isinstance(block, ToolCall):
                    chars += len(block.name) + len(json.dumps(block.arguments))
        case SystemMessage(content=content):
            chars = len(content)
        case BashExecutionMessage(command=command, output=output):
            chars = len(command) + len(output)
    return -(-chars // 4)


def context_tokens(messages: Sequence[Message]) -> int:
    """The last successful request's reported context, plus estimates for what followed it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage) and message.stop_reason not in ("error", "aborted"):
            usage = message.usage
            reported = usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write
            if reported:
                return reported + sum(estimate_tokens(m) for m in messages[index + 1 :])
    return sum(estimate_tokens(m) for m in messages)


_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|prompt is too long|too many tokens|"
    r"exceeds? the context window|input is too long|context window",
    re.IGNORECASE,
)


def is_context_overflow(error_message: str) -> bool:
    """Whether a failed request was refused for being larger than the model's context window."""
    return bool(_OVERFLOW.search(error_message))


def should_compact(tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    return settings.enabled and context_window > 0 and tokens > context_window - settings.reserve_tokens


def summary_text(message: Message) -> str | None:
    """The summary a compaction left, when `message` is one."""
    if isinstance(message, UserMessage):
        text = text_of(message.content)
        if text.startswith(SUMMARY_OPENING) and text.endswith(SUMMARY_CLOSING):
            return text[len(SUMMARY_OPENING) : -len(SUMMARY_CLOSING)]
    return None


def summary_message(summary: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=f"{SUMMARY_OPENING}{summary}{SUMMARY_CLOSING}")])


def find_cut(messages: Sequence[Message], keep_recent_tokens: int) -> int:
    """Index of the first message kept: the newest user or assistant message at or after the point
    where the kept messages reach `keep_recent_tokens` (the first such message if they never do).
    A user's bash command starts a turn as a user message does (Pi)."""
    cut_points = [
        i for i, m in enumerate(messages) if isinstance(m, UserMessage | AssistantMessage | BashExecutionMessage)
    ]
    if not cut_points:
        return len(messages)
    kept = 0
    for index in range(len(messages) - 1, -1, -1):
        kept += estimate_tokens(messages[index])
        if kept >= keep_recent_tokens:
            return next((c for c in cut_points if c >= index), len(messages))
    return cut_points[0]


def plan_compaction(messages: Sequence[Message], settings: CompactionSettings) -> CompactionPlan | None:
    """None when there is nothing before the cut to summarise."""
    previous = summary_text(messages[0]) if messages else None
    start = 1 if previous is not None else 0
    cut = max(find_cut(messages, settings.keep_recent_tokens), start)
    to_summarize: list[Message] = [m for m in messages[start:cut] if not isinstance(m, SystemMessage)]
    if not to_summarize:
        return None
    return CompactionPlan(
        to_summarize=to_summarize,
        kept=list(messages[cut:]),
        previous_summary=previous,
        tokens_before=context_tokens(messages),
    )


def serialize_conversation(messages: Sequence[Message]) -> str:
    """The conversation as labelled plain text, for the summariser to read rather than continue."""
    parts: list[str] = []
    for message in convert_to_llm(messages):  # what the model read, as Pi's summariser reads it
        match message:
            case UserMessage(content=content):
                if text := text_of(content):
                    parts.append(f"[User]: {text}")
            case AssistantMessage(content=blocks):
                thinking = [b.thinking for b in blocks if isinstance(b, ThinkingContent)]
                said = [b.text for b in blocks if isinstance(b, TextContent)]
                calls = [
                    f"{b.name}({', '.join(f'{k}={json.dumps(v)}' for k, v in b.arguments.items())})"
                    for b in blocks
                    if isinstance(b, ToolCall)
                ]
                if thinking:
                    parts.append("[Assistant thinking]: " + "\n".join(thinking))
                if said:
                    parts.append("[Assistant]: " + "\n".join(said))
                if calls:
                    parts.append("[Assistant tool calls]: " + "; ".join(calls))
            case ToolResultMessage(content=result):
                if output := text_of(result):
                    parts.append(f"[Tool result]: {output}")
    return "\n\n".join(parts)


def summarization_prompt(plan: CompactionPlan, custom_instructions: str | None) -> str:
    prompt = f"<conversation>\n{serialize_conversation(plan.to_summarize)}\n</conversation>\n\n"
    if plan.previous_summary is not None:
        prompt += (
            f"<previous-summary>\n{plan.previous_summary}\n</previous-summary>\n\n"
            "The conversation above continues from the previous summary. Update that summary with "
            "it: keep what still holds, add what is new, move finished work to done.\n\n"
        )
    else:
        prompt += "Summarise the conversation above.\n\n"
    prompt += CHECKPOINT_FORMAT
    if custom_instructions:
        prompt += f"\n\nAlso focus on: {custom_instructions}"
    return prompt


async def summarize(
    plan: CompactionPlan, stream: Any, model: Any, options: StreamOptions, custom_instructions: str | None
) -> str:
    """One request to the current model; raises CompactionError when it fails."""
    context = Context(
        system_prompt=SUMMARIZER_SYSTEM_PROMPT,
        tools=[],
        messages=[UserMessage(content=[TextContent(text=summarization_prompt(plan, custom_instructions))])],
    )
    reply: AssistantMessage = await stream(model, context, options, AssistantBuilder(model, lambda event: None))
    if reply.stop_reason in ("error", "aborted"):
        raise CompactionError(f"Summarization failed: {reply.error_message or reply.stop_reason}")
    return "\n".join(block.text for block in reply.content if isinstance(block, TextContent))

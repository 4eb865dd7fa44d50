"""Compaction: older turns summarised by the current model, recent turns kept verbatim, so a long
conversation continues instead of failing at the context window (Pi's `compaction`).

The context in use is the last successful request's reported usage plus an estimate (characters
/ 4) of what came after it. Compaction is due when that exceeds the window minus a reserve kept
for the reply. The cut keeps the newest messages worth at least `keep_recent_tokens` and falls on
a message that may start the kept part (never a tool result, which must follow its call);
everything before it is serialised as plain text (so the model does not continue it) and
summarised. A cut inside a turn (at an assistant message) summarises that turn's start on its own,
as Pi does, so the kept end of the turn still has its request. The transcript then starts with a
`compactionSummary` message; the next compaction hands that summary to the summariser to be
updated rather than summarised again. The summary ends with the files the summarised turns read
and changed (files.py).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, NamedTuple

import anyio
import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Context,
    CustomMessage,
    ImageContent,
    Message,
    Model,
    StreamFn,
    StreamOptions,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    Wire,
    add_usage,
    text_of,
)
from pi_rpc.session.compaction.files import CompactionDetails, FileLists, files_section
from pi_rpc.session.refusals import CompactionRefused
from pi_rpc.tools import truncate_chars

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

TURN_PREFIX_FORMAT = """The conversation above is the start of a turn that is still going on: its
latest part is kept word for word and is not shown here. Summarise this start so that the kept
part can be understood, with these headings:

## Request
What the user asked for in this turn.

## Done so far
What this part of the turn found, decided and changed.

## Needed to continue
What the kept part relies on: file paths, names, values and errors, quoted exactly.

Be brief."""

# Where the summary of a split turn's start follows the history's summary.
TURN_PREFIX_HEADING = "\n\n---\n\n## Earlier in the current turn\n\n"
NO_EARLIER_HISTORY = "(no earlier history: the conversation began with the current turn)"
# A tool result is shown to the summariser up to this many characters (Pi's bound): a long output
# would only crowd the summary request.
TOOL_RESULT_MAX_CHARS = 2000
IMAGE_CHARS = 4800  # what an image counts for in an estimate (1200 tokens, as Pi counts it)


# Why a compaction runs: asked for, the context near the window, or a request refused for its size.
CompactionReason = Literal["manual", "threshold", "overflow"]


class CompactionSettings(msgspec.Struct, rename="camel", kw_only=True):
    """`compaction` in settings.json, with Pi's names and defaults."""

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


class CompactionResult(Wire, kw_only=True):
    """What `compact` answers (Pi's `CompactionResult`, with 0.81's estimate of the compacted
    context and the summary requests' usage)."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    estimated_tokens_after: int
    usage: Usage | UnsetType = UNSET
    details: CompactionDetails


class CompactionError(CompactionRefused, RuntimeError):
    pass


class CompactionPlan(msgspec.Struct):
    to_summarize: list[Message]  # the turns before the cut's own turn
    kept: list[Message]
    previous_summary: str | None
    tokens_before: int
    # The start of the turn the cut falls in (Pi's split turn), summarised on its own; else empty.
    turn_prefix: list[Message] = msgspec.field(default_factory=list)
    files: FileLists = msgspec.field(default_factory=FileLists)


def _content_chars(content: str | Sequence[TextContent | ImageContent]) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(block.text) if isinstance(block, TextContent) else IMAGE_CHARS for block in content)


def estimate_tokens(message: Message) -> int:
    """A deliberately generous estimate: a token per 4 characters of what the model reads."""
    chars = 0
    match message:
        case UserMessage(content=content):
            chars = len(text_of(content))
        case ToolResultMessage(content=content) | CustomMessage(content=content):
            chars = _content_chars(content)
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
        case CompactionSummaryMessage(summary=summary) | BranchSummaryMessage(summary=summary):
            chars = len(summary)
    return -(-chars // 4)


def reported_tokens(message: AssistantMessage) -> int:
    """The context a reply's request used, as its provider reported it (Pi's calculateContextTokens)."""
    usage = message.usage
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write


def last_usage_index(messages: Sequence[Message]) -> int | None:
    """The newest reply whose usage counts (not an error's or an abort's)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage) and message.stop_reason not in ("error", "aborted"):
            return index
    return None


def context_tokens(messages: Sequence[Message]) -> int:
    """The last successful request's reported context, plus estimates for what followed it."""
    index = last_usage_index(messages)
    if index is not None:
        reply = messages[index]
        assert isinstance(reply, AssistantMessage)
        if reported := reported_tokens(reply):
            return reported + estimated_tokens(messages[index + 1 :])
    return estimated_tokens(messages)


def estimated_tokens(messages: Sequence[Message]) -> int:
    """The messages' size by Pi's estimate (a token per four characters), no reported usage read."""
    return sum(estimate_tokens(m) for m in messages)


# Compiled by the first failed request (`re`'s cache keeps it), not with the settings.
_OVERFLOW = (
    r"context[_ ]length[_ ]exceeded|maximum context length|prompt is too long|too many tokens|"
    r"exceeds? the context window|input is too long|context window"
)


def is_context_overflow(error_message: str) -> bool:
    """Whether a failed request was refused for being larger than the model's context window."""
    return bool(re.search(_OVERFLOW, error_message, re.IGNORECASE))


def should_compact(tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    return settings.enabled and context_window > 0 and tokens > context_window - settings.reserve_tokens


def summary_heading(message: CompactionSummaryMessage) -> str:
    """How an ACP client's replay of a loaded session names the place where a compaction
    summarised the turns before it (an exported page uses Pi's words, session/storage/export_html.py)."""
    return f"Earlier conversation summarised ({message.tokens_before:,} tokens)"


def summary_text(message: Message) -> str | None:
    """The summary a compaction left, when `message` is its summary message."""
    return message.summary if isinstance(message, CompactionSummaryMessage) else None


def _is_cut_point(message: Message) -> bool:
    """Whether the kept part may start at `message`: anything but a tool result (its call must
    come first) or a tool declaration (kept with what follows it)."""
    return not isinstance(message, ToolResultMessage | SystemMessage)


def _starts_turn(message: Message) -> bool:
    """A turn starts with what the user (or, in Pi, an extension or a branch switch) said."""
    return isinstance(message, UserMessage | BashExecutionMessage | BranchSummaryMessage | CustomMessage)


def find_cut(messages: Sequence[Message], keep_recent_tokens: int, start: int = 0) -> tuple[int, bool]:
    """Index of the first message kept: the first cut point at or after the point where the
    messages from the end reach `keep_recent_tokens` (the first cut point if they never do;
    `start` when there is none), and whether they reached it. Messages before `start` (a
    previous summary) are not counted."""
    cut_points = [i for i in range(start, len(messages)) if _is_cut_point(messages[i])]
    if not cut_points:
        return start, False
    kept = 0
    for index in range(len(messages) - 1, start - 1, -1):
        kept += estimate_tokens(messages[index])
        if kept >= keep_recent_tokens:
            return next((c for c in cut_points if c >= index), cut_points[0]), True
    return cut_points[0], False


def split_turn_start(messages: Sequence[Message], cut: int, start: int = 0) -> int | None:
    """Where the turn the cut falls inside began (Pi's split turn); None when the cut starts a
    turn, or no turn start comes before it. A cut at the end (nothing kept) falls inside the
    last turn."""
    if cut < len(messages) and _starts_turn(messages[cut]):
        return None
    return next((i for i in range(cut - 1, start - 1, -1) if _starts_turn(messages[i])), None)


def _summarisable(messages: Sequence[Message]) -> list[Message]:
    """What the summariser reads: not the tool declarations, nor an older summary."""
    return [m for m in messages if not isinstance(m, SystemMessage | CompactionSummaryMessage)]


def plan_compaction(
    messages: Sequence[Message],
    settings: CompactionSettings,
    previous_details: dict[str, Any] | None = None,
    *,
    reply_omitted: bool = False,
) -> CompactionPlan | None:
    """None when there is nothing before the cut to summarise. `previous_details` are the previous
    compaction's, whose file lists carry over. `reply_omitted`: the context's last reply, a
    failed attempt, was taken out of it (an overflow's recovery)."""
    # A compacted context starts with the system message its compaction kept, then the summary.
    head = next((i for i, message in enumerate(messages) if not isinstance(message, SystemMessage)), len(messages))
    previous = summary_text(messages[head]) if head < len(messages) else None
    start = head + 1 if previous is not None else 0
    cut, reached = find_cut(messages, settings.keep_recent_tokens, start)
    if reply_omitted and reached and cut == len(messages) - 1:
        # Pi 1.6.0: when nothing but the omitted attempt would follow the last message kept, the
        # cut passes that message too, so the turn that failed is summarised (its start on its
        # own, a split turn) and nothing that overflowed the window is sent again.
        cut = len(messages)
    turn_start = split_turn_start(messages, cut, start)
    kept_from = cut
    # A tool declaration just before the cut stays with what it declares for (as Pi keeps the
    # settings entries before its cut).
    while kept_from > start and isinstance(messages[kept_from - 1], SystemMessage):
        kept_from -= 1
    to_summarize = _summarisable(messages[start : kept_from if turn_start is None else turn_start])
    turn_prefix = _summarisable(messages[turn_start:kept_from]) if turn_start is not None else []
    if not to_summarize and not turn_prefix:
        return None
    files = FileLists()
    files.add_details(previous_details)
    files.add_calls([*to_summarize, *turn_prefix])
    return CompactionPlan(
        to_summarize=to_summarize,
        kept=list(messages[kept_from:]),
        previous_summary=previous,
        tokens_before=context_tokens(messages),
        turn_prefix=turn_prefix,
        files=files,
    )


def serialize_conversation(messages: Sequence[Message]) -> str:
    """The conversation as labelled plain text, for the summariser to read rather than continue."""
    from pi_rpc.agent import convert_to_llm  # with the first summary, not the settings

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
                    parts.append(f"[Tool result]: {truncate_chars(output, TOOL_RESULT_MAX_CHARS)}")
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


def turn_prefix_prompt(plan: CompactionPlan) -> str:
    return f"<conversation>\n{serialize_conversation(plan.turn_prefix)}\n</conversation>\n\n{TURN_PREFIX_FORMAT}"


Ask = Callable[[Callable[[], Awaitable[AssistantMessage]]], Awaitable[AssistantMessage]]


async def _just_once(produce: Callable[[], Awaitable[AssistantMessage]]) -> AssistantMessage:
    return await produce()


class Summary(NamedTuple):
    text: str
    usage: Usage | None  # what the summary requests cost (both, for a split turn)


async def _ask(
    stream: StreamFn, model: Model, options: StreamOptions, prompt: str, failure: str, ask: Ask
) -> tuple[str, Usage]:
    """One summary request (through `ask`, which may retry it); raises CompactionError saying
    `failure` when it fails."""
    context = Context(
        system_prompt=SUMMARIZER_SYSTEM_PROMPT, tools=[], messages=[UserMessage(content=[TextContent(text=prompt)])]
    )

    from pi_rpc.ai import AssistantBuilder

    async def produce() -> AssistantMessage:
        return await stream(model, context, options, AssistantBuilder(model, lambda event: None))

    reply = await ask(produce)
    if reply.stop_reason in ("error", "aborted"):
        raise CompactionError(f"{failure}: {reply.error_message or reply.stop_reason}")
    return "\n".join(block.text for block in reply.content if isinstance(block, TextContent)), reply.usage


async def summarize(
    plan: CompactionPlan,
    stream: StreamFn,
    model: Model,
    options: StreamOptions,
    custom_instructions: str | None,
    reserve_tokens: int,
    ask: Ask = _just_once,
) -> Summary:
    """The summary, its file lists appended: one request to the current model, two at once for a
    split turn (the history's, the turn start's); raises CompactionError when one fails."""
    history_options = msgspec.structs.replace(options, max_tokens=int(0.8 * reserve_tokens))
    usages: list[Usage] = []
    if not plan.turn_prefix:
        summary, used = await _ask(
            stream, model, history_options, summarization_prompt(plan, custom_instructions), "Summarization failed", ask
        )
        usages.append(used)
    else:
        parts: dict[str, str] = {}

        async def history() -> None:
            if plan.to_summarize:
                prompt = summarization_prompt(plan, custom_instructions)
                parts["history"], used = await _ask(stream, model, history_options, prompt, "Summarization failed", ask)
                usages.append(used)
            else:  # nothing new before the turn: the previous summary still says it all
                parts["history"] = plan.previous_summary or NO_EARLIER_HISTORY

        async def turn_start() -> None:
            prefix_options = msgspec.structs.replace(options, max_tokens=int(0.5 * reserve_tokens))
            prompt = turn_prefix_prompt(plan)
            parts["prefix"], used = await _ask(
                stream, model, prefix_options, prompt, "Turn prefix summarization failed", ask
            )
            usages.append(used)

        try:
            async with anyio.create_task_group() as both:
                both.start_soon(history)
                both.start_soon(turn_start)
        except* Exception as failed:  # the first request that failed says why (the other is cancelled)
            raise failed.exceptions[0] from None
        summary = parts["history"] + TURN_PREFIX_HEADING + parts["prefix"]
    total = functools.reduce(add_usage, usages) if usages else None
    return Summary(summary + files_section(plan.files.details()), total)

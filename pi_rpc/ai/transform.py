"""Cross-provider message normalisation (Pi's `transform-messages.ts`), run by every provider
before it converts the transcript into its API's shape.

A transcript may hold turns from other models and other APIs (the user switched model), turns
that never finished, and tool calls that never got a result. Replayed as they are, these break
requests: a thinking signature is only valid for the model that produced it, a tool-call id minted
by one API may hold characters another API refuses, and every API insists that each tool call is
answered before the conversation moves on. `transform_messages` returns a transcript every
provider can replay:

- an assistant turn that ended in `error` or `aborted` is dropped (its partial reasoning, text or
  half-streamed calls would confuse the model or be refused); the model continues from before it;
- another model's thinking becomes plain text (redacted or empty thinking is dropped); its text
  and tool calls lose their replay tokens (`text_signature`, `thought_signature`);
- tool-call ids go through the provider's `normalize_tool_call_id`, results follow their call;
- a tool call without a result gets a synthetic error result `No result provided`, inserted
  before the next assistant, user or system message, or at the end of the transcript;
- a tool result that answers no open call (a dropped turn's, a duplicate) is dropped;
- a system message is a boundary like a user message; one that only declares tools (no
  `content`) is dropped, since providers take tool declarations from `Context.tools`.

Input messages are never modified: changed messages are copies.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence

import msgspec

from pi_rpc.ai.types import (
    AssistantContent,
    AssistantMessage,
    LlmMessage,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

_log = logging.getLogger(__name__)

NO_RESULT_PROVIDED = "No result provided"

# (original id, the assistant message that made the call) -> an id the target API accepts. It must
# return ids that are already acceptable unchanged, so normalising twice changes nothing.
NormalizeToolCallId = Callable[[str, AssistantMessage], str]

_ID_INVALID = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize_tool_call_id(call_id: str, max_length: int = 64, fallback: str = "call") -> str:
    """`[^a-zA-Z0-9_-]` -> `_`, cut to `max_length`: the id alphabet of Anthropic and OpenAI."""
    return _ID_INVALID.sub("_", call_id)[:max_length] or fallback


def is_same_model(message: AssistantMessage, model: Model) -> bool:
    """Whether `message` was produced by `model` (then its replay tokens are valid for it)."""
    return (message.provider, message.api, message.model) == (model.provider, model.api, model.id)


def transform_messages(
    messages: Sequence[LlmMessage],
    model: Model,
    normalize_tool_call_id: NormalizeToolCallId | None = None,
) -> list[LlmMessage]:
    """The transcript as `model` can replay it; see the module docstring for the rules."""
    ids = _IdMap(normalize_tool_call_id)
    out: list[LlmMessage] = []
    pending: dict[str, ToolCall] = {}  # calls of the last assistant turn still owed a result

    def settle() -> None:
        for call in pending.values():
            out.append(
                ToolResultMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=[TextContent(text=NO_RESULT_PROVIDED)],
                    is_error=True,
                )
            )
        pending.clear()

    for message in messages:
        if isinstance(message, AssistantMessage):
            settle()
            if message.stop_reason in ("error", "aborted"):
                continue
            replayable = _assistant(message, model, ids)
            out.append(replayable)
            pending = {block.id: block for block in replayable.content if isinstance(block, ToolCall)}
        elif isinstance(message, ToolResultMessage):
            call_id = ids.get(message.tool_call_id)
            if pending.pop(call_id, None) is None:
                _log.debug("dropping a tool result that answers no open call: %s", message.tool_call_id)
                continue
            if call_id != message.tool_call_id:
                message = msgspec.structs.replace(message, tool_call_id=call_id)
            out.append(message)
        elif isinstance(message, UserMessage):
            settle()
            out.append(message)
        elif isinstance(message, SystemMessage):
            settle()
            if message.content:
                out.append(message)
    settle()
    return out


def _assistant(message: AssistantMessage, model: Model, ids: _IdMap) -> AssistantMessage:
    same = is_same_model(message, model)
    content: list[AssistantContent] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            converted = _thinking(block, same)
            if converted is not None:
                content.append(converted)
        elif isinstance(block, TextContent):
            content.append(block if same else TextContent(text=block.text))
        else:
            call_id = ids.normalize(block.id, message)
            if not same and block.thought_signature is not msgspec.UNSET:
                block = msgspec.structs.replace(block, id=call_id, thought_signature=msgspec.UNSET)
            elif call_id != block.id:
                block = msgspec.structs.replace(block, id=call_id)
            content.append(block)
    if content == message.content:
        return message
    return msgspec.structs.replace(message, content=content)


def _thinking(block: ThinkingContent, same_model: bool) -> ThinkingContent | TextContent | None:
    if block.redacted:
        return block if same_model else None  # opaque encrypted content: only that model can read it
    if same_model and block.thinking_signature:
        return block  # kept even when empty: encrypted reasoning has no visible text
    if not block.thinking.strip():
        return None
    if same_model:
        return block
    # Another model's reasoning cannot be replayed as reasoning; what was thought stays as text.
    return TextContent(text=block.thinking)


class _IdMap:
    """Original tool-call id -> normalised id, consistent across a transcript, without collisions
    (two ids that normalise alike, such as `a|b` and `a/b`, still get different ids)."""

    def __init__(self, normalize: NormalizeToolCallId | None) -> None:
        self._normalize = normalize
        self._by_original: dict[str, str] = {}
        self._taken: dict[str, str] = {}  # normalised -> original

    def normalize(self, call_id: str, source: AssistantMessage) -> str:
        known = self._by_original.get(call_id)
        if known is not None:
            return known
        candidate = call_id if self._normalize is None else self._normalize(call_id, source)
        base, n = candidate, 2
        while self._taken.get(candidate, call_id) != call_id:
            suffix = f"_{n}"
            candidate = self._renormalize(base + suffix, source)
            if not candidate.endswith(suffix):  # cut by a length limit: make room for the suffix
                candidate = self._renormalize(base[: max(1, len(candidate) - len(suffix))] + suffix, source)
            n += 1
        self._by_original[call_id] = candidate
        self._taken[candidate] = call_id
        return candidate

    def _renormalize(self, call_id: str, source: AssistantMessage) -> str:
        return call_id if self._normalize is None else self._normalize(call_id, source)

    def get(self, call_id: str) -> str:
        return self._by_original.get(call_id, call_id)

"""AssistantBuilder: the one partial-message accumulator every provider writes into.

Providers translate their vendor events into calls on this builder, keyed by the vendor's own part
id (an index, an item id); the builder owns content indices, the partial AssistantMessage, the
streamed events and the final message. A provider never builds a message itself (so all stream alike),
and once called it never raises: it returns `finish()` or `fail()` (failures travel in the message).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Literal

import msgspec
from msgspec import UNSET

from pi_rpc.ai.partial_json import parse_streaming_json
from pi_rpc.ai.redact import redact
from pi_rpc.ai.types import (
    AssistantMessage,
    AutoRetryEnd,
    AutoRetryStart,
    DoneEvent,
    ErrorEvent,
    Model,
    ProviderEvent,
    StartEvent,
    StopReason,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolcallDeltaEvent,
    ToolcallEndEvent,
    ToolcallStartEvent,
    Usage,
)
from pi_rpc.ai.usage import price_usage

EmitProviderEvent = Callable[[ProviderEvent], None]


# Tool-call arguments are re-parsed on every delta while short, then each time they have grown
# by a quarter: the parsing work and the `arguments` traffic stay linear in the arguments' size
# (re-parsing every 4-character delta of a 50 KB file made both quadratic: a minute of CPU and
# hundreds of MB to the editor).
REPARSE_ALWAYS_BELOW = 512
REPARSE_GROWTH = 1.25
# TextParts: pieces at least this long are kept whole; shorter ones are joined in groups of this many.
KEEP_PIECES_FROM = 512
JOIN_SMALL_PIECES = 256


class TextParts:
    """Text that grows by appends in linear work, read whole only when needed.

    `str +=` on an attribute copies the whole text on every delta: 320k deltas took minutes of
    CPU and stalled the daemon meanwhile. Appends go to a list; reading joins it once and keeps
    the result as the single piece, so reads between appends cost one join each. Large pieces
    are kept as they are (the same objects the delta events carry, so holding them twice costs
    nothing); small ones are joined in groups, because each str costs about 50 bytes of header,
    which would dwarf a 4-character delta.
    """

    __slots__ = ("_pieces", "_small", "_size")

    def __init__(self, text: str = "") -> None:
        self._pieces: deque[str] = deque([text] if text else [])
        self._small: list[str] = []  # recent small pieces, after `_pieces`
        self._size = len(text)

    def append(self, piece: str) -> None:
        if not piece:
            return
        self._size += len(piece)
        if len(piece) >= KEEP_PIECES_FROM:
            self._settle()
            self._pieces.append(piece)
            return
        self._small.append(piece)
        if len(self._small) >= JOIN_SMALL_PIECES:
            self._settle()

    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    def text(self) -> str:
        self._settle()
        if len(self._pieces) > 1:
            whole = "".join(self._pieces)
            self._pieces.clear()
            self._pieces.append(whole)
        return self._pieces[0] if self._pieces else ""

    def take(self, limit: int) -> str:
        """Remove and return about `limit` characters from the front (a longer first piece is
        cut at `limit`)."""
        self._settle()
        taken: list[str] = []
        count = 0
        while self._pieces and (not taken or count + len(self._pieces[0]) <= limit):
            piece = self._pieces.popleft()
            if len(piece) > limit:
                piece, rest = piece[:limit], piece[limit:]
                self._pieces.appendleft(rest)
            taken.append(piece)
            count += len(piece)
        self._size -= count
        return "".join(taken)

    def _settle(self) -> None:
        if self._small:
            self._pieces.append("".join(self._small))
            self._small.clear()


class _OpenPart(msgspec.Struct):
    index: int
    kind: str  # "text" | "thinking" | "toolCall"
    # Streamed text, thinking, or raw argument JSON; written into the block when it is read.
    buffer: TextParts = msgspec.field(default_factory=TextParts)
    parsed_size: int = 0


class AssistantBuilder:
    def __init__(
        self,
        model: Model,
        emit: EmitProviderEvent | None = None,
        wait_for_room: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.model = model
        self._emit = emit or (lambda event: None)
        self._wait_for_room = wait_for_room
        self._message = self._new_message()
        # Pi's `durationMs`: from the request's start (this builder's creation) to its end.
        self._created = time.monotonic()
        self._open: dict[Hashable, _OpenPart] = {}
        self._started = False
        self._finished = False
        self._secrets: set[str] = set()

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def message(self) -> AssistantMessage:
        """The message so far. Text still streaming is written into its block here, on read,
        rather than on every delta."""
        for part in self._open.values():
            self._store_text(part)
        return self._message

    async def wait_for_room(self) -> None:
        """A provider awaits this between the events it reads: while the client the events go to
        is far behind, the stream holds here (modes/writer.py) instead of buffering the answer."""
        if self._wait_for_room is not None:
            await self._wait_for_room()

    @property
    def started(self) -> bool:
        return self._started

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._emit(StartEvent())

    def reset(self) -> None:
        """Drop everything streamed so far (a retried request starts from nothing)."""
        self._message = self._new_message()
        self._open.clear()

    def _new_message(self) -> AssistantMessage:
        model = self.model
        return AssistantMessage(
            content=[], api=model.api, provider=model.provider, model=model.id, stop_reason="pending"
        )

    def set_usage(self, usage: Usage, billed: float | None = None) -> None:
        """The usage the provider reported, priced from the model's rates unless the provider
        said what it `billed` (OpenRouter's `usage.cost`)."""
        self._message.usage = price_usage(usage, self.model.cost, billed)

    def set_response(self, response_id: str | None = None, model: str | None = None) -> None:
        """The provider's response id and the model it says answered, from its first event
        that has them; a model named as the one asked for is not repeated."""
        if response_id and self._message.response_id is UNSET:
            self._message.response_id = response_id
        if model and model != self.model.id and self._message.response_model is UNSET:
            self._message.response_model = model

    def set_raw_stop_reason(self, reason: str) -> None:
        """The provider's own stop reason, as it spelled it (mapped by the provider to `finish`)."""
        self._message.raw_stop_reason = reason

    # --- text -----------------------------------------------------------------------------------

    def text_delta(self, key: Hashable, delta: str) -> None:
        part = self._part(key, "text")
        part.buffer.append(delta)
        if delta:
            self._emit(TextDeltaEvent(content_index=part.index, delta=delta))

    def text_end(self, key: Hashable, signature: str | None = None) -> None:
        part = self._open.pop(key, None)
        if part is None or part.kind != "text":
            return
        block = self._store_text(part)
        assert isinstance(block, TextContent)
        if signature:
            block.text_signature = signature
        self._emit(TextEndEvent(content_index=part.index, content=block.text))

    # --- thinking -------------------------------------------------------------------------------

    def thinking_delta(self, key: Hashable, delta: str) -> None:
        part = self._part(key, "thinking")
        part.buffer.append(delta)
        if delta:
            self._emit(ThinkingDeltaEvent(content_index=part.index, delta=delta))

    def thinking_signature(self, key: Hashable, signature: str) -> None:
        block = self._message.content[self._part(key, "thinking").index]
        assert isinstance(block, ThinkingContent)
        block.thinking_signature = (block.thinking_signature or "") + signature

    def thinking_end(self, key: Hashable, signature: str | None = None, redacted: bool = False) -> None:
        part = self._open.pop(key, None)
        if part is None or part.kind != "thinking":
            return
        block = self._store_text(part)
        assert isinstance(block, ThinkingContent)
        if signature:
            block.thinking_signature = signature
        if redacted:
            block.redacted = True
        self._emit(ThinkingEndEvent(content_index=part.index, content=block.thinking))

    # --- tool calls -----------------------------------------------------------------------------

    def toolcall_start(self, key: Hashable, call_id: str, name: str) -> None:
        if key in self._open:
            return
        self._open_part(key, "toolCall", ToolCall(id=call_id, name=name, arguments={}))
        index = self._open[key].index
        self._emit(ToolcallStartEvent(content_index=index, id=call_id, tool_name=name))

    def has_toolcall(self, key: Hashable) -> bool:
        part = self._open.get(key)
        return part is not None and part.kind == "toolCall"

    def toolcall_delta(self, key: Hashable, fragment: str) -> None:
        part = self._open.get(key)
        if part is None or part.kind != "toolCall" or not fragment:
            return
        part.buffer.append(fragment)
        size = len(part.buffer)
        event = ToolcallDeltaEvent(content_index=part.index, delta=fragment)
        if size < REPARSE_ALWAYS_BELOW or size >= part.parsed_size * REPARSE_GROWTH:
            block = self._message.content[part.index]
            assert isinstance(block, ToolCall)
            block.arguments = parse_streaming_json(part.buffer.text())
            part.parsed_size = size
            event.arguments = block.arguments
        self._emit(event)

    def toolcall_end(self, key: Hashable, arguments: dict[str, Any] | None = None) -> None:
        """Close a tool call. Arguments that are not valid JSON are kept as far as they parse;
        the validation point then tells the model exactly what was wrong."""
        part = self._open.pop(key, None)
        if part is None or part.kind != "toolCall":
            return
        block = self._message.content[part.index]
        assert isinstance(block, ToolCall)
        if arguments is not None:
            block.arguments = arguments
        else:
            block.arguments = parse_streaming_json(part.buffer.text())
        self._emit(ToolcallEndEvent(content_index=part.index, tool_call=block))

    # --- secrets --------------------------------------------------------------------------------

    def keep_secret(self, *secrets: str) -> None:
        """Scrub these values (the request's key and credential headers) from every error text
        this builder emits or stores, whichever path produced the text."""
        self._secrets.update(secrets)

    # --- retry notifications --------------------------------------------------------------------

    def retry_start(self, attempt: int, max_attempts: int, delay_ms: int, error_message: str) -> None:
        self._emit(
            AutoRetryStart(
                attempt=attempt,
                max_attempts=max_attempts,
                delay_ms=delay_ms,
                error_message=redact(error_message, self._secrets),
            )
        )

    def retry_end(self, success: bool, attempt: int, final_error: str | None = None) -> None:
        event = AutoRetryEnd(success=success, attempt=attempt)
        if final_error is not None:
            event.final_error = redact(final_error, self._secrets)
        self._emit(event)

    # --- endings --------------------------------------------------------------------------------

    def finish(self, stop_reason: StopReason | None = None) -> AssistantMessage:
        """End normally. Without an explicit reason: `toolUse` if any tool call, else `stop`."""
        if stop_reason in ("error", "aborted"):
            return self.fail(stop_reason, self._message.error_message or "Unknown error")
        self._close_all()
        if stop_reason is None:
            has_calls = any(isinstance(block, ToolCall) for block in self._message.content)
            stop_reason = "toolUse" if has_calls else "stop"
        self._message.stop_reason = stop_reason
        self._end_timing()
        self.start()
        if not self._finished:
            self._finished = True
            assert stop_reason in ("stop", "length", "toolUse")
            self._emit(DoneEvent(reason=stop_reason, usage=self._message.usage))
        return self._message

    def fail(self, stop_reason: StopReason, error_message: str) -> AssistantMessage:
        """End with `error` or `aborted`; what streamed so far stays in the message."""
        reason: Literal["error", "aborted"] = "aborted" if stop_reason == "aborted" else "error"
        error_message = redact(error_message, self._secrets)
        # An abort closes what was streaming, as Pi's providers do when the stream stops under them;
        # a failed stream's open parts just stop.
        self._close_all(emit=reason == "aborted")
        self._message.stop_reason = reason
        self._message.error_message = error_message
        self._end_timing()
        self.start()
        if not self._finished:
            self._finished = True
            self._emit(ErrorEvent(reason=reason, error_message=error_message, usage=self._message.usage))
        return self._message

    # --- internals ------------------------------------------------------------------------------

    def _end_timing(self) -> None:
        if self._message.duration_ms is UNSET:
            self._message.duration_ms = max(0, round((time.monotonic() - self._created) * 1000))

    def _part(self, key: Hashable, kind: str) -> _OpenPart:
        part = self._open.get(key)
        if part is not None and part.kind == kind:
            return part
        if part is not None:  # a vendor reused a key for another kind: close the old part first
            self._close(key)
        block: TextContent | ThinkingContent = TextContent(text="") if kind == "text" else ThinkingContent(thinking="")
        self._open_part(key, kind, block)
        index = self._open[key].index
        self._emit(TextStartEvent(content_index=index) if kind == "text" else ThinkingStartEvent(content_index=index))
        return self._open[key]

    def _open_part(self, key: Hashable, kind: str, block: TextContent | ThinkingContent | ToolCall) -> None:
        self.start()
        self._message.content.append(block)
        self._open[key] = _OpenPart(index=len(self._message.content) - 1, kind=kind)

    def _close(self, key: Hashable) -> None:
        part = self._open.get(key)
        if part is None:
            return
        if part.kind == "text":
            self.text_end(key)
        elif part.kind == "thinking":
            self.thinking_end(key)
        else:
            self.toolcall_end(key)

    def _close_all(self, emit: bool = True) -> None:
        for key in list(self._open):
            if emit:
                self._close(key)
            else:
                part = self._open.pop(key)
                if part.kind == "toolCall":
                    block = self._message.content[part.index]
                    assert isinstance(block, ToolCall)
                    block.arguments = parse_streaming_json(part.buffer.text())
                else:
                    self._store_text(part)

    def _store_text(self, part: _OpenPart) -> TextContent | ThinkingContent | ToolCall:
        """Write a text or thinking part's streamed text into its block; return the block."""
        block = self._message.content[part.index]
        if isinstance(block, TextContent):
            block.text = part.buffer.text()
        elif isinstance(block, ThinkingContent):
            block.thinking = part.buffer.text()
        return block

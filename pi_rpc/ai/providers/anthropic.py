"""Anthropic Messages API (`anthropic-messages`): request body, and SSE events -> builder calls.

Wire format: `POST {base_url}/v1/messages` with `stream: true`; the answer is a server-sent event
stream of `message_start`, `content_block_start/delta/stop` (keyed by a block `index`),
`message_delta` (stop reason, cumulative usage), `message_stop`, `ping` and `error`.
Base URL convention as in Pi: `https://api.anthropic.com`, without `/v1`.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from pi_rpc.ai import http
from pi_rpc.ai.models import (
    MIN_ANSWER_TOKENS,
    adjust_max_tokens_for_thinking,
    anthropic_adaptive_thinking,
    anthropic_effort,
)
from pi_rpc.ai.output_cap import clamp_to_context, output_cap
from pi_rpc.ai.provider import StreamOptions
from pi_rpc.ai.providers.driver import ProviderApi, merge_headers
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.strict_schema import resolve_json_schema_strict, tool_parameters
from pi_rpc.ai.transform import sanitize_tool_call_id, transform_messages
from pi_rpc.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    StopReason,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    model_compat,
)

_log = logging.getLogger(__name__)

ANTHROPIC_VERSION = "2023-06-01"
# Tool arguments stream in small pieces instead of one blob at the end; thinking may sit between
# tool calls. Pi sends the same two betas.
BETA_FEATURES = ("fine-grained-tool-streaming-2025-05-14", "interleaved-thinking-2025-05-14")
REDACTED_THINKING_TEXT = "[Reasoning redacted]"
_CACHE_CONTROL = {"type": "ephemeral"}
# Sent when the model says no cap (`maxTokens` 0): the Messages API requires `max_tokens`.
DEFAULT_MAX_TOKENS = 4096


# --- request ------------------------------------------------------------------------------------


def normalize_tool_call_id(call_id: str, source: AssistantMessage | None = None) -> str:
    # The API accepts ^[a-zA-Z0-9_-]+$ up to 64 characters; ids from other providers may not fit.
    return sanitize_tool_call_id(call_id, 64, "tool_call")


def supports_strict_tools(model: Model) -> bool:
    """`strict: true` tools; the catalogue sets `supportsStrictTools` for built-in Claude models."""
    return model_compat(model).supports_strict_tools is True


def build_headers(model: Model, options: StreamOptions) -> dict[str, str]:
    betas = [b for b in BETA_FEATURES if not (b.startswith("interleaved") and anthropic_adaptive_thinking(model))]
    own = {"anthropic-version": ANTHROPIC_VERSION, "anthropic-beta": ",".join(betas)}
    if options.api_key:
        own["x-api-key"] = options.api_key
    return merge_headers(own, model, options)


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """Raises `ConstrainedSamplingError` for a tool whose `require` cannot be met (spec 4.3)."""
    # Pi 1.6.0: the caller's cap or the model's whole `maxTokens`, fitted into the context window
    # (older Pi sent a third of it). The API requires the field, so a model saying no cap gets one.
    base_max = output_cap(model, context, options) or DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(context.messages, model),
        "max_tokens": base_max,
        "stream": True,
    }
    if context.system_prompt:
        body["system"] = [{"type": "text", "text": context.system_prompt, "cache_control": _CACHE_CONTROL}]
    if context.tools:
        strict_ok = supports_strict_tools(model)
        body["tools"] = [convert_tool(tool, resolve_json_schema_strict(tool, strict_ok)) for tool in context.tools]
    thinking = options.thinking_level != "off" and model.reasoning
    if thinking:
        _add_thinking(body, model, context, options.thinking_level, base_max)
    elif options.temperature is not msgspec.UNSET:
        # The API rejects a temperature together with extended thinking.
        body["temperature"] = options.temperature
    return body


def _add_thinking(body: dict[str, Any], model: Model, context: Context, level: ThinkingLevel, base_max: int) -> None:
    if anthropic_adaptive_thinking(model):
        body["thinking"] = {"type": "adaptive"}
        body["output_config"] = {"effort": anthropic_effort(model, level)}
        return
    # The budget counts against max_tokens, so max_tokens grows to leave room for the answer,
    # and is fitted into the context window once more (Pi 1.6.0).
    grown, budget = adjust_max_tokens_for_thinking(base_max, model.max_tokens, level)
    body["max_tokens"] = clamp_to_context(model, context, grown)
    budget = min(budget, max(0, body["max_tokens"] - MIN_ANSWER_TOKENS))
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}


def convert_tool(tool: Tool, strict: bool | None = None) -> dict[str, Any]:
    """Spec 1.3: the schema's `properties` and `required` become the tool's `input_schema`.
    Strict (spec 4.3/4.4): the whole strict schema goes, and the tool says `strict: true`."""
    schema = tool_parameters(tool, strict)
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": schema.get("properties", {}),
        "required": schema.get("required", []),
    }
    declared: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if strict:
        declared["strict"] = True
        input_schema = {**schema, **input_schema}  # keeps `additionalProperties: false`
    declared["input_schema"] = input_schema
    return declared


def _image_block(image: ImageContent) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime_type, "data": image.data}}


def _user_blocks(message: UserMessage, model: Model) -> list[dict[str, Any]]:
    if isinstance(message.content, str):
        return [{"type": "text", "text": message.content}] if message.content.strip() else []
    blocks: list[dict[str, Any]] = []
    for item in message.content:
        if isinstance(item, TextContent):
            if item.text.strip():
                blocks.append({"type": "text", "text": item.text})
        elif "image" in model.input:
            blocks.append(_image_block(item))
    return blocks


def _assistant_blocks(content: list[TextContent | ThinkingContent | ToolCall]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text.strip():
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            signature = block.thinking_signature or ""
            if block.redacted and signature:
                blocks.append({"type": "redacted_thinking", "data": signature})
            elif not block.thinking.strip():
                continue
            elif signature.strip():
                blocks.append({"type": "thinking", "thinking": block.thinking, "signature": signature})
            else:
                # Without its signature (a stream that ended early) the API rejects a thinking block;
                # plain text keeps what was thought without tags the model might imitate.
                blocks.append({"type": "text", "text": block.thinking})
        else:
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments})
    return blocks


def _tool_result_block(message: ToolResultMessage, model: Model) -> dict[str, Any]:
    texts = [c.text for c in message.content if isinstance(c, TextContent)]
    images = [c for c in message.content if isinstance(c, ImageContent)] if "image" in model.input else []
    content: str | list[dict[str, Any]]
    if not images:
        content = "\n".join(texts)
    else:
        content = [{"type": "text", "text": t} for t in texts if t] or [
            {"type": "text", "text": "(see attached image)"}
        ]
        content.extend(_image_block(image) for image in images)
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
        "is_error": message.is_error,
    }


def convert_messages(messages: list[Any], model: Model, tools: list[Tool] | None = None) -> list[dict[str, Any]]:
    """Our transcript as Messages API turns (`tools` is part of the shared signature; unused here).
    Consecutive tool results share one user turn; the last user turn's last block carries the cache
    mark, so the whole history is cached (Pi)."""
    out: list[dict[str, Any]] = []
    for message in transform_messages(messages, model, normalize_tool_call_id):
        if isinstance(message, SystemMessage):
            # Only a system message with content is left (transform_messages drops declarations).
            # The Messages API has no system turn mid-conversation: its text joins the user side.
            if not message.content.strip():
                continue  # the API refuses empty text blocks
            block = {"type": "text", "text": message.content}
            previous = out[-1] if out else None
            if previous and previous["role"] == "user":
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            continue
        if isinstance(message, UserMessage):
            blocks = _user_blocks(message, model)
            if blocks:
                out.append({"role": "user", "content": blocks})
        elif isinstance(message, AssistantMessage):
            blocks = _assistant_blocks(message.content)
            if blocks:
                out.append({"role": "assistant", "content": blocks})
        elif isinstance(message, ToolResultMessage):
            block = _tool_result_block(message, model)
            previous = out[-1] if out else None
            if previous and previous["role"] == "user" and previous.get("_tool_results"):
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block], "_tool_results": True})
    for turn in out:
        turn.pop("_tool_results", None)
    if out and out[-1]["role"] == "user" and out[-1]["content"]:
        last = out[-1]["content"][-1]
        if last["type"] in ("text", "image", "tool_result"):
            last["cache_control"] = _CACHE_CONTROL
    return out


# --- stream events (only the fields we read) ----------------------------------------------------


class _Usage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class _MessageInfo(msgspec.Struct):
    usage: _Usage = msgspec.field(default_factory=_Usage)
    id: str | None = None
    model: str | None = None


class _TextBlock(msgspec.Struct, tag_field="type", tag="text"):
    text: str = ""


class _ThinkingBlock(msgspec.Struct, tag_field="type", tag="thinking"):
    thinking: str = ""
    signature: str = ""


class _RedactedThinkingBlock(msgspec.Struct, tag_field="type", tag="redacted_thinking"):
    data: str = ""


class _ToolUseBlock(msgspec.Struct, tag_field="type", tag="tool_use"):
    id: str
    name: str
    input: dict[str, Any] = msgspec.field(default_factory=dict)


class _TextDelta(msgspec.Struct, tag_field="type", tag="text_delta"):
    text: str


class _ThinkingDelta(msgspec.Struct, tag_field="type", tag="thinking_delta"):
    thinking: str


class _SignatureDelta(msgspec.Struct, tag_field="type", tag="signature_delta"):
    signature: str


class _InputJsonDelta(msgspec.Struct, tag_field="type", tag="input_json_delta"):
    partial_json: str


class MessageStart(msgspec.Struct, tag_field="type", tag="message_start"):
    message: _MessageInfo


class ContentBlockStart(msgspec.Struct, tag_field="type", tag="content_block_start"):
    index: int
    content_block: _TextBlock | _ThinkingBlock | _RedactedThinkingBlock | _ToolUseBlock


class ContentBlockDelta(msgspec.Struct, tag_field="type", tag="content_block_delta"):
    index: int
    delta: _TextDelta | _ThinkingDelta | _SignatureDelta | _InputJsonDelta


class ContentBlockStop(msgspec.Struct, tag_field="type", tag="content_block_stop"):
    index: int


class _StopInfo(msgspec.Struct):
    stop_reason: str | None = None


class MessageDelta(msgspec.Struct, tag_field="type", tag="message_delta"):
    delta: _StopInfo = msgspec.field(default_factory=_StopInfo)
    usage: _Usage | None = None


class MessageStop(msgspec.Struct, tag_field="type", tag="message_stop"):
    pass


class _ErrorInfo(msgspec.Struct):
    type: str = ""
    message: str = ""


class StreamError(msgspec.Struct, tag_field="type", tag="error"):
    error: _ErrorInfo = msgspec.field(default_factory=_ErrorInfo)


AnthropicEvent = (
    MessageStart | ContentBlockStart | ContentBlockDelta | ContentBlockStop | MessageDelta | MessageStop | StreamError
)
_DECODE = msgspec.json.Decoder(AnthropicEvent).decode

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
    "refusal": "error",
    "sensitive": "error",
}


class _StreamState:
    """Applies one decoded event at a time to the builder, keyed by the API's block index."""

    def __init__(self, builder: AssistantBuilder) -> None:
        self.builder = builder
        self.kinds: dict[int, str] = {}
        self.tool_inputs: dict[int, dict[str, Any]] = {}  # input sent whole in the start event
        self.streamed_args: set[int] = set()
        self.usage = _Usage()
        self.stop_reason: str | None = None
        self.stopped = False

    @property
    def finished(self) -> bool:
        return self.stopped

    def apply(self, data: str) -> None:
        if not data.strip():
            return  # keep-alive
        try:
            event = _DECODE(data)
        except msgspec.ValidationError:
            return  # ping, new event or block kinds: not ours to read
        except msgspec.DecodeError as exc:
            raise http.ProviderError(f"Malformed event stream: {exc}") from None
        b = self.builder
        match event:
            case MessageStart(message=info):
                # The dated model id the server reports is not copied into `message.model`: replay
                # logic compares it with the configured id to keep signatures. It is the
                # message's `responseModel`, as in Pi, when it differs.
                b.start()
                b.set_response(info.id, info.model)
                self._usage(info.usage)
            case ContentBlockStart(index=i, content_block=block):
                self._start_block(i, block)
            case ContentBlockDelta(index=i, delta=_TextDelta(text=text)):
                b.text_delta(i, text)
            case ContentBlockDelta(index=i, delta=_ThinkingDelta(thinking=text)):
                b.thinking_delta(i, text)
            case ContentBlockDelta(index=i, delta=_SignatureDelta(signature=signature)):
                b.thinking_signature(i, signature)
            case ContentBlockDelta(index=i, delta=_InputJsonDelta(partial_json=fragment)):
                if fragment:
                    self.streamed_args.add(i)
                b.toolcall_delta(i, fragment)
            case ContentBlockStop(index=i):
                self._stop_block(i)
            case MessageDelta(delta=delta, usage=usage):
                if delta.stop_reason:
                    self.stop_reason = delta.stop_reason
                    b.set_raw_stop_reason(delta.stop_reason)
                if usage is not None:
                    self._usage(usage)
            case MessageStop():
                self.stopped = True
            case StreamError(error=error):
                text = error.message or error.type or "Unknown error"
                raise http.ProviderError(f"{error.type}: {text}" if error.type and error.message else text)

    def _start_block(self, i: int, block: Any) -> None:
        b = self.builder
        match block:
            case _TextBlock(text=text):
                self.kinds[i] = "text"
                b.text_delta(i, text)
            case _ThinkingBlock(thinking=text, signature=signature):
                self.kinds[i] = "thinking"
                b.thinking_delta(i, text)
                if signature:
                    b.thinking_signature(i, signature)
            case _RedactedThinkingBlock(data=data):
                b.thinking_delta(i, REDACTED_THINKING_TEXT)
                b.thinking_end(i, signature=data, redacted=True)
            case _ToolUseBlock(id=call_id, name=name, input=arguments):
                self.kinds[i] = "toolCall"
                if arguments:
                    self.tool_inputs[i] = arguments
                b.toolcall_start(i, call_id, name)

    def _stop_block(self, i: int) -> None:
        kind = self.kinds.pop(i, None)
        if kind == "text":
            self.builder.text_end(i)
        elif kind == "thinking":
            self.builder.thinking_end(i)
        elif kind == "toolCall":
            whole = self.tool_inputs.pop(i, None)
            self.builder.toolcall_end(i, whole if i not in self.streamed_args else None)

    def _usage(self, usage: _Usage) -> None:
        # message_delta repeats the counts cumulatively; a field it omits keeps its earlier value.
        for name in _Usage.__struct_fields__:
            value = getattr(usage, name)
            if value is not None:
                setattr(self.usage, name, value)
        u = self.usage
        self.builder.set_usage(
            Usage(
                input=u.input_tokens or 0,
                output=u.output_tokens or 0,
                cache_read=u.cache_read_input_tokens or 0,
                cache_write=u.cache_creation_input_tokens or 0,
            )
        )

    def result(self) -> AssistantMessage:
        if not (self.stopped or self.stop_reason):
            return self.builder.fail("error", "Stream ended before the message was complete")
        reason = _STOP_REASONS.get(self.stop_reason or "end_turn", "stop")
        if reason == "error":
            return self.builder.fail("error", f"The model stopped with reason: {self.stop_reason}")
        return self.builder.finish(reason)


# --- entry point --------------------------------------------------------------------------------


def _new_state(model: Model, context: Context, builder: AssistantBuilder) -> _StreamState:
    return _StreamState(builder)


API = ProviderApi(
    api="anthropic-messages",
    path="/v1/messages",
    build_headers=build_headers,
    build_request_body=build_request_body,
    new_state=_new_state,
)
stream = API.stream

PROVIDER = API.provider

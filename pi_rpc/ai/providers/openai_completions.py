"""OpenAI Chat Completions (`openai-completions`), for OpenAI and compatible servers.

Wire format: `POST {base_url}/chat/completions` with `stream: true`; the answer is SSE whose data
lines are `chat.completion.chunk` objects and finally `[DONE]`. Base URL convention as in Pi:
`https://api.openai.com/v1` (the `/v1` is part of the base).

Compatible servers (Ollama, llama.cpp server, vLLM, LM Studio, OpenRouter) differ in known ways,
all tolerated here: usage missing or in the last content chunk, tool-call ids absent or repeated,
a tool-call `index` missing or reused, arguments sent whole (even as an object) instead of
streamed, reasoning under `reasoning_content` or `reasoning`, `finish_reason` spelled differently,
no `[DONE]`, errors as a JSON body with status 200 or as an `error` chunk mid-stream.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable
from typing import Any, Literal

import msgspec

from pi_rpc.ai import http
from pi_rpc.ai.compat import ModelCompat, said_flags
from pi_rpc.ai.output_cap import output_cap
from pi_rpc.ai.provider import StreamOptions
from pi_rpc.ai.providers.driver import ProviderApi, merge_headers
from pi_rpc.ai.providers.openai_chunks import (
    DECODE_CHUNK,
    FINISH_REASONS,
    ChunkUsage,
    Delta,
    FunctionDelta,
    ToolCallDelta,
    usage_of,
)
from pi_rpc.ai.stream import AssistantBuilder, TextParts
from pi_rpc.ai.strict_schema import resolve_json_schema_strict, tool_parameters
from pi_rpc.ai.transform import sanitize_tool_call_id, transform_messages
from pi_rpc.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    model_compat,
)

_log = logging.getLogger(__name__)
# A 200 whose stream closes with no event at all: the server failed on the request after it had
# answered (llama-cpp-python does so on a context overflow and on content its chat template cannot
# format), and only its own log says why.
EMPTY_STREAM_ERROR = (
    "The server accepted the request but sent no event before closing the stream: it failed on "
    "the request (see the server's log; llama-cpp-python does this when the prompt exceeds its "
    "context window or its chat template cannot format a message)"
)

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")
TOOL_RESULT_IMAGES_TEXT = "Attached image(s) from tool result:"
BRIDGE_AFTER_TOOL_RESULT = "I have processed the tool results."  # Pi's words


# --- per-server differences (Pi's `compat`) -----------------------------------------------------


class Compat(msgspec.Struct, kw_only=True, frozen=True):
    supports_store: bool = False
    supports_developer_role: bool = False
    supports_reasoning_effort: bool = True
    supports_usage_in_streaming: bool = True
    supports_xhigh: bool = False
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_tokens"
    requires_tool_result_name: bool = False
    requires_thinking_as_text: bool = False
    # `""` rather than null beside tool calls: llama-cpp-python's server answers 500 to null (Pi
    # sends null unless told; `requiresNonNullAssistantContent: false` brings that back).
    requires_non_null_assistant_content: bool = True
    # A bridging assistant turn between tool results and a user turn (servers that refuse one).
    requires_assistant_after_tool_result: bool = False
    # `tools: []` when the transcript holds tool calls but no tools are offered now.
    requires_tools_with_tool_history: bool = False
    # `strict` on function tools (constrained sampling, spec 4); only servers known to take it.
    supports_strict_mode: bool = False
    # openai: `reasoning_effort`; openrouter: `reasoning: {effort}`; qwen: `enable_thinking`.
    thinking_format: Literal["openai", "openrouter", "qwen"] = "openai"


def get_compat(model: Model) -> Compat:
    """Defaults detected from the base URL, overridden by the flags `model.compat` says.
    Unknown hosts get the most widely accepted dialect (`system` role, `max_tokens`, no `store`)."""
    return _resolved_compat(model.base_url or API.default_base_url, model_compat(model))


@functools.lru_cache(maxsize=64)
def _resolved_compat(url: str, said: ModelCompat) -> Compat:
    # Read twice per request (body and messages) with the same few models: resolved once each.
    compat = Compat()
    if "api.openai.com" in url:
        compat = Compat(supports_store=True, supports_developer_role=True, max_tokens_field="max_completion_tokens")
    elif "openrouter.ai" in url:
        compat = Compat(thinking_format="openrouter")
    elif "api.x.ai" in url:
        compat = Compat(supports_reasoning_effort=False)
    elif "mistral.ai" in url:
        compat = Compat(requires_tool_result_name=True, requires_thinking_as_text=True)
    overrides = {name: value for name, value in said_flags(said).items() if name in Compat.__struct_fields__}
    return msgspec.structs.replace(compat, **overrides) if overrides else compat


# --- request ------------------------------------------------------------------------------------


def build_headers(model: Model, options: StreamOptions) -> dict[str, str]:
    # Local servers need no key: then no Authorization header at all.
    own = {"authorization": f"Bearer {options.api_key}"} if options.api_key else {}
    return merge_headers(own, model, options)


def reasoning_effort(level: ThinkingLevel, compat: Compat, official: bool) -> str:
    if level == "xhigh" and not compat.supports_xhigh:
        return "high"
    if level == "minimal" and not official:
        return "low"  # `minimal` is OpenAI's own; compatible servers know low/medium/high
    return level


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """Raises `ConstrainedSamplingError` for a tool whose `require` cannot be met (spec 4.3)."""
    compat = get_compat(model)
    body: dict[str, Any] = {
        "model": model.id,
        "messages": [*_system_prompt(model, context, compat), *convert_messages(context.messages, model)],
        "stream": True,
    }
    if compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        body["store"] = False
    cap = output_cap(model, context, options)
    if cap is not None:
        body[compat.max_tokens_field] = cap
    if options.temperature is not msgspec.UNSET:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [convert_tool(tool, compat) for tool in context.tools]
        if options.tool_choice is not msgspec.UNSET:
            body["tool_choice"] = options.tool_choice
    elif compat.requires_tools_with_tool_history and _has_tool_history(context.messages):
        body["tools"] = []
    if model.reasoning and options.thinking_level != "off":
        effort = reasoning_effort(
            options.thinking_level, compat, "api.openai.com" in (model.base_url or API.default_base_url)
        )
        if compat.thinking_format == "openrouter":
            body["reasoning"] = {"effort": effort}
        elif compat.thinking_format == "qwen":
            body["enable_thinking"] = True
        elif compat.supports_reasoning_effort:
            body["reasoning_effort"] = effort
    elif model.reasoning and compat.thinking_format == "qwen":
        body["enable_thinking"] = False
    return body


def _has_tool_history(messages: list[Any]) -> bool:
    return any(
        isinstance(m, ToolResultMessage)
        or (isinstance(m, AssistantMessage) and any(isinstance(b, ToolCall) for b in m.content))
        for m in messages
    )


def convert_tool(tool: Tool, compat: Compat | None = None) -> dict[str, Any]:
    supports_strict = compat is not None and compat.supports_strict_mode
    strict = resolve_json_schema_strict(tool, supports_strict)
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool_parameters(tool, strict),
    }
    if supports_strict:
        # Said either way where the server knows the field, as the Responses provider does.
        function["strict"] = strict is True
    return {"type": "function", "function": function}


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}


def _user(message: UserMessage, model: Model) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    parts: list[dict[str, Any]] = []
    for item in message.content:
        if isinstance(item, TextContent):
            if item.text:
                parts.append({"type": "text", "text": item.text})
        elif "image" in model.input:
            parts.append(_image_part(item))
    if not parts:
        return None
    if all(part["type"] == "text" for part in parts):
        # Text alone goes as one string: llama-cpp-python's server fails on a list of text parts
        # (status 200, an empty stream), and every server takes a string.
        return {"role": "user", "content": "\n".join(part["text"] for part in parts)}
    return {"role": "user", "content": parts}


def _assistant(message: AssistantMessage, compat: Compat) -> dict[str, Any] | None:
    texts = [b.text for b in message.content if isinstance(b, TextContent) and b.text]
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and b.thinking]
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if thinking:
        if compat.requires_thinking_as_text:
            joined = "\n".join(f"<thinking>\n{b.thinking}\n</thinking>" for b in thinking)
            out["content"] = joined + ("\n" + out["content"] if out["content"] else "")
        elif thinking[0].thinking_signature in REASONING_FIELDS:
            # The field the server streamed its reasoning in; servers such as llama.cpp with
            # gpt-oss want it back there on the next turn.
            out[str(thinking[0].thinking_signature)] = "\n".join(b.thinking for b in thinking)
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": msgspec.json.encode(c.arguments).decode()},
            }
            for c in calls
        ]
    if not out["content"] and not calls:
        return None  # nothing to replay (an aborted turn); servers reject empty assistant turns
    if out["content"] is None and (
        compat.requires_non_null_assistant_content or compat.requires_assistant_after_tool_result
    ):
        out["content"] = ""
    return out


def _tool_result(message: ToolResultMessage, model: Model, compat: Compat) -> list[dict[str, Any]]:
    text = "\n".join(c.text for c in message.content if isinstance(c, TextContent))
    images = [c for c in message.content if isinstance(c, ImageContent)]
    sendable = images if "image" in model.input else []
    if not text:
        text = (
            "(see attached image)" if sendable else ("(image omitted: model does not support images)" if images else "")
        )
    result: dict[str, Any] = {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}
    if compat.requires_tool_result_name:
        result["name"] = message.tool_name
    out = [result]
    if sendable:
        # Tool messages carry text only; images follow as a user turn.
        if compat.requires_assistant_after_tool_result:
            out.append({"role": "assistant", "content": BRIDGE_AFTER_TOOL_RESULT})
        out.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": TOOL_RESULT_IMAGES_TEXT}, *(_image_part(i) for i in sendable)],
            }
        )
    return out


def normalize_tool_call_id(model: Model) -> Callable[[str, AssistantMessage], str]:
    """Pi's rule: a Responses-style `call|item` id keeps its call part, and OpenAI itself takes at
    most 40 characters; other servers take what they are given."""
    official = model.provider == "openai" or "api.openai.com" in (model.base_url or API.default_base_url)

    def normalize(call_id: str, source: AssistantMessage) -> str:
        if "|" in call_id:
            return sanitize_tool_call_id(call_id.split("|", 1)[0], 40)
        return call_id[:40] if official else call_id

    return normalize


def _system_prompt(model: Model, context: Context, compat: Compat) -> list[dict[str, Any]]:
    if not context.system_prompt:
        return []
    return [{"role": _system_role(model, compat), "content": context.system_prompt}]


def _system_role(model: Model, compat: Compat) -> str:
    return "developer" if model.reasoning and compat.supports_developer_role else "system"


def _after_tool_result(out: list[dict[str, Any]]) -> bool:
    # A tool result's images follow it as a user turn (`_tool_result`): that turn counts too.
    if not out:
        return False
    last = out[-1]
    return last["role"] == "tool" or (last["role"] == "user" and _is_tool_images(last))


def _is_tool_images(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and bool(content) and content[0].get("text") == TOOL_RESULT_IMAGES_TEXT


def convert_messages(messages: list[Any], model: Model, tools: list[Tool] | None = None) -> list[dict[str, Any]]:
    """Our transcript as chat messages (`tools` is part of the shared signature; unused here)."""
    compat = get_compat(model)
    out: list[dict[str, Any]] = []
    for message in transform_messages(messages, model, normalize_tool_call_id(model)):
        if compat.requires_assistant_after_tool_result and isinstance(message, UserMessage) and _after_tool_result(out):
            out.append({"role": "assistant", "content": BRIDGE_AFTER_TOOL_RESULT})
        if isinstance(message, SystemMessage):
            # Only a system message with content is left (transform_messages drops declarations):
            # sent where it stands, in the system prompt's role, as the Responses API does.
            out.append({"role": _system_role(model, compat), "content": message.content})
            continue
        if isinstance(message, UserMessage):
            converted = _user(message, model)
            if converted:
                out.append(converted)
        elif isinstance(message, AssistantMessage):
            converted = _assistant(message, compat)
            if converted:
                out.append(converted)
        elif isinstance(message, ToolResultMessage):
            out.extend(_tool_result(message, model, compat))
    return out


class _Slot(msgspec.Struct):
    key: tuple[str, int]
    id: str | None
    name: str | None
    started: bool = False
    pending: str = ""  # argument text that arrived before the name
    args: TextParts = msgspec.field(default_factory=TextParts)  # argument JSON streamed so far
    whole: dict[str, Any] | None = None  # arguments a server repeated whole after streaming them


class _StreamState:
    def __init__(self, builder: AssistantBuilder) -> None:
        self.builder = builder
        self.seq = 0
        self.current: tuple[str, int] | None = None  # the open text or thinking part
        self.slots: dict[int, _Slot] = {}
        self.all_slots: list[_Slot] = []
        self.used_ids: set[str] = set()
        self.finish_reason: str | None = None
        self.done = False
        self.events = 0  # events with data: none at all means the server failed before answering

    @property
    def finished(self) -> bool:
        return self.done

    def apply(self, data: str) -> None:
        data = data.strip()
        if data == "[DONE]":
            self.done = True
            return
        if not data:
            return  # keep-alive
        self.events += 1
        try:
            chunk = DECODE_CHUNK(data)
        except msgspec.ValidationError:
            _log.debug("skipping a chunk of unexpected shape")  # tolerate what we do not read
            return
        except msgspec.DecodeError as exc:
            raise http.ProviderError(f"Malformed event stream: {exc}") from None
        if chunk.error:
            message = http.error_message_from_body(msgspec.json.encode({"error": chunk.error}))
            raise http.ProviderError(message or "Unknown error")
        self.builder.start()
        self.builder.set_response(chunk.id, chunk.model)
        if chunk.usage is not None:
            self._usage(chunk.usage)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            if choice.delta is not None:
                self._delta(choice.delta)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
                self.builder.set_raw_stop_reason(choice.finish_reason)

    # --- content --------------------------------------------------------------------------------

    def _delta(self, delta: Delta) -> None:
        for field in REASONING_FIELDS:
            text = getattr(delta, field)
            if text:  # servers that send two spellings send the same text twice: take the first
                opening = self.current is None or self.current[0] != "thinking"
                key = self._switch("thinking")
                self.builder.thinking_delta(key, text)
                if opening:
                    # The "signature" of compatible-server reasoning is the field it came in (as in
                    # Pi), so a replay sends it back under that name.
                    self.builder.thinking_signature(key, field)
                break
        if delta.content:
            self.builder.text_delta(self._switch("text"), delta.content)
        for call in delta.tool_calls or ():
            self._tool_call(call)

    def _switch(self, kind: str) -> tuple[str, int]:
        if self.current is not None and self.current[0] == kind:
            return self.current
        self._close_current()
        self.seq += 1
        self.current = (kind, self.seq)
        return self.current

    def _close_current(self) -> None:
        if self.current is None:
            return
        if self.current[0] == "text":
            self.builder.text_end(self.current)
        else:
            self.builder.thinking_end(self.current)
        self.current = None

    # --- tool calls -----------------------------------------------------------------------------

    def _tool_call(self, delta: ToolCallDelta) -> None:
        function = delta.function or FunctionDelta()
        index = delta.index
        if index is None:
            # No index: a delta naming a call starts one; a bare fragment continues the last.
            starts_new = bool(delta.id or function.name) or not self.all_slots
            index = len(self.all_slots) if starts_new else self._index_of(self.all_slots[-1])
        slot = self.slots.get(index)
        if slot is not None and delta.id and slot.id and delta.id != slot.id and function.name:
            self._end_slot(slot)  # the server reused an index for a new call
            slot = None
        if slot is None:
            self.seq += 1
            slot = _Slot(key=("tool", self.seq), id=delta.id, name=function.name)
            self.slots[index] = slot
            self.all_slots.append(slot)
        else:
            slot.id = slot.id or delta.id
            slot.name = slot.name or function.name
        fragment = function.arguments
        if fragment is not None and not isinstance(fragment, str):
            fragment = msgspec.json.encode(fragment).decode()
        if slot.name and not slot.started:
            self._start_slot(slot)
        if not fragment:
            return
        if not slot.started:
            slot.pending += fragment
            return
        self._arguments(slot, fragment)

    def _index_of(self, slot: _Slot) -> int:
        return next(i for i, s in self.slots.items() if s is slot)

    def _start_slot(self, slot: _Slot) -> None:
        call_id = slot.id or f"call_{uuid.uuid4().hex[:24]}"
        if call_id in self.used_ids:  # results are matched by id, so ids must be unique
            call_id = f"{call_id}_{len(self.used_ids)}"
        self.used_ids.add(call_id)
        slot.id = call_id
        slot.started = True
        self.builder.toolcall_start(slot.key, call_id, slot.name or "")
        if slot.pending:
            pending, slot.pending = slot.pending, ""
            self._arguments(slot, pending)

    def _arguments(self, slot: _Slot, fragment: str) -> None:
        if slot.args and fragment.lstrip().startswith("{") and _is_object(slot.args.text()):
            # Complete arguments followed by a whole copy: keep the copy, do not concatenate.
            decoded = msgspec.json.decode(fragment) if _is_object(fragment) else None
            slot.whole = decoded if isinstance(decoded, dict) else slot.whole
            return
        slot.args.append(fragment)
        self.builder.toolcall_delta(slot.key, fragment)

    def _end_slot(self, slot: _Slot) -> None:
        if not slot.started:
            self._start_slot(slot)
        self.builder.toolcall_end(slot.key, slot.whole)

    # --- usage and end --------------------------------------------------------------------------

    def _usage(self, usage: ChunkUsage) -> None:
        self.builder.set_usage(*usage_of(usage))

    def result(self) -> AssistantMessage:
        self._close_current()
        for slot in self.all_slots:
            if self.builder.has_toolcall(slot.key) or not slot.started:
                self._end_slot(slot)
        if self.finish_reason is None and not self.done and not self.events:
            return self.builder.fail("error", EMPTY_STREAM_ERROR)
        if self.finish_reason is None and not self.done:
            return self.builder.fail("error", "Stream ended before the message was complete")
        reason = FINISH_REASONS.get(self.finish_reason or "stop", "stop")
        if reason == "error":
            return self.builder.fail("error", f"The model stopped with reason: {self.finish_reason}")
        if self.all_slots and reason == "stop":
            reason = "toolUse"  # Ollama and some llama.cpp builds say "stop" after tool calls
        return self.builder.finish(reason)


def _is_object(text: str) -> bool:
    try:
        return isinstance(msgspec.json.decode(text), dict)
    except msgspec.DecodeError:
        return False


# --- entry point --------------------------------------------------------------------------------


def _new_state(model: Model, context: Context, builder: AssistantBuilder) -> _StreamState:
    return _StreamState(builder)


API = ProviderApi(
    api="openai-completions",
    path="/chat/completions",
    build_headers=build_headers,
    build_request_body=build_request_body,
    new_state=_new_state,
)
stream = API.stream

PROVIDER = API.provider

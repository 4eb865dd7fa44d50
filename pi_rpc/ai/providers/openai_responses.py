"""OpenAI Responses API (`openai-responses`): request body, and SSE events -> builder calls.

Wire format: `POST {base_url}/responses` with `stream: true, store: false`. The answer is a stream
of typed events keyed by `output_index`: `response.output_item.added/done` frame each output item
(`message`, `reasoning`, `function_call`, `custom_tool_call`), deltas fill them in
(`response.output_text.delta`, `response.reasoning_summary_text.delta`,
`response.function_call_arguments.delta`, …), and `response.completed` / `response.incomplete` /
`response.failed` / `error` end the stream. Base URL convention as in Pi: `https://api.openai.com/v1`.

Replay is stateless (`store: false`): a reasoning item goes back verbatim, encrypted content
included, from `ThinkingContent.thinking_signature` (its JSON); a function call's item id travels in
`ToolCall.thought_signature`; an assistant text's message id (and phase) in `text_signature`.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from pi_rpc.ai import http
from pi_rpc.ai.compat import said
from pi_rpc.ai.models import clamp_thinking_level, openai_reasoning_effort
from pi_rpc.ai.output_cap import output_cap
from pi_rpc.ai.provider import StreamOptions
from pi_rpc.ai.providers.driver import ProviderApi, merge_headers
from pi_rpc.ai.stream import AssistantBuilder, TextParts
from pi_rpc.ai.strict_schema import (
    grammar_input_properties,
    resolve_grammar_sampling,
    resolve_json_schema_strict,
    tool_parameters,
)
from pi_rpc.ai.transform import sanitize_tool_call_id, transform_messages
from pi_rpc.ai.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    model_compat,
)

# The API rejects `max_output_tokens` below 16.
MIN_OUTPUT_TOKENS = 16
NO_TERMINAL_EVENT = "OpenAI Responses stream ended before a terminal response event"
USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"


# --- request: tools -----------------------------------------------------------------------------


def convert_tools(tools: list[Tool], model: Model) -> list[dict[str, Any]]:
    """Tool declarations; raises `ConstrainedSamplingError` for a `require` that cannot be met."""
    supports_strict = said(model_compat(model).supports_strict_mode, False)
    supports_grammar = said(model_compat(model).supports_open_ai_grammar_tools, False)
    out: list[dict[str, Any]] = []
    for tool in tools:
        grammar = resolve_grammar_sampling(tool, supports_grammar)
        if grammar is not None:
            out.append(
                {
                    "type": "custom",
                    "name": tool.name,
                    "description": tool.description,
                    "format": {"type": "grammar", "syntax": grammar.syntax, "definition": grammar.definition},
                }
            )
            continue
        strict = resolve_json_schema_strict(tool, supports_strict)
        declared: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool_parameters(tool, strict),
        }
        if supports_strict:
            declared["strict"] = strict is True
        out.append(declared)
    return out


# --- request: input items -----------------------------------------------------------------------


def _data_url(image: ImageContent) -> str:
    return f"data:{image.mime_type};base64,{image.data}"


def _user_item(message: UserMessage, model: Model) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "content": [{"type": "input_text", "text": message.content}]}
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"type": "input_text", "text": block.text})
        elif "image" in model.input:
            parts.append({"type": "input_image", "detail": "auto", "image_url": _data_url(block)})
        elif not parts or parts[-1].get("text") != USER_IMAGE_PLACEHOLDER:
            parts.append({"type": "input_text", "text": USER_IMAGE_PLACEHOLDER})
    return {"role": "user", "content": parts} if parts else None


def _tool_output(message: ToolResultMessage, model: Model) -> str | list[dict[str, Any]]:
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    images = [block for block in message.content if isinstance(block, ImageContent)]
    if not images or "image" not in model.input:
        return text or ("(see attached image)" if images else "(no tool output)")
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
    parts += [{"type": "input_image", "detail": "auto", "image_url": _data_url(image)} for image in images]
    return parts


def _encode_text_signature(item_id: str, phase: str | None) -> str:
    return json.dumps({"v": 1, "id": item_id, "phase": phase}) if phase else item_id


def _decode_text_signature(signature: str) -> tuple[str, str | None]:
    if signature.startswith("{"):
        try:
            parsed = json.loads(signature)
        except ValueError:
            return signature, None
        if isinstance(parsed, dict) and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            return parsed["id"], phase if isinstance(phase, str) else None
    return signature, None


def _assistant_items(message: AssistantMessage, grammar_props: dict[str, str]) -> list[dict[str, Any]]:
    # Replay tokens (reasoning items, message and call item ids) left here are this model's own:
    # `transform_messages` has already stripped every other model's.
    items: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if block.thinking_signature:
                try:
                    items.append(json.loads(block.thinking_signature))
                    continue
                except ValueError:
                    pass
            # Reasoning without its item cannot be replayed as reasoning; keep what was said as text.
            if not block.redacted and block.thinking.strip():
                items.append({"role": "assistant", "content": block.thinking})
        elif isinstance(block, TextContent):
            if block.text_signature:
                item_id, phase = _decode_text_signature(block.text_signature)
                item: dict[str, Any] = {
                    "type": "message",
                    "role": "assistant",
                    "id": item_id[:64],
                    "status": "completed",
                    "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                }
                if phase:
                    item["phase"] = phase
                items.append(item)
            elif block.text:
                items.append({"role": "assistant", "content": block.text})
        else:
            items.append(_call_item(block, grammar_props))
    return items


def _call_item(call: ToolCall, grammar_props: dict[str, str]) -> dict[str, Any]:
    item_id = call.thought_signature if isinstance(call.thought_signature, str) else None
    prop = grammar_props.get(call.name)
    if prop is not None:
        value = call.arguments.get(prop)
        item: dict[str, Any] = {
            "type": "custom_tool_call",
            "call_id": call.id,
            "name": call.name,
            "input": value if isinstance(value, str) else "",
        }
    else:
        item = {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": json.dumps(call.arguments, ensure_ascii=False),
        }
        if item_id is not None and not item_id.startswith("fc"):
            item_id = None  # function_call item ids must start with "fc"
    if item_id:
        item["id"] = item_id
    return item


def normalize_tool_call_id(call_id: str, source: AssistantMessage) -> str:
    """Ids minted by other APIs may hold characters or lengths the Responses API refuses."""
    return sanitize_tool_call_id(call_id, 64, "call")


def _system_role(model: Model) -> str:
    return "developer" if model.reasoning and said(model_compat(model).supports_developer_role, True) else "system"


def convert_messages(messages: list[Any], model: Model, tools: list[Tool] | None = None) -> list[dict[str, Any]]:
    """Our transcript as Responses `input` items (Pi `convertResponsesMessages`); `tools` says which
    calls were grammar (custom) tool calls."""
    role = _system_role(model)
    grammar_props = _grammar_props(model, tools or [])
    items: list[dict[str, Any]] = []
    for message in transform_messages(messages, model, normalize_tool_call_id):
        if isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message, grammar_props))
        elif isinstance(message, ToolResultMessage):
            kind = "custom_tool_call_output" if message.tool_name in grammar_props else "function_call_output"
            items.append({"type": kind, "call_id": message.tool_call_id, "output": _tool_output(message, model)})
        elif isinstance(message, UserMessage):
            user = _user_item(message, model)
            if user is not None:
                items.append(user)
        elif isinstance(message, SystemMessage):
            items.append({"role": role, "content": message.content})
    return items


def _grammar_props(model: Model, tools: list[Tool]) -> dict[str, str]:
    return grammar_input_properties(tools, said(model_compat(model).supports_open_ai_grammar_tools, False))


def build_request_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    system = [{"role": _system_role(model), "content": context.system_prompt}] if context.system_prompt else []
    body: dict[str, Any] = {
        "model": model.id,
        "input": [*system, *convert_messages(context.messages, model, context.tools)],
        "stream": True,
        "store": False,
    }
    if options.session_id:
        body["prompt_cache_key"] = options.session_id[:64]
    cap = output_cap(model, context, options)
    if cap is not None and said(model_compat(model).supports_max_output_tokens, True):
        body["max_output_tokens"] = max(cap, MIN_OUTPUT_TOKENS)
    if isinstance(options.temperature, float | int):
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = convert_tools(context.tools, model)
    effort = openai_reasoning_effort(model, options.thinking_level)
    if effort is not None:
        body["reasoning"] = {"effort": effort}
        if clamp_thinking_level(model, options.thinking_level) != "off":
            body["reasoning"]["summary"] = "auto"
        # Without stored responses, reasoning can only be replayed from its encrypted content.
        body["include"] = ["reasoning.encrypted_content"]
    return body


def build_headers(model: Model, options: StreamOptions) -> dict[str, str]:
    own = {"authorization": f"Bearer {options.api_key}"} if options.api_key else {}
    return merge_headers(own, model, options)


# --- stream events (only the fields we read) ----------------------------------------------------


class _MessageItem(msgspec.Struct, tag_field="type", tag="message"):
    id: str = ""
    content: list[dict[str, Any]] = msgspec.field(default_factory=list)
    phase: str | None = None


class _ReasoningItem(msgspec.Struct, tag_field="type", tag="reasoning"):
    id: str = ""
    summary: list[dict[str, Any]] = msgspec.field(default_factory=list)
    content: list[dict[str, Any]] | None = None
    encrypted_content: str | None = None


class _FunctionCallItem(msgspec.Struct, tag_field="type", tag="function_call"):
    call_id: str
    name: str
    id: str = ""
    arguments: str = ""


class _CustomToolCallItem(msgspec.Struct, tag_field="type", tag="custom_tool_call"):
    call_id: str
    name: str
    id: str = ""
    input: str = ""


_Item = _MessageItem | _ReasoningItem | _FunctionCallItem | _CustomToolCallItem


class _InputTokenDetails(msgspec.Struct):
    cached_tokens: int = 0
    cache_write_tokens: int = 0


class _OutputTokenDetails(msgspec.Struct):
    reasoning_tokens: int = 0


class _Usage(msgspec.Struct):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    input_tokens_details: _InputTokenDetails | None = None
    output_tokens_details: _OutputTokenDetails | None = None


class _Response(msgspec.Struct):
    id: str = ""
    model: str = ""
    status: str | None = None
    usage: _Usage | None = None
    error: dict[str, Any] | None = None
    incomplete_details: dict[str, Any] | None = None
    output: list[dict[str, Any]] | None = None


class _Event(msgspec.Struct):
    """Every event we read, in one shape: `type` says which fields are meaningful. An item of a
    kind we do not know (web search, …) fails decoding, and the event is skipped."""

    type: str
    output_index: int = -1
    item: _Item | None = None
    delta: str = ""
    arguments: str = ""
    summary_index: int = 0
    response: _Response | None = None
    message: str = ""
    code: str | None = None


_DECODE = msgspec.json.Decoder(_Event).decode
_TERMINAL = ("response.completed", "response.incomplete")


class _Slot(msgspec.Struct):
    """What we know of one open output item, keyed by its output_index."""

    kind: str  # "text" | "thinking" | "toolCall" | "custom"
    text: TextParts = msgspec.field(default_factory=TextParts)  # text, thinking or raw arguments/input so far
    summary_index: int = 0
    input_property: str = ""
    block: Any = None  # the content block the builder made for this item


class _StreamState:
    def __init__(self, builder: AssistantBuilder, grammar_props: dict[str, str]) -> None:
        self.builder = builder
        self.grammar_props = grammar_props
        self.slots: dict[int, _Slot] = {}
        self.reasoning_blocks: dict[str, ThinkingContent] = {}
        self.terminal: _Response | None = None

    @property
    def finished(self) -> bool:
        return self.terminal is not None

    def apply(self, data: str) -> None:
        if data.strip() == "[DONE]":
            return
        try:
            event = _DECODE(data)
        except msgspec.ValidationError:
            return  # other event kinds (annotations, web search, …): not ours to read
        except msgspec.DecodeError as exc:
            raise http.ProviderError(f"Malformed event stream: {exc}") from None
        kind, i = event.type, event.output_index
        if kind == "response.created" and event.response is not None:
            # message.model stays the requested id: replay compares it with the model's id.
            self.builder.start()
            self.builder.set_response(event.response.id)
        elif kind == "response.output_item.added" and event.item is not None:
            self._open(i, event.item)
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            self._text(i, "text", event.delta)
        elif kind == "response.reasoning_summary_text.delta":
            slot = self.slots.get(i)
            if slot is not None and slot.kind == "thinking" and event.summary_index != slot.summary_index:
                slot.summary_index = event.summary_index
                if slot.text:
                    self._text(i, "thinking", "\n\n")  # summary parts are paragraphs
            self._text(i, "thinking", event.delta)
        elif kind == "response.reasoning_text.delta":
            self._text(i, "thinking", event.delta)
        elif kind == "response.function_call_arguments.delta":
            self._arguments(i, event.delta)
        elif kind == "response.function_call_arguments.done":
            slot = self.slots.get(i)
            if slot is not None and slot.kind == "toolCall" and event.arguments.startswith(slot.text.text()):
                self._arguments(i, event.arguments[len(slot.text) :])
        elif kind == "response.custom_tool_call_input.delta":
            self._custom_input(i, event.delta)
        elif kind == "response.output_item.done" and event.item is not None:
            self._close(i, event.item)
        elif kind in _TERMINAL and event.response is not None:
            self._usage(event.response)
            self._backfill_reasoning(event.response)
            if kind == "response.incomplete" and event.response.status is None:
                event.response.status = "incomplete"
            self.terminal = event.response
        elif kind == "response.failed":
            response = event.response or _Response()
            self._usage(response)
            raise http.ProviderError(_failure_text(response))
        elif kind == "error":
            text = f"Error Code {event.code}: {event.message}" if event.code else event.message
            raise http.ProviderError(text or "Unknown error")

    # --- items ----------------------------------------------------------------------------------

    def _open(self, i: int, item: _Item) -> None:
        if i in self.slots:
            return
        b = self.builder
        match item:
            case _MessageItem():
                b.text_delta(i, "")
                self.slots[i] = _Slot("text", block=b.message.content[-1])
            case _ReasoningItem():
                b.thinking_delta(i, "")
                self.slots[i] = _Slot("thinking", block=b.message.content[-1])
            case _FunctionCallItem(call_id=call_id, name=name, id=item_id, arguments=arguments):
                self.slots[i] = _Slot("toolCall")
                b.toolcall_start(i, call_id, name)
                self._set_item_id(item_id)
                if arguments:
                    self._arguments(i, arguments)
            case _CustomToolCallItem(call_id=call_id, name=name, id=item_id, input=text):
                self.slots[i] = _Slot("custom", input_property=self.grammar_props.get(name, "input"))
                b.toolcall_start(i, call_id, name)
                self._set_item_id(item_id)
                if text:
                    self._custom_input(i, text)

    def _set_item_id(self, item_id: str) -> None:
        block = self.builder.message.content[-1]  # toolcall_start has just appended it
        if item_id and isinstance(block, ToolCall):
            block.thought_signature = item_id

    def _text(self, i: int, kind: str, delta: str) -> None:
        slot = self.slots.get(i)
        if slot is None or slot.kind != kind:
            return
        slot.text.append(delta)
        if kind == "text":
            self.builder.text_delta(i, delta)
        else:
            self.builder.thinking_delta(i, delta)

    def _arguments(self, i: int, delta: str) -> None:
        slot = self.slots.get(i)
        if slot is not None and slot.kind == "toolCall" and delta:
            slot.text.append(delta)
            self.builder.toolcall_delta(i, delta)

    def _custom_input(self, i: int, delta: str, slot: _Slot | None = None) -> None:
        # A grammar tool streams raw text; editors still get JSON argument fragments.
        slot = slot or self.slots.get(i)
        if slot is None or slot.kind != "custom" or not delta:
            return
        prefix = "" if slot.text else "{" + json.dumps(slot.input_property) + ':"'
        slot.text.append(delta)
        self.builder.toolcall_delta(i, prefix + json.dumps(delta, ensure_ascii=False)[1:-1])

    def _close(self, i: int, item: _Item) -> None:
        if i not in self.slots:
            self._open(i, item)  # some servers skip `added`
        slot = self.slots.pop(i, None)
        if slot is None:
            return
        b = self.builder
        match item:
            case _MessageItem(id=item_id, content=parts, phase=phase) if slot.kind == "text":
                final = "".join(str(p.get("text") or p.get("refusal") or "") for p in parts)
                if final.startswith(slot.text.text()) and len(final) > len(slot.text):
                    b.text_delta(i, final[len(slot.text) :])
                b.text_end(i, _encode_text_signature(item_id, phase) if item_id else None)
            case _ReasoningItem() if slot.kind == "thinking":
                final = "\n\n".join(str(p.get("text", "")) for p in item.summary) or "\n\n".join(
                    str(p.get("text", "")) for p in item.content or ()
                )
                if final.startswith(slot.text.text()) and len(final) > len(slot.text):
                    b.thinking_delta(i, final[len(slot.text) :])
                b.thinking_end(i, signature=_reasoning_signature(item))
                if isinstance(slot.block, ThinkingContent) and item.id:
                    self.reasoning_blocks[item.id] = slot.block
            case _FunctionCallItem(arguments=arguments) if slot.kind == "toolCall":
                if arguments and arguments.startswith(slot.text.text()):
                    self._arguments(i, arguments[len(slot.text) :])
                b.toolcall_end(i)
            case _CustomToolCallItem(input=text) if slot.kind == "custom":
                if text.startswith(slot.text.text()):
                    self._custom_input(i, text[len(slot.text) :], slot)
                b.toolcall_end(i, {slot.input_property: text or slot.text.text()})

    def _backfill_reasoning(self, response: _Response) -> None:
        # Some deployments (Azure) send encrypted reasoning only in the final response object.
        for raw in response.output or ():
            if raw.get("type") != "reasoning" or not raw.get("encrypted_content"):
                continue
            block = self.reasoning_blocks.get(str(raw.get("id")))
            if block is None or not isinstance(block.thinking_signature, str):
                continue
            stored = json.loads(block.thinking_signature)
            if not stored.get("encrypted_content"):
                stored["encrypted_content"] = raw["encrypted_content"]
                block.thinking_signature = json.dumps(stored)

    def _usage(self, response: _Response) -> None:
        usage = response.usage
        if usage is None:
            return
        details = usage.input_tokens_details or _InputTokenDetails()
        # input_tokens includes cached and cache-written tokens; they are priced separately.
        fresh = max(0, usage.input_tokens - details.cached_tokens - details.cache_write_tokens)
        self.builder.set_usage(
            Usage(
                input=fresh,
                output=usage.output_tokens,
                cache_read=details.cached_tokens,
                cache_write=details.cache_write_tokens,
                reasoning=(usage.output_tokens_details or _OutputTokenDetails()).reasoning_tokens,
                total_tokens=usage.total_tokens,
            )
        )

    def result(self) -> AssistantMessage:
        response = self.terminal
        if response is None:
            return self.builder.fail("error", NO_TERMINAL_EVENT)
        reason = (response.incomplete_details or {}).get("reason")
        self.builder.set_response(response.id)
        if response.status:  # Pi's rawStopReason: the status, and why it is incomplete
            self.builder.set_raw_stop_reason(f"{response.status}.{reason}" if reason else response.status)
        if response.status == "incomplete":
            if reason == "max_output_tokens":
                return self.builder.finish("length")
            return self.builder.fail(
                "error", f"Response incomplete: {reason}" if reason else "Response incomplete without a provider reason"
            )
        if response.status in ("failed", "cancelled"):
            return self.builder.fail("error", _failure_text(response))
        return self.builder.finish()


def _reasoning_signature(item: _ReasoningItem) -> str:
    """The reasoning item as it must be sent back (the input-item shape of the same item)."""
    replay: dict[str, Any] = {"type": "reasoning", "id": item.id, "summary": item.summary}
    if item.content is not None:
        replay["content"] = item.content
    if item.encrypted_content is not None:
        replay["encrypted_content"] = item.encrypted_content
    return json.dumps(replay, ensure_ascii=False)


def _failure_text(response: _Response) -> str:
    error = response.error or {}
    if error:
        return f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}"
    reason = (response.incomplete_details or {}).get("reason")
    return f"incomplete: {reason}" if reason else "Unknown error (no error details in response)"


# --- entry point --------------------------------------------------------------------------------


def _new_state(model: Model, context: Context, builder: AssistantBuilder) -> _StreamState:
    return _StreamState(builder, _grammar_props(model, context.tools))


API = ProviderApi(
    api="openai-responses",
    path="/responses",
    build_headers=build_headers,
    build_request_body=build_request_body,
    new_state=_new_state,
)
stream = API.stream

PROVIDER = API.provider

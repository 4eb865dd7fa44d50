"""What `pi-rpc doctor --live` sends: the requests of a real turn, and the fix for the first one a
server refuses.

A one-line "say ok" passes on servers that then fail every real prompt: llama-cpp-python's takes
plain text but answers a list of content parts with an empty stream, and a replayed tool call
with `"content": null` with a 500. So the probe sends, in the order a session meets them, a plain
message, the daemon's own system prompt and default tool list, a tool call replayed with its
result, and (for a model said to read images) an image. At the first refusal it resends that
request with each setting that could explain it (a `compat` flag, `input: ["text"]`, no tools)
and names the first one with which the server accepts: that is the line's fix.

A server can take every one of those and still never call a tool: llama-server with a chat
template that renders no tools (SmolLM2's own, say) formats the tool list away and answers in
text. So, last, a Chat Completions server is asked for a call (`tool_choice: "required"`); one
that answers that in text gets a warning, which says, where llama.cpp's `/props` tells, whether
its template renders no tools (start it with one that does) or renders them and the model still
wrote text (llama.cpp's grammar lets text come before the call it requires: a model not trained
for tool calls does). A server that refuses `tool_choice` itself (llama-cpp-python's chatml
formats take only a named tool) is not judged by it: pi-rpc's own turns never send one.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import anyio
import msgspec

from pi_rpc.ai import (
    AssistantBuilder,
    AssistantMessage,
    Context,
    ImageContent,
    LlmMessage,
    Model,
    ModelCompat,
    ProviderEvent,
    StreamOptions,
    TextContent,
    Tool,
    ToolCall,
    ToolcallStartEvent,
    ToolResultMessage,
    UserMessage,
    api_declaration,
    layered,
    request_secrets,
    sections_text,
    template_renders_tools,
)
from pi_rpc.ai.redact import redact
from pi_rpc.commands.checks import Check, Status
from pi_rpc.session import ModelChoice, build_system_prompt
from pi_rpc.tools import DEFAULT_ACTIVE_TOOLS, create_tool_definitions

# A stuck server must not hang the doctor; this bounds each request.
LIVE_TIMEOUT_SECONDS = 60.0
_REPLY = "Reply with the single word: ok"
# A 1x1 PNG: the smallest image a vision model can be sent.
_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
# Where a server refuses tools outright, the fix is in how it was started, not in pi-rpc.
_TOOLS_HINT = (
    "start the server with tool calling on: llama-server --jinja; llama-cpp-python "
    "--chat_format chatml-function-calling (or the model's function-calling format); vLLM "
    "--enable-auto-tool-choice --tool-call-parser NAME; Ollama: a model whose template has tools"
)
# Where tools are taken but never called: the chat template is what drops them.
_TEMPLATE_HINT = (
    "start the server with a chat template that renders tools: llama-server --jinja with the "
    "model's tool-use template (--chat-template-file FILE when the GGUF's own has none); "
    "llama-cpp-python --chat_format chatml-function-calling (or the model's function-calling "
    "format); Ollama: a model whose template has tools"
)
# Where the template renders tools and the model still answers in text.
_MODEL_HINT = "use a model trained for tool calls (its model card says so), with its own tool-use template"
_FORCED_CALL = "Read the file README.md."
# Enough for a call's name and a short argument; the request stops at the call's first event.
_FORCED_CALL_TOKENS = 64

# A change to try after a refusal: the model and context to resend, or None where it cannot apply.
Change = Callable[[Model, Context], tuple[Model, Context] | None]


class Fix(msgspec.Struct, frozen=True):
    advice: str
    change: Change


class Probe(msgspec.Struct, frozen=True):
    what: str  # "the server refuses <what>"
    context: Context
    fixes: tuple[Fix, ...] = ()
    # A refusal here spoils only some turns (an image prompt): a warning, not a failure.
    severity: Status = "fail"


def _with_compat(**flags: bool) -> Change:
    """Resend with `compat` flags the model does not already say so."""

    def change(model: Model, context: Context) -> tuple[Model, Context] | None:
        said = model.compat if isinstance(model.compat, ModelCompat) else ModelCompat()
        if all(getattr(said, name) == value for name, value in flags.items()):
            return None
        return msgspec.structs.replace(
            model, compat=layered(said, msgspec.structs.replace(ModelCompat(), **flags))
        ), context

    return change


def _compat_fix(flag: str, value: bool, attr: str) -> Fix:
    setting = f'"compat": {{"{flag}": {"true" if value else "false"}}}'
    return Fix(f"in models.json, set {setting} for this model", _with_compat(**{attr: value}))


def _text_only(model: Model, context: Context) -> tuple[Model, Context] | None:
    return (msgspec.structs.replace(model, input=["text"]), context) if "image" in model.input else None


def _no_tools(model: Model, context: Context) -> tuple[Model, Context] | None:
    return (model, msgspec.structs.replace(context, tools=[])) if context.tools else None


def _turn_setting(cwd: str) -> tuple[str, list[Tool]]:
    """The system prompt and tool list a session in `cwd` sends on every turn."""
    definitions = create_tool_definitions(DEFAULT_ACTIVE_TOOLS)
    tools = [definition.declaration() for definition in definitions.values()]
    return sections_text(build_system_prompt(list(definitions.values()), cwd)), tools


def real_turn_probes(model: Model, cwd: str) -> list[Probe]:
    """The requests of a real turn, with the daemon's default tools and its system prompt."""
    system_prompt, tools = _turn_setting(cwd)
    call = ToolCall(id="call_probe_1", name="read", arguments={"path": "README.md"})
    replay: list[LlmMessage] = [
        UserMessage(content="Read README.md."),
        AssistantMessage(content=[call], api=model.api, provider=model.provider, model=model.id, stop_reason="toolUse"),
        ToolResultMessage(
            tool_call_id=call.id, tool_name="read", content=[TextContent(text="# A project")], is_error=False
        ),
    ]
    probes = [
        Probe("a plain message", Context(system_prompt="", messages=[UserMessage(content=_REPLY)])),
        Probe(
            "the system prompt with the tool list",
            Context(system_prompt=system_prompt, messages=[UserMessage(content=_REPLY)], tools=tools),
            (
                _compat_fix("supportsDeveloperRole", False, "supports_developer_role"),
                _compat_fix("supportsStrictMode", False, "supports_strict_mode"),
                Fix(_TOOLS_HINT, _no_tools),
            ),
        ),
        Probe(
            "a tool call replayed with its result",
            Context(system_prompt=system_prompt, messages=replay, tools=tools),
            (
                _compat_fix("requiresNonNullAssistantContent", True, "requires_non_null_assistant_content"),
                _compat_fix("requiresToolResultName", True, "requires_tool_result_name"),
            ),
        ),
    ]
    if "image" in model.input:
        image = UserMessage(content=[TextContent(text=_REPLY), ImageContent(data=_PIXEL_PNG, mime_type="image/png")])
        probes.append(
            Probe(
                "an image (content sent as a list of parts)",
                Context(system_prompt="", messages=[image]),
                (Fix('in models.json, set "input": ["text"] for this model (it reads no images here)', _text_only),),
                severity="warn",
            )
        )
    return probes


async def _send(choice: ModelChoice, model: Model, context: Context) -> str | None:
    """None when the server answered; else why not, secrets redacted."""
    builder = AssistantBuilder(model)
    secrets = request_secrets(choice.api_key, choice.headers)
    builder.keep_secret(*secrets)
    options = StreamOptions(
        api_key=choice.api_key,
        headers=choice.headers,
        max_retries=0,
        max_tokens=api_declaration(model.api).min_output_tokens,
        idle_timeout=LIVE_TIMEOUT_SECONDS,
    )
    with anyio.move_on_after(LIVE_TIMEOUT_SECONDS) as deadline:
        message = await choice.stream_fn(model, context, options, builder)
    if deadline.cancelled_caught:
        return f"no answer in {LIVE_TIMEOUT_SECONDS:.0f} s"
    if message.stop_reason == "error":
        error = message.error_message if isinstance(message.error_message, str) else "unknown error"
        return redact(error, secrets)
    return None


def forced_call_context(cwd: str) -> Context:
    """A real turn's system prompt and tools, and a request a tool call answers."""
    system_prompt, tools = _turn_setting(cwd)
    return Context(system_prompt=system_prompt, messages=[UserMessage(content=_FORCED_CALL)], tools=tools)


async def answers_a_forced_call(choice: ModelChoice, context: Context) -> bool | None:
    """Whether the server answers `tool_choice: "required"` with a tool call (False: with text);
    None when it refuses the request, or says neither in time: nothing is then known."""
    model = choice.model
    call_started = False

    with anyio.move_on_after(LIVE_TIMEOUT_SECONDS) as deadline:

        def seen(event: ProviderEvent) -> None:
            nonlocal call_started
            if isinstance(event, ToolcallStartEvent):
                call_started = True
                deadline.cancel()  # the answer is known: the rest of the call is not needed

        builder = AssistantBuilder(model, emit=seen)
        builder.keep_secret(*request_secrets(choice.api_key, choice.headers))
        options = StreamOptions(
            api_key=choice.api_key,
            headers=choice.headers,
            max_retries=0,
            max_tokens=_FORCED_CALL_TOKENS,
            idle_timeout=LIVE_TIMEOUT_SECONDS,
            tool_choice="required",
        )
        message = await choice.stream_fn(model, context, options, builder)
        if message.stop_reason == "error":
            return None
        if any(isinstance(block, ToolCall) for block in message.content):
            return True
        # Only text says the call was declined (a reasoning model may spend the budget thinking).
        answered_text = any(isinstance(block, TextContent) and block.text.strip() for block in message.content)
        return False if answered_text else None
    return True if call_started else None


async def _declined_call(choice: ModelChoice, where: str) -> Check:
    """The warning for a forced call answered in text: llama.cpp says whether its template renders
    tools, which tells a template that drops them from a model that declines them."""
    declined = f'{where}: the server answered text to a forced tool call (tool_choice "required")'
    base_url = choice.model.base_url or ""
    renders = await anyio.to_thread.run_sync(template_renders_tools, base_url, choice.api_key)
    if renders is False:
        detail = f"{declined}: its chat template renders no tools (GET /props), so the model never calls one"
        return Check("warn", "live request", detail, _TEMPLATE_HINT)
    if renders:
        detail = (
            f"{declined}, though its chat template renders tools: the model itself answers in text "
            "(llama.cpp lets text come before the call it requires), so it may never call one"
        )
        return Check("warn", "live request", detail, _MODEL_HINT)
    detail = f"{declined}, so the model may never call a tool: its chat template may render none"
    return Check("warn", "live request", detail, _TEMPLATE_HINT)


async def probe_server(choice: ModelChoice, cwd: str | None = None) -> Check:
    """One check: the first request of a real turn the server refuses, with its fix; else ok."""
    model = choice.model
    where = f"{model.provider}/{model.id} at {model.base_url}"
    cwd = cwd or os.getcwd()
    probes = real_turn_probes(model, cwd)
    for index, probe in enumerate(probes):
        error = await _send(choice, model, probe.context)
        if error is None:
            continue
        if index == 0:  # not even a plain message: the server, the key or the model id
            return Check("fail", "live request", f"{where}: {error}")
        detail = f"{where}: the server refuses {probe.what}: {error}"
        for fix in probe.fixes:
            changed = fix.change(model, probe.context)
            if changed is not None and await _send(choice, *changed) is None:
                return Check(probe.severity, "live request", detail, fix.advice)
        return Check(probe.severity, "live request", detail, "no compat setting pi-rpc knows makes it pass")
    shapes = [probe.what for probe in probes[1:]]
    if model.api == "openai-completions":  # the one wire pi-rpc says `tool_choice` on
        forced = await answers_a_forced_call(choice, forced_call_context(cwd))
        if forced is False:
            return await _declined_call(choice, where)
        if forced:
            shapes.append("a forced tool call")
    return Check("ok", "live request", f"{where} answered a real turn's requests ({', '.join(shapes)})")

"""A model's `compat` flags (Pi's per-model and per-server capability switches), typed.

`compat` is parsed once, when a model is loaded (built-in catalogue, models.json, `--base-url`),
into the `ModelCompat` the model carries; providers read fields, never a mapping. `None` means
"not said": each provider then applies its own default (the OpenAI Chat Completions provider also
detects defaults from the host). A value of the wrong type is an error at load time, naming the
key; keys pi-rpc does not know (Pi has more flags) are ignored, so one models.json serves both.
On the wire a model's `compat` holds the flags that were said, as before.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class ModelCompat(msgspec.Struct, rename="camel", kw_only=True, frozen=True, omit_defaults=True):
    """Pi's per-model capability flags. Only the flags a model says are sent; absent = the API's default."""

    # Anthropic Messages
    supports_strict_tools: bool | None = None
    force_adaptive_thinking: bool | None = None
    # OpenAI Chat Completions and Responses
    supports_strict_mode: bool | None = None
    supports_developer_role: bool | None = None
    supports_open_ai_grammar_tools: bool | None = msgspec.field(default=None, name="supportsOpenAIGrammarTools")
    supports_max_output_tokens: bool | None = None
    supports_store: bool | None = None
    supports_reasoning_effort: bool | None = None
    supports_usage_in_streaming: bool | None = None
    supports_xhigh: bool | None = None
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] | None = None
    requires_tool_result_name: bool | None = None
    requires_thinking_as_text: bool | None = None
    requires_non_null_assistant_content: bool | None = None
    requires_assistant_after_tool_result: bool | None = None
    requires_tools_with_tool_history: bool | None = None
    thinking_format: Literal["openai", "openrouter", "qwen"] | None = None


NOT_SAID = ModelCompat()


def said_flags(compat: ModelCompat) -> dict[str, Any]:
    """The flags `compat` says (field name -> value), for layering one over another."""
    return {name: value for name in compat.__struct_fields__ if (value := getattr(compat, name)) is not None}


def layered(base: ModelCompat, over: ModelCompat) -> ModelCompat:
    """`over`'s said flags on top of `base` (a model's compat over its provider's, as Pi spreads them)."""
    flags = said_flags(over)
    return msgspec.structs.replace(base, **flags) if flags else base


def said(value: bool | None, default: bool) -> bool:
    """A flag's value, or the provider's default where the model does not say."""
    return default if value is None else value

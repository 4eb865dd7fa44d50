"""A model's `compat` flags (Pi's per-model and per-server capability switches), typed.

Models carry `compat` as the plain mapping users write in models.json (Pi's camelCase keys); this
is the one place that reads it. `None` means "not said": each provider then applies its own
default (the OpenAI Chat Completions provider also detects defaults from the host). A value of the
wrong type is ignored, as if it were not said.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from pi_rpc.ai.types import Model


class ModelCompat(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
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
    thinking_format: Literal["openai", "openrouter", "qwen"] | None = None


def parse_compat(raw: Any) -> ModelCompat:
    if not isinstance(raw, dict):
        return ModelCompat()
    valid: dict[str, Any] = {}
    for key, value in raw.items():
        try:
            msgspec.convert({key: value}, ModelCompat)
        except msgspec.ValidationError:
            continue
        valid[key] = value
    return msgspec.convert(valid, ModelCompat)


def model_compat(model: Model) -> ModelCompat:
    return parse_compat(model.compat)


def said(value: bool | None, default: bool) -> bool:
    """A flag's value, or the provider's default where the model does not say."""
    return default if value is None else value

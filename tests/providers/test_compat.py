"""`compat` is parsed once, when a model is loaded (`pi_rpc/ai/compat.py`), into one typed Struct
that every API reads; on the wire it stays the mapping that was written."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest

from pi_rpc.ai.apis import KnownApi
from pi_rpc.ai.compat import ModelCompat, layered
from pi_rpc.ai.models import get_model
from pi_rpc.ai.providers import anthropic, openai_completions, openai_responses
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.types import Context, Model, UserMessage


def _model(api: KnownApi, compat: dict[str, Any]) -> Model:
    return Model(
        id="m",
        name="m",
        api=api,
        provider="p",
        base_url="http://127.0.0.1:9/v1",
        reasoning=True,
        compat=msgspec.convert(compat, ModelCompat),
    )


def _context() -> Context:
    return Context(system_prompt="Sys", messages=[UserMessage(content="hi")])


def test_pi_camel_case_keys_parse_and_unknown_keys_are_ignored() -> None:
    parsed = msgspec.convert(
        {
            "supportsStrictTools": True,
            "supportsOpenAIGrammarTools": True,
            "maxTokensField": "max_completion_tokens",
            "someFutureFlag": 1,
        },
        ModelCompat,
    )
    assert parsed == ModelCompat(
        supports_strict_tools=True, supports_open_ai_grammar_tools=True, max_tokens_field="max_completion_tokens"
    )


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"maxTokensField": "max_output"}, "$.maxTokensField"),
        ({"supportsDeveloperRole": "yes"}, "$.supportsDeveloperRole"),
        ({"thinkingFormat": 3}, "$.thinkingFormat"),
    ],
)
def test_a_value_of_the_wrong_type_fails_at_load_naming_the_key(raw: dict[str, Any], where: str) -> None:
    """Before, a wrong value was dropped silently on every request; now loading the model fails."""
    with pytest.raises(msgspec.ValidationError, match=re.escape(f"at `{where}`")):
        msgspec.convert(raw, ModelCompat)


def test_parsed_flags_reach_every_api() -> None:
    options = StreamOptions(max_tokens=100)
    said: dict[str, Any] = {"maxTokensField": "max_completion_tokens", "supportsDeveloperRole": True}
    body = openai_completions.build_request_body(_model("openai-completions", said), _context(), options)
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body
    assert body["messages"][0] == {"role": "developer", "content": "Sys"}
    body = openai_responses.build_request_body(
        _model("openai-responses", {"supportsDeveloperRole": False}), _context(), options
    )
    assert body["input"][0] == {"role": "system", "content": "Sys"}
    assert anthropic.supports_strict_tools(_model("anthropic-messages", {"supportsStrictTools": True}))
    assert not anthropic.supports_strict_tools(_model("anthropic-messages", {}))


def test_a_model_flag_is_layered_over_its_provider_flags() -> None:
    provider = ModelCompat(supports_developer_role=False, supports_store=True)
    assert layered(provider, ModelCompat(supports_store=False, supports_xhigh=True)) == ModelCompat(
        supports_developer_role=False, supports_store=False, supports_xhigh=True
    )
    assert layered(provider, ModelCompat()) is provider


@pytest.mark.parametrize(
    "raw",
    [
        {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        {"supportsStrictMode": True, "supportsOpenAIGrammarTools": False},
        {"maxTokensField": "max_tokens", "thinkingFormat": "qwen", "requiresToolResultName": True},
    ],
)
def test_on_the_wire_compat_is_the_mapping_that_was_written(raw: dict[str, Any]) -> None:
    """`models/list` and `model/set` send `Model`: its `compat` JSON is unchanged by the typing."""
    model = _model("openai-completions", raw)
    assert json.loads(msgspec.json.encode(model))["compat"] == raw
    assert "compat" not in json.loads(msgspec.json.encode(Model(id="m", name="m", api="faux", provider="p")))


def test_built_in_models_carry_their_flags_typed() -> None:
    sonnet = get_model("anthropic", "claude-sonnet-4-5")
    assert sonnet is not None and sonnet.compat == ModelCompat(supports_strict_tools=True)
    assert json.loads(msgspec.json.encode(sonnet))["compat"] == {"supportsStrictTools": True}

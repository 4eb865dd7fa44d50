"""`compat` is read in one place (`pi_rpc/ai/compat.py`) into one typed Struct, for every API."""

from __future__ import annotations

from typing import Any

from pi_rpc.ai.compat import ModelCompat, parse_compat
from pi_rpc.ai.providers import anthropic, openai_completions, openai_responses
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.types import Context, Model, UserMessage


def _model(api: str, compat: dict[str, Any]) -> Model:
    return Model(
        id="m", name="m", api=api, provider="p", base_url="http://127.0.0.1:9/v1", reasoning=True, compat=compat
    )


def _context() -> Context:
    return Context(system_prompt="Sys", messages=[UserMessage(content="hi")])


def test_pi_camel_case_keys_parse_and_unknown_keys_are_ignored() -> None:
    parsed = parse_compat(
        {
            "supportsStrictTools": True,
            "supportsOpenAIGrammarTools": True,
            "maxTokensField": "max_completion_tokens",
            "someFutureFlag": 1,
        }
    )
    assert parsed == ModelCompat(
        supports_strict_tools=True, supports_open_ai_grammar_tools=True, max_tokens_field="max_completion_tokens"
    )
    assert parse_compat(None) == ModelCompat()


def test_a_value_of_the_wrong_type_is_ignored_by_every_api() -> None:
    """Before, Chat Completions copied any value: a misspelt field name went into the body."""
    options = StreamOptions(max_tokens=100)
    bad: dict[str, Any] = {"maxTokensField": "max_output", "supportsDeveloperRole": "yes"}
    body = openai_completions.build_request_body(_model("openai-completions", bad), _context(), options)
    assert body["max_tokens"] == 100 and "max_output" not in body
    assert body["messages"][0] == {"role": "system", "content": "Sys"}
    body = openai_responses.build_request_body(_model("openai-responses", bad), _context(), options)
    assert body["input"][0] == {"role": "developer", "content": "Sys"}  # the Responses default
    assert not anthropic.supports_strict_tools(_model("anthropic-messages", {"supportsStrictTools": "yes"}))

"""The model catalogue, thinking-level mapping, and models.json configuration
(docs/CONFIGURATION.md, "`models.json`: your own providers and models")."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pi_rpc.ai.compat import ModelCompat
from pi_rpc.ai.config import ConfigError, ModelRegistry, config_paths, resolve_config_value
from pi_rpc.ai.models import (
    adjust_max_tokens_for_thinking,
    anthropic_effort,
    anthropic_thinking_budget,
    clamp_thinking_level,
    get_model,
    list_models,
    openai_reasoning_effort,
    supported_thinking_levels,
)
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import Model, Usage

SECRET = "sk-test-SECRET-value-1234"


def _model(provider: str, model_id: str) -> Model:
    model = get_model(provider, model_id)
    assert model is not None, f"{provider}/{model_id} missing from the catalogue"
    return model


# --- catalogue ------------------------------------------------------------------------------------


def test_catalogue_has_current_anthropic_and_openai_models_with_limits_and_prices() -> None:
    models = list_models()
    assert len(models) >= 12
    assert {m.provider for m in models} == {"anthropic", "openai"}
    assert len({(m.provider, m.id) for m in models}) == len(models)
    for model in models:
        assert model.context_window > model.max_tokens > 0
        assert model.cost.input > 0 and model.cost.output > model.cost.input
        assert "text" in model.input
        assert model.api == ("anthropic-messages" if model.provider == "anthropic" else "openai-responses")
    sonnet = _model("anthropic", "claude-sonnet-4-5")
    assert (sonnet.context_window, sonnet.max_tokens, sonnet.reasoning) == (200_000, 64_000, True)
    assert (sonnet.cost.input, sonnet.cost.output, sonnet.cost.cache_read, sonnet.cost.cache_write) == (
        3,
        15,
        0.3,
        3.75,
    )
    assert sonnet.input == ["text", "image"]
    assert _model("openai", "gpt-4.1").reasoning is False


def test_get_model_returns_an_independent_copy() -> None:
    model = _model("openai", "gpt-5.1")
    model.context_window = 1
    assert _model("openai", "gpt-5.1").context_window == 400_000
    assert get_model("openai", "no-such-model") is None
    assert get_model("nobody", "gpt-5.1") is None


def test_catalogue_round_trips_as_camel_case_json() -> None:
    model = _model("openai", "gpt-5.2")
    wire = msgspec.json.decode(msgspec.json.encode(model))
    assert wire["contextWindow"] == 400_000 and wire["maxTokens"] == 128_000
    assert wire["cost"]["cacheRead"] == 0.175
    assert msgspec.convert(wire, Model) == model


def test_usage_is_priced_per_turn_from_the_model_costs() -> None:
    """Per-million-token prices turn into dollars on the turn's usage."""
    builder = AssistantBuilder(_model("anthropic", "claude-sonnet-4-5"))
    builder.set_usage(Usage(input=1_000_000, output=100_000, cache_read=2_000_000, cache_write=10_000))
    cost = builder.message.usage.cost
    assert cost.input == pytest.approx(3.0)
    assert cost.output == pytest.approx(1.5)
    assert cost.cache_read == pytest.approx(0.6)
    assert cost.cache_write == pytest.approx(0.0375)
    assert cost.total == pytest.approx(5.1375)
    assert builder.message.usage.total_tokens == 3_110_000


# --- thinking levels ----------------------------------------------------------------------------


def test_supported_levels_follow_the_level_map() -> None:
    assert supported_thinking_levels(_model("openai", "gpt-4.1")) == ["off"]
    assert supported_thinking_levels(_model("anthropic", "claude-sonnet-4-5")) == [
        "off",
        "minimal",
        "low",
        "medium",
        "high",
    ]
    assert supported_thinking_levels(_model("openai", "gpt-5.2")) == ["off", "low", "medium", "high", "xhigh"]
    assert supported_thinking_levels(_model("openai", "o3")) == ["low", "medium", "high"]


def test_clamp_looks_upward_first_then_downward() -> None:
    """Pi clampThinkingLevel: nearest supported level, searching upward first."""
    assert clamp_thinking_level(_model("openai", "gpt-5.1"), "minimal") == "low"
    assert clamp_thinking_level(_model("anthropic", "claude-sonnet-4-5"), "xhigh") == "high"
    assert clamp_thinking_level(_model("openai", "o3"), "off") == "low"
    assert clamp_thinking_level(_model("openai", "gpt-4.1"), "high") == "off"


@pytest.mark.parametrize(
    ("model_id", "level", "effort"),
    [
        ("gpt-5.1", "off", "none"),
        ("gpt-5.1", "minimal", "low"),
        ("gpt-5.1", "medium", "medium"),
        ("gpt-5.1", "xhigh", "high"),
        ("gpt-5.2", "xhigh", "xhigh"),
        ("gpt-5", "off", "minimal"),
        ("gpt-5", "minimal", "minimal"),
        ("o3", "off", "low"),
        ("gpt-4.1", "high", None),
    ],
)
def test_openai_reasoning_effort(model_id: str, level: Any, effort: str | None) -> None:
    assert openai_reasoning_effort(_model("openai", model_id), level) == effort


def test_anthropic_thinking_budgets_and_effort() -> None:
    assert [anthropic_thinking_budget(level) for level in ("off", "minimal", "low", "medium", "high", "xhigh")] == [
        0,
        1024,
        2048,
        8192,
        16384,
        16384,
    ]
    opus = _model("anthropic", "claude-opus-4-6")
    assert anthropic_effort(opus, "xhigh") == "max"
    assert anthropic_effort(opus, "minimal") == "low"
    assert anthropic_effort(opus, "off") is None


def test_max_tokens_make_room_for_thinking() -> None:
    """Pi adjustMaxTokensForThinking: the budget is added under the model ceiling, answer room kept."""
    assert adjust_max_tokens_for_thinking(None, 64_000, "high") == (64_000, 16_384)
    assert adjust_max_tokens_for_thinking(4_000, 64_000, "medium") == (12_192, 8_192)
    assert adjust_max_tokens_for_thinking(4_000, 10_000, "high") == (10_000, 8_976)


# --- models.json ---------------------------------------------------------------------------------


def _write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "models.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return path


OLLAMA = {
    "providers": {
        "ollama": {
            "baseUrl": "http://localhost:11434/v1",
            "api": "openai-completions",
            "apiKey": "ollama",
            "compat": {"supportsDeveloperRole": False},
            "models": [
                {"id": "llama3.1:8b"},
                {
                    "id": "gpt-oss:20b",
                    "name": "GPT OSS",
                    "reasoning": True,
                    "input": ["text", "image"],
                    "contextWindow": 131072,
                    "maxTokens": 32000,
                    "cost": {"input": 0.1, "output": 0.5, "cacheRead": 0, "cacheWrite": 0},
                    "compat": {"supportsReasoningEffort": False},
                    "thinkingLevelMap": {"minimal": None},
                },
            ],
        }
    }
}


def test_pi_minimal_example_loads_with_pi_defaults(tmp_path: Path) -> None:
    """Pi models.md 'Minimal Example': only `id` per model; defaults name=id, 128000/16384, text."""
    registry = ModelRegistry.load(_write(tmp_path, OLLAMA), env={})
    llama = registry.find("ollama", "llama3.1:8b")
    assert llama is not None
    assert (llama.name, llama.api, llama.base_url) == (
        "llama3.1:8b",
        "openai-completions",
        "http://localhost:11434/v1",
    )
    assert (llama.context_window, llama.max_tokens, llama.reasoning, llama.input) == (
        128_000,
        16_384,
        False,
        ["text"],
    )
    assert llama.compat == ModelCompat(supports_developer_role=False)
    oss = registry.find("ollama", "gpt-oss:20b")
    assert oss is not None
    assert (oss.name, oss.context_window, oss.max_tokens, oss.cost.output) == ("GPT OSS", 131072, 32000, 0.5)
    assert oss.compat == ModelCompat(supports_developer_role=False, supports_reasoning_effort=False)
    assert supported_thinking_levels(oss) == ["off", "low", "medium", "high"]
    assert registry.api_key_for(oss) == "ollama"


def test_custom_provider_comes_first_for_the_default_model(tmp_path: Path) -> None:
    registry = ModelRegistry.load(_write(tmp_path, OLLAMA), env={"ANTHROPIC_API_KEY": SECRET})
    default = registry.default_model()
    assert default is not None and (default.provider, default.id) == ("ollama", "llama3.1:8b")


def test_default_model_needs_a_key(tmp_path: Path) -> None:
    """No key anywhere -> None (the daemon then uses the scripted model)."""
    registry = ModelRegistry.load(_write(tmp_path, {"providers": {}}), env={})
    assert registry.default_model() is None
    assert registry.available() == []


def test_default_model_from_environment_keys(tmp_path: Path) -> None:
    """ANTHROPIC_API_KEY / OPENAI_API_KEY make a provider usable; Anthropic comes before OpenAI."""
    registry = ModelRegistry.load(_write(tmp_path, {"providers": {}}), env={"OPENAI_API_KEY": SECRET})
    default = registry.default_model()
    assert default is not None and (default.provider, default.id) == ("openai", "gpt-5.4")
    assert registry.api_key_for(default) == SECRET
    assert {m.provider for m in registry.available()} == {"openai"}
    registry = ModelRegistry.load(
        _write(tmp_path, {"providers": {}}), env={"OPENAI_API_KEY": SECRET, "ANTHROPIC_API_KEY": SECRET}
    )
    default = registry.default_model()
    assert default is not None and default.id == "claude-sonnet-4-6"
    assert ModelRegistry(list_models(), env={"OPENAI_API_KEY": ""}, provider_order=["openai"]).default_model() is None


def test_base_url_overrides_from_environment_and_file(tmp_path: Path) -> None:
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/anthropic", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    registry = ModelRegistry.load(_write(tmp_path, {"providers": {}}), env=env)
    assert {m.base_url for m in registry.all() if m.provider == "anthropic"} == {"http://127.0.0.1:9/anthropic"}
    assert {m.base_url for m in registry.all() if m.provider == "openai"} == {"http://127.0.0.1:9/v1"}
    # Pi models.md 'Overriding Built-in Providers': the file's baseUrl routes every built-in model.
    path = _write(tmp_path, {"providers": {"anthropic": {"baseUrl": "https://proxy.example/v1"}}})
    registry = ModelRegistry.load(path, env=env)
    assert {m.base_url for m in registry.all() if m.provider == "anthropic"} == {"https://proxy.example/v1"}
    assert len([m for m in registry.all() if m.provider == "anthropic"]) == 6


def test_custom_models_upsert_into_a_builtin_provider_and_overrides_apply(tmp_path: Path) -> None:
    """Pi models.md merge semantics and `modelOverrides`."""
    path = _write(
        tmp_path,
        {
            "providers": {
                "openai": {
                    "models": [{"id": "gpt-5.1", "name": "Mine", "contextWindow": 1000}, {"id": "gpt-new"}],
                    "modelOverrides": {
                        "gpt-5.2": {"contextWindow": 1_050_000, "cost": {"input": 9}},
                        "unknown": {"name": "x"},
                    },
                }
            }
        },
    )
    registry = ModelRegistry.load(path, env={})
    mine = registry.find("openai", "gpt-5.1")
    assert mine is not None and (mine.name, mine.context_window, mine.api) == (
        "Mine",
        1000,
        "openai-responses",
    )
    added = registry.find("openai", "gpt-new")
    assert added is not None and added.base_url == "https://api.openai.com/v1"
    overridden = registry.find("openai", "gpt-5.2")
    assert overridden is not None
    assert (overridden.context_window, overridden.cost.input, overridden.cost.output) == (1_050_000, 9, 14)
    assert len([m for m in registry.all() if m.provider == "openai"]) == 11


def test_api_key_forms(tmp_path: Path) -> None:
    """Literal, `$VAR` / `${VAR}` interpolation (Pi 1.6.0) and a bare variable name (Pi OLDER)."""
    env = {"MY_KEY": SECRET, "PREFIX": "a", "SUFFIX": "b"}
    assert resolve_config_value("sk-literal", env) == "sk-literal"
    assert resolve_config_value("$MY_KEY", env) == SECRET
    assert resolve_config_value("${PREFIX}_${SUFFIX}", env) == "a_b"
    assert resolve_config_value("MY_KEY", env) == SECRET
    assert resolve_config_value("NOT_SET_ANYWHERE", env) == "NOT_SET_ANYWHERE"
    assert resolve_config_value("$MISSING", env) is None
    assert resolve_config_value("$$literal", env) == "$literal"
    assert resolve_config_value("$!bang", env) == "!bang"


def test_file_key_beats_environment_key(tmp_path: Path) -> None:
    path = _write(tmp_path, {"providers": {"anthropic": {"apiKey": "$PROXY_KEY"}}})
    registry = ModelRegistry.load(path, env={"ANTHROPIC_API_KEY": "env-key", "PROXY_KEY": SECRET})
    model = registry.find("anthropic", "claude-haiku-4-5")
    assert model is not None and registry.api_key_for(model) == SECRET


def test_shell_command_keys_are_never_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A `!command` apiKey is not executed; the provider simply has no key, and the log says why
    without echoing the command."""
    marker = tmp_path / "ran"
    path = _write(
        tmp_path,
        {
            "providers": {
                "custom": {
                    "baseUrl": "http://127.0.0.1:1/v1",
                    "api": "openai-responses",
                    "apiKey": f"!touch {marker}",
                    "headers": {"x-secret": f"!touch {marker}"},
                    "models": [{"id": "m"}],
                }
            }
        },
    )
    registry = ModelRegistry.load(path, env={})
    model = registry.find("custom", "m")
    assert model is not None
    with caplog.at_level(logging.WARNING):
        assert registry.api_key_for(model) is None
        assert registry.headers_for(model) == {}
    assert not marker.exists()
    assert registry.available() == []
    assert "shell-command apiKey" in caplog.text
    assert str(marker) not in caplog.text


def test_headers_resolve_per_request_and_never_enter_the_model(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "providers": {
                "proxy": {
                    "baseUrl": "http://127.0.0.1:1",
                    "api": "anthropic-messages",
                    "apiKey": "$PROXY_KEY",
                    "authHeader": True,
                    "headers": {"x-portkey-api-key": "$PORTKEY", "x-static": "yes"},
                    "models": [{"id": "claude-x", "headers": {"x-model": "m1"}}],
                }
            }
        },
    )
    registry = ModelRegistry.load(path, env={"PROXY_KEY": SECRET, "PORTKEY": "pk-1"})
    model = registry.find("proxy", "claude-x")
    assert model is not None
    assert registry.headers_for(model) == {
        "x-portkey-api-key": "pk-1",
        "x-static": "yes",
        "x-model": "m1",
        "Authorization": f"Bearer {SECRET}",
    }
    assert SECRET not in msgspec.json.encode(registry.all()).decode()
    assert SECRET not in repr(registry)


def test_unsupported_apis_are_skipped_not_fatal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A Pi user's file may name APIs pi-rpc does not speak (google-generative-ai); the scripted
    model's API is no server's, so a file cannot name it either."""
    path = _write(
        tmp_path,
        {
            "providers": {
                "g": {
                    "baseUrl": "https://generativelanguage.googleapis.com/v1beta",
                    "api": "google-generative-ai",
                    "apiKey": "$GEMINI_API_KEY",
                    "models": [
                        {"id": "gemma"},
                        {"id": "via-openai", "api": "openai-completions"},
                        {"id": "scripted", "api": "faux"},
                    ],
                }
            }
        },
    )
    with caplog.at_level(logging.WARNING, logger="pi_rpc.ai.config"):
        registry = ModelRegistry.load(path, env={})
    assert registry.find("g", "gemma") is None
    assert registry.find("g", "scripted") is None
    assert registry.find("g", "via-openai") is not None
    assert [record.getMessage() for record in caplog.records] == [
        f"{path}: providers.g.models[0]: model 'gemma' uses api 'google-generative-ai', which pi-rpc does not "
        "support; skipped",
        f"{path}: providers.g.models[2]: model 'scripted' uses api 'faux', which pi-rpc does not support; skipped",
    ]


# --- malformed files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ('{"providers": {"p": {"apiKey": "' + SECRET + '",}}}', "JSON is malformed"),
        ("[1, 2]", "the top level must be an object"),
        ({"providers": []}, '"providers" must be an object'),
        (
            {"providers": {"p": {"apiKey": SECRET, "models": [{"id": "m", "contextWindow": "big"}]}}},
            "Expected `int`, got `str` - at `providers.p.models[0].contextWindow`",
        ),
        (
            {"providers": {"p": {"apiKey": SECRET, "models": [{"name": "no id"}]}}},
            "Object missing required field `id` - at `providers.p.models[0]`",
        ),
        ({"providers": {"p": "x"}}, "Expected `object`, got `str` - at `providers.p`"),
        (
            {"providers": {"p": {"apiKey": SECRET, "models": [{"id": "m", "compat": {"supportsStore": "yes"}}]}}},
            "Expected `bool | null`, got `str` - at `providers.p.models[0].compat.supportsStore`",
        ),
        (
            {"providers": {"p": {"apiKey": SECRET, "compat": {"maxTokensField": SECRET}}}},
            "Not one of the values this key takes - at `providers.p.compat.maxTokensField`",
        ),
        (
            {"providers": {"anthropic": {"modelOverrides": {"claude-sonnet-4-5": {"compat": []}}}}},
            "Expected `object`, got `array` - at `providers.anthropic.modelOverrides[...].compat`",
        ),
        (
            {"providers": {"p": {"apiKey": SECRET, "models": [{"id": "m", "input": [SECRET]}]}}},
            '`providers.p.models[0].input` may only contain "text" and "image"',
        ),
        (
            {"providers": {"p": {"apiKey": SECRET, "api": "openai-completions", "models": [{"id": "m"}]}}},
            'providers.p.models[0]: model "m" has no "baseUrl" (set it on the model or its provider)',
        ),
        (
            {"providers": {"p": {"apiKey": SECRET, "baseUrl": "http://x", "models": [{"id": "m"}]}}},
            'providers.p.models[0]: model "m" has no "api" (set it on the model or its provider)',
        ),
    ],
)
def test_malformed_file_errors_name_the_file_and_the_problem_but_no_key(
    tmp_path: Path, document: Any, expected: str
) -> None:
    path = _write(tmp_path, document)
    with pytest.raises(ConfigError) as caught:
        ModelRegistry.load(path, env={})
    message = str(caught.value)
    assert str(path) in message
    assert expected in message
    assert SECRET not in message


def test_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read models config"):
        ModelRegistry.load(tmp_path, env={})  # a directory


def test_config_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """platformdirs' user config folder first, then Pi's ~/.pi/agent/models.json."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    ours, pis = config_paths()
    assert pis == tmp_path / ".pi" / "agent" / "models.json"
    assert ours.name == "models.json" and "pi-rpc" in ours.parts
    pis.parent.mkdir(parents=True)
    pis.write_text(json.dumps(OLLAMA))
    assert ModelRegistry.load(env={}).config_path == pis
    ours.parent.mkdir(parents=True)
    ours.write_text(json.dumps({"providers": {}}))
    registry = ModelRegistry.load(env={})
    assert registry.config_path == ours
    assert registry.find("ollama", "llama3.1:8b") is None

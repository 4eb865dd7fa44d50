"""Which key an explicit `--base-url` gets, in process (docs/CONFIGURATION.md, "Which model a daemon
uses"). Only its own provider's
(the URL is that provider's base URL) or the one `--api-key-env` names; never a stray one. And
when a key was withheld, the request's error says so and how to send it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_rpc.ai.apis import ANTHROPIC, OPENAI, KnownApi, endpoint_apis, known_providers
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import Context, UserMessage
from pi_rpc.session.models.choice import ModelSetupError, starting_model


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for known in known_providers().values():
        monkeypatch.delenv(known.key_variable, raising=False)
        monkeypatch.delenv(known.base_url_variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")


def key_for(base_url: str, api: KnownApi, api_key_env: str | None = None) -> str | None:
    choice = starting_model(base_url=base_url, api=api, model_id="m", api_key_env=api_key_env).choice
    assert choice is not None
    return choice.api_key


def test_a_providers_own_url_gets_its_own_key() -> None:
    assert key_for(ANTHROPIC.base_url, "anthropic-messages") == "sk-ant"
    assert key_for(OPENAI.base_url + "/", "openai-completions") == "sk-openai"


# Hosts that are not the built-in providers' (any port, any path) never see their keys.
_hosts = st.sampled_from(["127.0.0.1", "localhost", "api.openai.com.evil.example", "10.0.0.2"])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    host=_hosts,
    port=st.integers(1, 65535),
    path=st.sampled_from(["", "/v1", "/openai/v1"]),
    api=st.sampled_from(endpoint_apis()),
)
def test_any_other_url_gets_no_key(host: str, port: int, path: str, api: KnownApi) -> None:
    assert key_for(f"http://{host}:{port}{path}", api) is None


def test_api_key_env_wins_and_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-mine")
    assert key_for("http://127.0.0.1:8080/v1", "openai-completions", "MY_KEY") == "sk-mine"
    assert key_for(OPENAI.base_url, "openai-completions", "MY_KEY") == "sk-mine"
    with pytest.raises(ModelSetupError, match="--api-key-env NOT_SET"):
        key_for("http://127.0.0.1:8080/v1", "openai-completions", "NOT_SET")


def test_api_key_env_without_base_url_is_refused() -> None:
    with pytest.raises(ModelSetupError, match="--base-url"):
        starting_model(api_key_env="MY_KEY")


@pytest.mark.anyio
async def test_a_withheld_key_is_named_with_how_to_send_it() -> None:
    # ANTHROPIC_API_KEY is set but not sent to another host: "No API key" alone would send the
    # user looking for a key they have.
    choice = starting_model(base_url="http://127.0.0.1:9", api="anthropic-messages", model_id="m").choice
    assert choice is not None and choice.api_key is None
    builder = AssistantBuilder(choice.model, lambda event: None)
    context = Context(system_prompt="", messages=[UserMessage(content="hi")])
    message = await choice.stream_fn(choice.model, context, StreamOptions(api_key=choice.api_key), builder)
    assert message.stop_reason == "error"
    assert message.error_message == (
        "No API key for provider: anthropic. ANTHROPIC_API_KEY is set but was withheld from "
        "http://127.0.0.1:9: a provider's key is sent only to that provider's own URL. "
        "To send it to this server, start pi-rpc with --api-key-env ANTHROPIC_API_KEY."
    )


@pytest.mark.anyio
async def test_with_no_key_variable_set_the_message_stays_pis(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    choice = starting_model(base_url="http://127.0.0.1:9", api="anthropic-messages", model_id="m").choice
    assert choice is not None
    builder = AssistantBuilder(choice.model, lambda event: None)
    context = Context(system_prompt="", messages=[UserMessage(content="hi")])
    message = await choice.stream_fn(choice.model, context, StreamOptions(), builder)
    assert message.error_message == "No API key for provider: anthropic"

"""Each wire API is declared once (`pi_rpc/ai/apis.py`) and every list of APIs is read from that
declaration: adding an API is one `ApiDeclaration` and its provider module, nothing else.

The proof registers a made-up API whose provider module is this test module, and finds it in the
registry, in what `models.json` may name, in the `--api` choices of the daemon and of `pi-rpc
doctor`, in the model a bare `--base-url` starts on, and in the known providers' keys."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import MappingProxyType
from typing import cast, get_args

import pytest

from pi_rpc import cli
from pi_rpc.ai import apis
from pi_rpc.ai.apis import API_DECLARATIONS, ApiDeclaration, KnownApi, KnownProvider, endpoint_apis
from pi_rpc.ai.config import ModelRegistry, no_model_message
from pi_rpc.ai.provider import Provider, StreamOptions
from pi_rpc.ai.registry import get_stream_fn, load_provider
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AssistantMessage, Context, Model
from pi_rpc.commands import doctor
from pi_rpc.modes.acp.agent import auth_methods
from pi_rpc.session.models.choice import ModelSetupError, starting_model
from pi_rpc.session.storage.recorded_settings import usable

pytestmark = pytest.mark.anyio

FAKE_API = cast(KnownApi, "fake-chat")  # not in KnownApi: only this test declares it
FAKECO = KnownProvider("fakeco", "FakeCo", "http://127.0.0.1:9/v1", "FAKECO_API_KEY", "FAKECO_BASE_URL")
FAKE = ApiDeclaration(FAKE_API, __name__, "optional", FAKECO, lists_models=False)


async def _stream(
    model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
) -> AssistantMessage:
    return builder.finish()


# This module is the made-up API's provider module: the registry loads this.
PROVIDER = Provider(api=FAKE_API, stream=_stream)


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(apis, "API_DECLARATIONS", MappingProxyType({**API_DECLARATIONS, FAKE_API: FAKE}))
    for name in ("PI_CODING_AGENT_DIR", FAKECO.key_variable, FAKECO.base_url_variable):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))


def test_every_known_api_is_declared_under_its_own_name() -> None:
    assert list(API_DECLARATIONS) == list(get_args(KnownApi))
    assert all(name == declaration.name for name, declaration in API_DECLARATIONS.items())


def test_the_lists_of_apis_are_todays() -> None:
    """What a user can name is unchanged by reading it from the declarations."""
    assert endpoint_apis() == ["anthropic-messages", "openai-completions", "openai-responses"]
    assert _choices(cli.build_parser()) == _choices(doctor.build_parser()) == endpoint_apis()
    assert [(known.name, known.key_variable) for known in apis.known_providers().values()] == [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
    ]
    assert [api for api, declaration in API_DECLARATIONS.items() if declaration.key_optional] == [
        "faux",
        "openai-completions",
    ]


@pytest.mark.usefixtures("fake_api")
async def test_a_declared_api_is_streamed_by_its_module() -> None:
    assert load_provider("fake-chat") is PROVIDER
    model = Model(id="m", name="m", api=FAKE_API, provider="fakeco")
    message = await get_stream_fn("fake-chat")(
        model, Context(system_prompt="", messages=[]), StreamOptions(), AssistantBuilder(model)
    )
    assert (message.api, message.stop_reason) == ("fake-chat", "stop")


@pytest.mark.usefixtures("fake_api")
def test_a_declared_api_may_be_named_on_the_command_lines() -> None:
    assert cli.build_parser().parse_args(["--api", "fake-chat"]).api == "fake-chat"
    assert doctor.build_parser().parse_args(["--live", "--api", "fake-chat"]).api == "fake-chat"


@pytest.mark.usefixtures("fake_api")
def test_a_declared_api_may_be_named_in_models_json_and_its_provider_key_is_read(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "fakeco": {"baseUrl": "http://127.0.0.1:9/v1", "api": "fake-chat", "models": [{"id": "m1"}]}
                }
            }
        )
    )
    registry = ModelRegistry.load(path, env={FAKECO.key_variable: "sk-fake"})
    model = registry.find("fakeco", "m1")
    assert model is not None and model.api == FAKE_API
    assert registry.api_key_for(model) == "sk-fake"
    assert registry.key_origin("fakeco") == ("FAKECO_API_KEY", True)
    assert "FAKECO_API_KEY" in no_model_message()
    assert any(method.id == "fakeco-api-key" and method.name == "FakeCo API key" for method in auth_methods())


@pytest.mark.usefixtures("fake_api")
def test_a_declared_api_names_a_base_url_model_and_says_whether_it_needs_a_key() -> None:
    choice = starting_model(base_url="http://127.0.0.1:9/v1", api=FAKE_API, model_id="m").choice
    assert choice is not None
    assert (choice.model.api, choice.model.provider, choice.api_key) == ("fake-chat", "fakeco", None)
    assert usable(choice)  # its key is optional
    with pytest.raises(ModelSetupError, match="--base-url with --api fake-chat needs --model"):
        starting_model(base_url="http://127.0.0.1:9/v1", api=FAKE_API)  # it lists no models


def _choices(parser: argparse.ArgumentParser) -> list[str]:
    action = next(action for action in parser._actions if action.dest == "api")
    return list(action.choices or ())

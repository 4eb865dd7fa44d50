"""The provider registry: every declared API's module (`pi_rpc/ai/apis.py`) is loaded on the first
message rather than when a model is chosen (docs/ARCHITECTURE.md, "`pi_rpc/ai/`: the model layer")."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pi_rpc.ai.apis import API_DECLARATIONS, endpoint_apis
from pi_rpc.ai.provider import Provider, StreamOptions
from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.registry import get_stream_fn, load_provider
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import Context

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("api", sorted(API_DECLARATIONS))
def test_each_listed_module_declares_the_api_it_is_listed_under(api: str) -> None:
    provider = load_provider(api)
    assert isinstance(provider, Provider)
    assert provider.api == api
    assert load_provider(api) is provider  # one declaration per module, loaded once


def test_an_unknown_api_is_refused_when_the_model_is_chosen() -> None:
    with pytest.raises(LookupError, match="No provider for api 'made-up'"):
        get_stream_fn("made-up")
    with pytest.raises(LookupError, match="No provider for api 'made-up'"):
        load_provider("made-up")


async def test_the_stream_function_streams_through_its_provider() -> None:
    builder = AssistantBuilder(FAUX_MODEL)
    message = await get_stream_fn("faux")(FAUX_MODEL, Context(system_prompt="", messages=[]), StreamOptions(), builder)
    assert message.stop_reason == "stop"
    assert message.provider == "faux"


_CHOOSE_EVERY_API = f"""
import sys
from pi_rpc.ai.registry import get_stream_fn
for api in {endpoint_apis()!r}:
    get_stream_fn(api)
print(" ".join(sorted(name for name in sys.modules if name.startswith("pi_rpc.ai.providers.") or name == "httpx")))
"""


def test_choosing_a_model_loads_no_provider_module_and_no_httpx() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHOOSE_EVERY_API], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == []

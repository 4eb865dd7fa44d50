"""Which model a session starts on, and how a client switches models.

The order of choice: an explicit script (the scripted model); an explicit endpoint
(`--base-url` + `--api`); an explicit provider/model from the catalogue or models.json; the first
provider with a key in the environment; otherwise the scripted model on the built-in demo script.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib import resources

from pi_rpc.ai.config import ConfigError, ModelRegistry
from pi_rpc.ai.providers.faux import FAUX_MODEL, FauxProvider, ScriptError, load_script
from pi_rpc.ai.registry import get_stream_fn
from pi_rpc.ai.types import Model
from pi_rpc.session.session import ModelChoice
from pi_rpc.tools.tool_env import PROVIDER_KEY_VARS

# Environment variable with the key for each API, for endpoints named only by --base-url.
_API_KEY_ENV = {
    "anthropic-messages": "ANTHROPIC_API_KEY",
    "openai-completions": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}
_DEFAULT_PROVIDER_FOR_API = {
    "anthropic-messages": "anthropic",
    "openai-completions": "openai",
    "openai-responses": "openai",
}


class ModelSetupError(ValueError):
    pass


def demo_script_path() -> str:
    return str(resources.files("pi_rpc.demo").joinpath("script.json"))


def scripted_choice(script_path: str | None = None) -> ModelChoice:
    try:
        script = load_script(script_path or demo_script_path())
    except ScriptError as exc:
        raise ModelSetupError(str(exc)) from exc
    return ModelChoice(model=FAUX_MODEL, stream_fn=FauxProvider(script).stream, scripted=True)


def _registry() -> ModelRegistry:
    try:
        return ModelRegistry.load()
    except ConfigError as exc:
        raise ModelSetupError(str(exc)) from exc


def _choice(registry: ModelRegistry, model: Model) -> ModelChoice:
    return ModelChoice(model=model, stream_fn=get_stream_fn(model.api), api_key=registry.api_key_for(model),
                       headers=registry.headers_for(model))


def choose_model(*, provider: str | None = None, model_id: str | None = None, api: str | None = None,
                 base_url: str | None = None, script: str | None = None) -> ModelChoice:
    if script is not None:
        return scripted_choice(script)
    if base_url is not None:
        api = api or "openai-completions"
        provider = provider or _DEFAULT_PROVIDER_FOR_API[api]
        model = Model(id=model_id or "default", name=model_id or "default", api=api, provider=provider,
                      base_url=base_url.rstrip("/"), input=["text", "image"])
        # A local server may need no key at all: none set means no Authorization header.
        key = os.environ.get(_API_KEY_ENV[api]) or None
        return ModelChoice(model=model, stream_fn=get_stream_fn(api), api_key=key)
    registry = _registry()
    if provider is not None or model_id is not None:
        found = _find(registry, provider, model_id)
        if found is None:
            raise ModelSetupError(f"Model not found: {provider or '*'}/{model_id or '*'}")
        if api is not None and found.api != api:
            found.api = api
        choice = _choice(registry, found)
        if choice.api_key is None and found.api != "openai-completions":
            raise ModelSetupError(f"No API key for provider {found.provider}: set its environment variable "
                                  "(ANTHROPIC_API_KEY, OPENAI_API_KEY) or an apiKey in models.json")
        return choice
    default = registry.default_model()
    if default is not None:
        return _choice(registry, default)
    return scripted_choice()


def provider_key_variables() -> frozenset[str]:
    """Every variable that holds a provider key: the known providers' and those models.json
    reads. Tool processes do not inherit these unless the user opts in."""
    try:
        configured = _registry().key_variable_names()
    except ModelSetupError:
        configured = set()  # the same error stops the daemon at model choice; nothing to add
    return PROVIDER_KEY_VARS | configured


def _find(registry: ModelRegistry, provider: str | None, model_id: str | None) -> Model | None:
    for model in registry.all():
        if (provider is None or model.provider == provider) and (model_id is None or model.id == model_id):
            return model
    return None


def model_resolvers(
    initial: ModelChoice,
) -> tuple[Callable[[], list[Model]], Callable[[str, str], ModelChoice | None]]:
    """(models a client may pick, resolve one) for `models/list` and `model/set`."""

    def available() -> list[Model]:
        try:
            models = _registry().available()
        except ModelSetupError:
            models = []
        if initial.scripted:
            models = [FAUX_MODEL, *models]
        return models

    def resolve(provider: str, model_id: str) -> ModelChoice | None:
        if initial.scripted and provider == FAUX_MODEL.provider and model_id == FAUX_MODEL.id:
            return initial
        if provider == initial.model.provider and model_id == initial.model.id:
            return initial
        try:
            registry = _registry()
        except ModelSetupError:
            return None
        model = registry.find(provider, model_id)
        return _choice(registry, model) if model is not None else None

    return available, resolve

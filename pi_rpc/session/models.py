"""Which model a session starts on, and how a client switches models.

The order of choice: an explicit script (the scripted model); an explicit endpoint
(`--base-url` + `--api`); an explicit provider/model from the catalogue or models.json; the first
provider with a key in the environment; otherwise none. The scripted model is never a silent
fallback: it answers with canned tool calls, which in a user's real project would edit real files.
With no model the daemon still serves, so a client can list models and pick one.

A key goes only to the provider it belongs to: an explicit `--base-url` gets one only from
`--api-key-env NAME`, or when it is the base URL of a configured provider (that provider's key).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from importlib import resources

from pi_rpc.ai.clients import HttpClients
from pi_rpc.ai.config import ConfigError, ModelRegistry
from pi_rpc.ai.models import not_found_hint
from pi_rpc.ai.providers.faux import FAUX_MODEL, FauxProvider, ScriptError, load_script
from pi_rpc.ai.registry import get_stream_fn
from pi_rpc.ai.server_models import ModelListError, list_server_models
from pi_rpc.ai.types import Model
from pi_rpc.session.session import ModelChoice
from pi_rpc.tools.tool_env import PROVIDER_KEY_VARS

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


def _choice(registry: ModelRegistry, model: Model, http: HttpClients | None) -> ModelChoice:
    return ModelChoice(
        model=model,
        stream_fn=get_stream_fn(model.api),
        api_key=registry.api_key_for(model),
        headers=registry.headers_for(model),
        http=http,
    )


def choose_model(
    *,
    provider: str | None = None,
    model_id: str | None = None,
    api: str | None = None,
    base_url: str | None = None,
    script: str | None = None,
    api_key_env: str | None = None,
    http: HttpClients | None = None,
) -> ModelChoice | None:
    """The session's first model; `None` when nothing is configured (no key, no script, no URL).
    Its requests go through `http`, the daemon's pool."""
    if script is not None:
        return scripted_choice(script)
    if base_url is not None:
        choice = _endpoint_choice(base_url, api or "openai-completions", provider, model_id, api_key_env)
        choice.http = http
        return choice
    if api_key_env is not None:
        raise ModelSetupError("--api-key-env names the key for --base-url; give --base-url too")
    registry = _registry()
    if provider is not None or model_id is not None:
        found = _find(registry, provider, model_id)
        if found is None:
            raise ModelSetupError(
                f"Model not found: {provider or '*'}/{model_id or '*'}"
                + not_found_hint(provider, model_id, registry.all(), cli=True)
            )
        if api is not None and found.api != api:
            found.api = api
        choice = _choice(registry, found, http)
        if choice.api_key is None and found.api != "openai-completions":
            raise ModelSetupError(
                f"No API key for provider {found.provider}: set its environment variable "
                "(ANTHROPIC_API_KEY, OPENAI_API_KEY) or an apiKey in models.json"
            )
        return choice
    default = registry.default_model()
    if default is not None:
        return _choice(registry, default, http)
    return None


def _endpoint_choice(
    base_url: str, api: str, provider: str | None, model_id: str | None, api_key_env: str | None
) -> ModelChoice:
    base_url = base_url.rstrip("/")
    key = _endpoint_key(base_url, api, api_key_env)
    if model_id is None:
        model_id = _only_server_model(base_url, api, key)
    model = Model(
        id=model_id,
        name=model_id,
        api=api,
        provider=provider or _DEFAULT_PROVIDER_FOR_API[api],
        base_url=base_url,
        input=["text", "image"],
    )
    # A local server may need no key at all: none means no Authorization header.
    return ModelChoice(model=model, stream_fn=get_stream_fn(api), api_key=key)


def _endpoint_key(base_url: str, api: str, api_key_env: str | None) -> str | None:
    if api_key_env is not None:
        key = os.environ.get(api_key_env)
        if not key:
            raise ModelSetupError(f"--api-key-env {api_key_env}: that environment variable is not set")
        return key
    # The URL of a configured provider (built in, or from models.json) gets that provider's key;
    # any other host gets none, so OPENAI_API_KEY never reaches a server it was not made for.
    registry = _registry()
    for model in registry.all():
        if model.base_url.rstrip("/") == base_url:
            key = registry.api_key_for(model)
            if key is not None:
                return key
    return None


def _only_server_model(base_url: str, api: str, key: str | None) -> str:
    if api == "anthropic-messages":
        raise ModelSetupError("--base-url with --api anthropic-messages needs --model")
    try:
        ids = list_server_models(base_url, key)
    except ModelListError as exc:
        raise ModelSetupError(f"{exc}; name the model with --model") from None
    if len(ids) == 1:
        return ids[0]
    if not ids:
        raise ModelSetupError(f"{base_url}/models lists no model; name one with --model")
    raise ModelSetupError(f"{base_url} serves several models; choose one with --model: {', '.join(ids)}")


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
    initial: ModelChoice | None,
    http: HttpClients | None = None,
) -> tuple[Callable[[], list[Model]], Callable[[str, str], ModelChoice | None]]:
    """(models a client may pick, resolve one) for `models/list` and `model/set`; a model resolved
    reaches its provider through `http`, the daemon's pool."""

    def available() -> list[Model]:
        try:
            models = _registry().available()
        except ModelSetupError:
            models = []
        if initial is not None and initial.scripted:
            models = [FAUX_MODEL, *models]
        return models

    def resolve(provider: str, model_id: str) -> ModelChoice | None:
        if initial is not None and provider == initial.model.provider and model_id == initial.model.id:
            return initial
        try:
            registry = _registry()
        except ModelSetupError:
            return None
        model = registry.find(provider, model_id)
        return _choice(registry, model, http) if model is not None else None

    return available, resolve

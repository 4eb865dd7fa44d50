"""Which model a session starts on, and how a client switches models.

The order of choice: an explicit script (the scripted model); an explicit endpoint
(`--base-url` + `--api`); an explicit provider/model from the catalogue or models.json, named as
Pi names one (`provider/id`, a `:level` suffix, a part of an id: session/models/patterns.py); the first
model of the `--models` scope (settings.json `enabledModels`) for a new session; settings.json
`defaultProvider`/`defaultModel`; the first provider with a key in the environment; otherwise
none. The scripted model is never a silent fallback: it answers with canned tool calls, which in a
user's real project would edit real files.
With no model the daemon still serves, so a client can list models and pick one.

A key goes only to the provider it belongs to: an explicit `--base-url` gets one only from
`--api-key-env NAME`, or when it is the base URL of a configured provider (that provider's key).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from pi_rpc.ai import (
    DEFAULT_ENDPOINT_API,
    DEFAULT_MODEL_IDS,
    ConfigError,
    HttpClients,
    KnownApi,
    Model,
    ModelRegistry,
    ThinkingLevel,
    api_declaration,
    get_stream_fn,
    key_variables,
    not_found_hint,
)
from pi_rpc.session.configuration.config import ModelChoice
from pi_rpc.session.models.patterns import ScopedModel, resolve_cli_model, resolve_model_scope
from pi_rpc.tools import PROVIDER_KEY_VARS

if TYPE_CHECKING:
    from pi_rpc.ai import ServerModel

# The scripted model (ai/providers/faux.py) and the question a server is asked for its models
# (ai/server_models.py) are imported by the start that uses them: most starts use neither.

_log = logging.getLogger(__name__)


class ModelSetupError(ValueError):
    pass


def demo_script_path() -> str:
    from importlib import resources

    return str(resources.files("pi_rpc.demo").joinpath("script.json"))


def scripted_choice(script_path: str | None = None) -> ModelChoice:
    from pi_rpc.ai import FAUX_MODEL, FauxProvider, ScriptError, load_script

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


class StartingModel(msgspec.Struct):
    """The model a daemon starts on, and what the command line said about it."""

    choice: ModelChoice | None
    thinking_level: ThinkingLevel | None = None  # `--model pattern:level`, or the scope's level
    pinned: bool = False  # the command line chose it: a resumed session keeps it
    scope: list[ScopedModel] = msgspec.field(default_factory=list)  # what `cycle_model` walks
    warnings: list[str] = msgspec.field(default_factory=list)


def starting_model(
    *,
    provider: str | None = None,
    model_id: str | None = None,
    api: KnownApi | None = None,
    base_url: str | None = None,
    script: str | None = None,
    api_key_env: str | None = None,
    http: HttpClients | None = None,
    scope_patterns: Sequence[str] = (),
    saved: tuple[str, str] | None = None,
    resuming: bool = False,
) -> StartingModel:
    """The first model in Pi's order (the module's docstring): `saved` is settings.json's
    (defaultProvider, defaultModel); a `resuming` session (one with messages) takes no model from
    the scope, as it goes on with the one it recorded."""
    if script is not None:
        return StartingModel(scripted_choice(script), pinned=True)
    if base_url is not None:
        choice = _endpoint_choice(base_url, api or DEFAULT_ENDPOINT_API, provider, model_id, api_key_env)
        choice.http = http
        return StartingModel(choice, pinned=True)
    if api_key_env is not None:
        raise ModelSetupError("--api-key-env names the key for --base-url; give --base-url too")
    registry = _registry()
    scope, warnings = resolve_model_scope(scope_patterns, registry.available()) if scope_patterns else ([], [])
    if model_id is not None or provider is not None:
        found, level = _named_model(registry, provider, model_id, warnings)
        if api is not None and found.api != api:
            found.api = api
        choice = _choice(registry, found, http)
        if choice.api_key is None and not api_declaration(found.api).key_optional:
            # A custom id's warning says what was taken (often a typo, with the nearest names).
            taken = "".join(f"{warning}. " for warning in warnings if "custom model id" in warning)
            raise ModelSetupError(
                f"{taken}No API key for provider {found.provider}: set its environment variable "
                f"({', '.join(key_variables())}) or an apiKey in models.json"
            )
        return StartingModel(choice, level, True, scope, warnings)
    if scope and not resuming:
        first = next((s for s in scope if saved == (s.model.provider, s.model.id)), scope[0])
        return StartingModel(_choice(registry, first.model, http), first.thinking_level, True, scope, warnings)
    if saved is not None and (model := registry.find(*saved)) is not None:
        choice = _choice(registry, model, http)
        if choice.api_key is not None or api_declaration(model.api).key_optional:
            return StartingModel(choice, scope=scope, warnings=warnings)
        warnings.append(f"settings.json names {saved[0]}/{saved[1]}, whose provider has no key: not used")
    elif saved is not None:
        warnings.append(f"settings.json names {saved[0]}/{saved[1]}, which is no known model: not used")
    default = registry.default_model()
    return StartingModel(None if default is None else _choice(registry, default, http), scope=scope, warnings=warnings)


def _endpoint_choice(
    base_url: str, api: KnownApi, provider: str | None, model_id: str | None, api_key_env: str | None
) -> ModelChoice:
    from pi_rpc.ai import ServerModel, server_model_details

    base_url = base_url.rstrip("/")
    key = _endpoint_key(base_url, api, api_key_env)
    listed = _only_server_model(base_url, api, key) if model_id is None else ServerModel(model_id)
    if model_id is None:
        # The server was asked already, so it is there: its own endpoints say the rest.
        listed = server_model_details(base_url, listed, key)
    model = Model(
        id=listed.id,
        name=listed.id,
        api=api,
        provider=provider or api_declaration(api).provider_name,
        base_url=base_url,
        input=["text", "image"],
    )
    if listed.context_window is not None:
        # What the server says (llama-server's `meta.n_ctx`), not the 128k guess: the output cap
        # and compaction are sized from it.
        model.context_window = listed.context_window
        _log.info("%s: a context window of %d tokens (%s)", listed.id, listed.context_window, listed.context_from)
    if listed.image_input is False:
        model.input = ["text"]  # the server says it has no vision: images become a note, not a 500
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


def _only_server_model(base_url: str, api: str, key: str | None) -> ServerModel:
    from pi_rpc.ai import ModelListError, describe_server_models

    if not api_declaration(api).lists_models:
        raise ModelSetupError(f"--base-url with --api {api} needs --model")
    try:
        listed = describe_server_models(base_url, key)
    except ModelListError as exc:
        raise ModelSetupError(f"{exc}; name the model with --model") from None
    ids = [model.id for model in listed]
    if len(listed) == 1:
        return listed[0]
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


def _named_model(
    registry: ModelRegistry, provider: str | None, model_id: str | None, warnings: list[str]
) -> tuple[Model, ThinkingLevel | None]:
    """`--provider`/`--model` as Pi resolves them, and the level a `:level` suffix names (a
    provider alone: its default model)."""
    models = registry.all()
    if model_id is None:
        own = [m for m in models if m.provider == provider]
        if not own:
            raise ModelSetupError(f"Model not found: {provider}/*" + not_found_hint(provider, None, models, cli=True))
        return next((m for m in own if m.id == DEFAULT_MODEL_IDS.get(own[0].provider)), own[0]), None
    found = resolve_cli_model(provider, model_id, models, DEFAULT_MODEL_IDS)
    if found.model is None:
        raise ModelSetupError(f"{found.error}{not_found_hint(provider, model_id, models, cli=True)}")
    if found.warning:
        # A custom id is often a typo: the nearest names go with the warning.
        custom = not any(m.provider == found.model.provider and m.id == found.model.id for m in models)
        hint = not_found_hint(found.model.provider, found.model.id, models) if custom else ""
        warnings.append(found.warning + hint)
    return found.model, found.thinking_level


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
            from pi_rpc.ai import FAUX_MODEL

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

"""Models configuration: the built-in catalogue merged with the user's `models.json`.

The file has the shape of Pi's `~/.pi/agent/models.json` (`packages/coding-agent/docs/models.md`),
so a Pi user's file works unchanged. It is read from `platformdirs.user_config_dir("pi-rpc")`,
falling back to Pi's own location.

`apiKey` and header values resolve at request time, never at load time, so that no secret is
held in a Model (models travel in events). Accepted forms:
- `"$VAR"` / `"${VAR}"` interpolation (Pi 1.6.0), with `$$` and `$!` escapes;
- the bare name of a set environment variable (Pi OLDER: `"apiKey": "MY_API_KEY"`);
- anything else is a literal.
`"!command"` values are never executed: running shell commands from a config file is not ours to
do. They resolve to nothing and a warning (without the value) is logged.

No message produced here contains a key or header value: errors name the file and the JSON path.
"""

from __future__ import annotations

import copy
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

import msgspec
import platformdirs
from msgspec import UNSET, UnsetType

from pi_rpc.ai.apis import is_endpoint_api, key_variables, known_provider, known_providers
from pi_rpc.ai.compat import ModelCompat, layered
from pi_rpc.ai.json_location import describe_decode_error, line_of_path
from pi_rpc.ai.models import DEFAULT_MODEL_IDS, list_models
from pi_rpc.ai.types import Model, ModelCost, model_compat

_log = logging.getLogger(__name__)


class ConfigError(ValueError):
    """`models.json` is unusable. The message names the file and what is wrong, never a value."""


PI_AGENT_DIR_VARIABLE = "PI_CODING_AGENT_DIR"


def pi_agent_dir() -> Path:
    """Pi's global agent folder: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`."""
    override = os.environ.get(PI_AGENT_DIR_VARIABLE)
    return Path(override).expanduser() if override else Path.home() / ".pi" / "agent"


def agent_config_paths(name: str) -> list[Path]:
    """Where a global config file (`models.json`, `settings.json`) is looked for, in order; the first
    that exists is used. A `PI_CODING_AGENT_DIR` that a Pi client sets comes first, as in Pi."""
    ours = Path(platformdirs.user_config_dir("pi-rpc")) / name
    pi = pi_agent_dir() / name
    return [pi, ours] if os.environ.get(PI_AGENT_DIR_VARIABLE) else [ours, pi]


def config_paths() -> list[Path]:
    """Where `models.json` is looked for, in order; the first that exists is used."""
    return agent_config_paths("models.json")


def no_model_message() -> str:
    """What a user must do when no model is configured: names every place a key can come from."""
    variables = ", ".join(key_variables())
    return (
        f"No model is configured. Set {variables}, or add a provider with its apiKey to "
        f"{config_paths()[0]} (Pi's {config_paths()[1]} is read too), or start pi-rpc with "
        "--base-url URL for a local server; a client can also pick a model with model/set."
    )


# --- the file's shape (only the fields we use; unknown fields are ignored, as in Pi) -------------


class _File(msgspec.Struct, rename="camel", kw_only=True):
    pass


class _Cost(_File, kw_only=True):
    input: float | UnsetType = UNSET
    output: float | UnsetType = UNSET
    cache_read: float | UnsetType = UNSET
    cache_write: float | UnsetType = UNSET


class _ModelFields(_File, kw_only=True):
    name: str | UnsetType = UNSET
    reasoning: bool | UnsetType = UNSET
    # Checked by hand: an enum error would echo the offending value.
    input: list[str] | UnsetType = UNSET
    cost: _Cost | UnsetType = UNSET
    context_window: int | UnsetType = UNSET
    max_tokens: int | UnsetType = UNSET
    headers: dict[str, str] | UnsetType = UNSET
    compat: ModelCompat | UnsetType = UNSET  # a wrong value fails here, with its path and line
    thinking_level_map: dict[str, str | None] | UnsetType = UNSET


class _ModelEntry(_ModelFields, kw_only=True):
    id: str
    api: str | UnsetType = UNSET
    base_url: str | UnsetType = UNSET


class _Provider(_File, kw_only=True):
    base_url: str | UnsetType = UNSET
    api: str | UnsetType = UNSET
    api_key: str | UnsetType = UNSET
    headers: dict[str, str] | UnsetType = UNSET
    auth_header: bool = False
    compat: ModelCompat | UnsetType = UNSET  # a wrong value fails here, with its path and line
    models: list[_ModelEntry] | UnsetType = UNSET
    model_overrides: dict[str, _ModelFields] | UnsetType = UNSET


class _ModelsFile(_File, kw_only=True):
    providers: dict[str, _Provider] = msgspec.field(default_factory=dict)


def _read_file(path: Path) -> _ModelsFile:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read models config {path}: {exc.strerror or exc}") from None
    try:
        document = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise ConfigError(f"Invalid models config {path}, {describe_decode_error(raw, exc)}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"Invalid models config {path}: the top level must be an object")
    providers = document.get("providers", {})
    if not isinstance(providers, dict):
        raise ConfigError(f'Invalid models config {path}: "providers" must be an object')
    parsed = _ModelsFile()
    for name, provider in providers.items():
        # Provider by provider, so the error can name the provider (msgspec elides dict keys).
        try:
            parsed.providers[name] = msgspec.convert(provider, _Provider)
        except msgspec.ValidationError as exc:
            # msgspec names the JSON path and the expected type, never a string value.
            detail = str(exc)
            if detail.startswith("Invalid enum value "):  # msgspec quotes the value: keep it out
                detail = "Not one of the values this key takes" + detail[detail.rfind(" - at `") :]
            detail = (
                detail.replace("`$", f"`providers.{name}")
                if " - at `$" in detail
                else f"{detail} - at `providers.{name}`"
            )
            raise ConfigError(f"Invalid models config {path}{_line_of(raw, detail)}: {detail}") from None
        for index, entry in enumerate(parsed.providers[name].models or ()):
            for kind in entry.input or ():
                if kind not in ("text", "image"):
                    where = f"providers.{name}.models[{index}].input"
                    raise ConfigError(
                        f"Invalid models config {path}{_line_of(raw, f'`{where}`')}: `{where}` "
                        'may only contain "text" and "image"'
                    )
    return parsed


def _line_of(raw: bytes, detail: str) -> str:
    """`, line N` for the JSON path a message names in backticks (after its last ` - at `)."""
    match = re.search(r"`([^`]+)`$", detail)
    line = line_of_path(raw, match.group(1)) if match else None
    return f", line {line}" if line is not None else ""


# --- value resolution ----------------------------------------------------------------------------

_ENV_REF = re.compile(r"\$(\$|!|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def resolve_config_value(value: str, env: Mapping[str, str]) -> str | None:
    """An `apiKey`/header value from models.json; `None` when it cannot be resolved."""
    if value.startswith("!"):
        return None
    if "$" in value:
        missing = False

        def substitute(match: re.Match[str]) -> str:
            nonlocal missing
            token = match.group(1)
            if token in ("$", "!"):
                return token
            name = match.group(2) or match.group(3)
            if name not in env:
                missing = True
                return ""
            return env[name]

        resolved = _ENV_REF.sub(substitute, value)
        return None if missing else resolved
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value) and value in env:
        return env[value]
    return value


def referenced_env_names(value: str, env: Mapping[str, str]) -> set[str]:
    """The environment variables a models.json value reads (the forms `resolve_config_value`
    accepts): `$VAR` / `${VAR}` references, or the value itself when it names a set variable."""
    if value.startswith("!"):
        return set()
    if "$" in value:
        return {
            match.group(2) or match.group(3) for match in _ENV_REF.finditer(value) if match.group(1) not in ("$", "!")
        }
    return {value} if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value) and value in env else set()


# --- the registry --------------------------------------------------------------------------------


class _ProviderAuth(msgspec.Struct):
    """Unresolved key and header templates of one provider. Never logged, never serialised."""

    api_key: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    auth_header: bool = False
    # model id -> that model's own header templates (applied after the provider's)
    model_headers: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)

    def __repr__(self) -> str:  # keep templates that are literal keys out of any debug output
        return "_ProviderAuth(...)"


class ModelRegistry:
    """All models (built-in and configured), and the keys to reach them."""

    def __init__(
        self,
        models: list[Model],
        auth: dict[str, _ProviderAuth] | None = None,
        env: Mapping[str, str] | None = None,
        provider_order: list[str] | None = None,
        config_path: Path | None = None,
        assumed_context: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        self._models = models
        # (provider, id) of the models.json models that give no `contextWindow` (128k assumed).
        self._assumed_context = assumed_context
        self._auth = auth or {}
        self._env = os.environ if env is None else env
        self._order = provider_order or []
        self.config_path = config_path

    @classmethod
    def load(cls, path: Path | None = None, env: Mapping[str, str] | None = None) -> ModelRegistry:
        """Built-ins plus the first `models.json` found (or `path`); raises `ConfigError`."""
        env = os.environ if env is None else env
        if path is None:
            path = next((candidate for candidate in config_paths() if candidate.is_file()), None)
        config = _read_file(path) if path is not None else _ModelsFile()
        models, auth, order, assumed = _merge(config, env, path)
        return cls(models, auth, env, order, path, assumed)

    def context_window_from(self, model: Model) -> str:
        """Where `model`'s context window came from: "built-in", "models.json", or "assumed" (a
        models.json model that gives none: the 128k default)."""
        if (model.provider, model.id) in self._assumed_context:
            return "assumed"
        builtin = any(m.provider == model.provider and m.id == model.id for m in list_models())
        return "built-in" if builtin else "models.json"

    # --- lookup ---------------------------------------------------------------------------------

    def find(self, provider: str, model_id: str) -> Model | None:
        for model in self._models:
            if model.provider == provider and model.id == model_id:
                return copy.deepcopy(model)
        return None

    def all(self) -> list[Model]:
        return [copy.deepcopy(model) for model in self._models]

    def available(self) -> list[Model]:
        """Models whose provider has a key right now."""
        return [copy.deepcopy(model) for model in self._models if self.api_key_for(model) is not None]

    def default_model(self) -> Model | None:
        """The first provider with a key (configured providers first, then Anthropic, OpenAI):
        its default model. `None` when no provider has a key."""
        for provider in self._order:
            models = [model for model in self._models if model.provider == provider]
            if not models or self.api_key_for(models[0]) is None:
                continue
            preferred = DEFAULT_MODEL_IDS.get(provider)
            chosen = next((model for model in models if model.id == preferred), models[0])
            return copy.deepcopy(chosen)
        return None

    # --- credentials ----------------------------------------------------------------------------

    def api_key_for(self, model: Model) -> str | None:
        """The key for `model`'s provider, resolved now; `None` when there is none."""
        auth = self._auth.get(model.provider)
        if auth is not None and auth.api_key is not None:
            if auth.api_key.startswith("!"):
                _log.warning(
                    "models.json: provider %r uses a shell-command apiKey, which pi-rpc "
                    "does not run; set the key through an environment variable",
                    model.provider,
                )
            return resolve_config_value(auth.api_key, self._env) or None
        known = known_provider(model.provider)
        if known is not None:
            return self._env.get(known.key_variable) or None
        return None

    def headers_for(self, model: Model) -> dict[str, str]:
        """Configured request headers for `model`, resolved now (pass as `StreamOptions.headers`).
        Unresolvable values are left out."""
        auth = self._auth.get(model.provider)
        if auth is None:
            return {}
        headers: dict[str, str] = {}
        templates = {**auth.headers, **auth.model_headers.get(model.id, {})}
        for name, template in templates.items():
            value = resolve_config_value(template, self._env)
            if value is not None:
                headers[name] = value
        if auth.auth_header:
            key = self.api_key_for(model)
            if key:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def key_origin(self, provider: str) -> tuple[str, bool]:
        """Where `provider`'s key comes from, in words that never contain the key, and whether it
        resolves now (for `pi-rpc models` and `pi-rpc doctor`)."""
        auth = self._auth.get(provider)
        if auth is not None and auth.api_key is not None:
            template = auth.api_key
            if template.startswith("!"):
                return "models.json apiKey is a shell command, which pi-rpc does not run", False
            names = sorted(referenced_env_names(template, self._env))
            if "$" in template:
                missing = [name for name in names if name not in self._env]
                if missing:
                    return f"models.json apiKey reads {', '.join(missing)}, which is not set", False
                return f"{', '.join(names)} (models.json apiKey)", True
            if names:
                return f"{names[0]} (models.json apiKey)", True
            if re.fullmatch(r"[A-Z][A-Z0-9_]*_(KEY|TOKEN)", template):
                # Pi's older form names a variable bare; unset, it would be sent as a literal key.
                return f"models.json apiKey names {template}, which is not set", False
            return "written in models.json", True
        known = known_provider(provider)
        if known is not None:
            is_set = bool(self._env.get(known.key_variable))
            return (known.key_variable if is_set else f"{known.key_variable} is not set"), is_set
        return "no apiKey in models.json", False

    def key_variable_names(self) -> set[str]:
        """Every environment variable that a configured `apiKey` or header value reads: these hold
        credentials, which tool processes must not inherit (pi_rpc/tools/tool_env.py)."""
        names: set[str] = set()
        for auth in self._auth.values():
            templates = [auth.api_key or "", *auth.headers.values()]
            templates += [value for headers in auth.model_headers.values() for value in headers.values()]
            for template in templates:
                names |= referenced_env_names(template, self._env)
        return names

    def __repr__(self) -> str:
        return f"ModelRegistry({len(self._models)} models, config={self.config_path})"


# --- merging -------------------------------------------------------------------------------------


def _merge(
    config: _ModelsFile, env: Mapping[str, str], path: Path | None
) -> tuple[list[Model], dict[str, _ProviderAuth], list[str], frozenset[tuple[str, str]]]:
    where = str(path) if path is not None else "models config"
    models = list_models()
    for known in known_providers().values():
        override = env.get(known.base_url_variable)
        if override:
            for builtin in models:
                if builtin.provider == known.name:
                    builtin.base_url = override
    builtin_providers = list(dict.fromkeys(model.provider for model in models))
    auth: dict[str, _ProviderAuth] = {}
    configured: list[str] = []
    assumed: set[tuple[str, str]] = set()
    for name, provider in config.providers.items():
        auth[name] = _ProviderAuth(
            api_key=provider.api_key if isinstance(provider.api_key, str) else None,
            headers=dict(provider.headers) if isinstance(provider.headers, dict) else {},
            auth_header=provider.auth_header,
        )
        is_builtin = name in builtin_providers
        if is_builtin:
            _apply_provider_overrides(models, name, provider, auth[name])
        entries = provider.models if isinstance(provider.models, list) else []
        for index, entry in enumerate(entries):
            model = _custom_model(
                name, provider, entry, is_builtin, models, f"{where}: providers.{name}.models[{index}]"
            )
            if model is None:
                continue
            if isinstance(entry.headers, dict):
                auth[name].model_headers[model.id] = dict(entry.headers)
            models = [m for m in models if not (m.provider == name and m.id == model.id)] + [model]
            if isinstance(entry.context_window, int):
                assumed.discard((name, model.id))
            else:
                assumed.add((name, model.id))
        if entries:
            configured.append(name)
    order = [name for name in configured if name not in builtin_providers]
    order += [name for name in builtin_providers]
    return models, auth, order, frozenset(assumed)


def _apply_provider_overrides(models: list[Model], name: str, provider: _Provider, auth: _ProviderAuth) -> None:
    overrides = provider.model_overrides if isinstance(provider.model_overrides, dict) else {}
    for model in models:
        if model.provider != name:
            continue
        if isinstance(provider.base_url, str):
            model.base_url = provider.base_url
        if isinstance(provider.compat, ModelCompat):
            model.compat = layered(model_compat(model), provider.compat)
        fields = overrides.get(model.id)
        if fields is not None:
            _apply_fields(model, fields)
            if isinstance(fields.headers, dict):
                auth.model_headers[model.id] = dict(fields.headers)


def _custom_model(
    provider_name: str,
    provider: _Provider,
    entry: _ModelEntry,
    is_builtin: bool,
    models: list[Model],
    where: str,
) -> Model | None:
    api = entry.api if isinstance(entry.api, str) else provider.api
    base_url = entry.base_url if isinstance(entry.base_url, str) else provider.base_url
    if not isinstance(api, str) or not isinstance(base_url, str):
        template = next((m for m in models if m.provider == provider_name), None) if is_builtin else None
        if template is None:
            missing = "api" if not isinstance(api, str) else "baseUrl"
            raise ConfigError(f'{where}: model "{entry.id}" has no "{missing}" (set it on the model or its provider)')
        api = api if isinstance(api, str) else template.api
        base_url = base_url if isinstance(base_url, str) else template.base_url
    if not is_endpoint_api(api):
        # A Pi file may name APIs pi-rpc does not speak; skip those models, keep the rest.
        _log.warning("%s: model %r uses api %r, which pi-rpc does not support; skipped", where, entry.id, api)
        return None
    model = Model(id=entry.id, name=entry.id, api=api, provider=provider_name, base_url=base_url)
    if isinstance(provider.compat, ModelCompat):
        model.compat = provider.compat
    _apply_fields(model, entry)
    return model


def _apply_fields(model: Model, fields: _ModelFields) -> None:
    if isinstance(fields.name, str):
        model.name = fields.name
    if isinstance(fields.reasoning, bool):
        model.reasoning = fields.reasoning
    if isinstance(fields.input, list):
        model.input = [kind for kind in ("text", "image") if kind in fields.input]
    if isinstance(fields.cost, _Cost):
        # A partial cost keeps the other rates (Pi: "cost (partial)").
        old, new = model.cost, fields.cost
        model.cost = ModelCost(
            input=new.input if isinstance(new.input, float) else old.input,
            output=new.output if isinstance(new.output, float) else old.output,
            cache_read=new.cache_read if isinstance(new.cache_read, float) else old.cache_read,
            cache_write=new.cache_write if isinstance(new.cache_write, float) else old.cache_write,
        )
    if isinstance(fields.context_window, int):
        model.context_window = fields.context_window
    if isinstance(fields.max_tokens, int):
        model.max_tokens = fields.max_tokens
    if isinstance(fields.compat, ModelCompat):
        model.compat = layered(model_compat(model), fields.compat)
    if isinstance(fields.thinking_level_map, dict):
        model.thinking_level_map = dict(fields.thinking_level_map)
    # Headers never go into the Model (models travel in events, headers may carry secrets):
    # the registry keeps them and `headers_for` resolves them per request.

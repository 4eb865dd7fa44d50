"""Every wire API pi-rpc speaks, declared once: its name, the module that streams it, its key rule,
the provider whose base URL and variables it defaults to, and what else differs per API.

Every list that names APIs is read from `API_DECLARATIONS` when it is used: the registry (which
module streams an API, imported on its first message: `ai/registry.py`), the `--api` choices of
the daemon and of `pi-rpc doctor`, the APIs a `models.json` may name (`ai/config.py`), the
provider a bare `--base-url` model is named after, and whether a session may start without a key
(`session/models/choice.py`). The known providers (`ANTHROPIC_API_KEY`, `OPENAI_BASE_URL`, ...)
are the ones these declarations name. So adding an API is its name in `KnownApi`, one
`ApiDeclaration` below, and its provider module (a `ProviderApi`: `ai/providers/driver.py`);
nothing else.

This module imports nothing of pi-rpc: `Model.api` (`ai/types.py`) is typed with `KnownApi`, and
naming or choosing an API loads no provider module and no httpx.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, TypeGuard

import msgspec

# Pi's names for the same APIs (`KnownApi` in `packages/ai/src/types.ts`), and the scripted model's.
KnownApi = Literal["faux", "anthropic-messages", "openai-completions", "openai-responses"]

# What a request needs before it is sent:
# - "required": the provider's key (`StreamOptions.api_key`);
# - "required-or-authorization": the key, or the caller's own `Authorization` header instead;
# - "optional": nothing (local servers take requests without a key; with one, it is sent), so a
#   session may start on such a model with no key at all.
KeyRule = Literal["required", "required-or-authorization", "optional"]


class KnownProvider(msgspec.Struct, frozen=True):
    """A provider reachable with no `models.json`: its key and base URL come from the environment."""

    name: str  # `Model.provider`
    title: str  # how it reads in an editor's sign-in list
    base_url: str  # of its built-in models, and the default of its APIs' requests
    key_variable: str
    base_url_variable: str  # set, it replaces `base_url` for the provider's built-in models


class ApiDeclaration(msgspec.Struct, frozen=True):
    """One API, as every part of pi-rpc that lists APIs sees it.

    **Usage** (an entry of `API_DECLARATIONS`, its name added to `KnownApi`):

    ApiDeclaration("openai-completions", "pi_rpc.ai.providers.openai_completions", "optional", OPENAI)
    ApiDeclaration("anthropic-messages", "pi_rpc.ai.providers.anthropic", "required", ANTHROPIC,
                   lists_models=False)           # a bare --base-url must name its model
    ApiDeclaration("openai-responses", "pi_rpc.ai.providers.openai_responses",
                   "required-or-authorization", OPENAI, min_output_tokens=16)

    **Parameters:**

    * **name** - `Model.api`, as Pi names it.
    * **module** - the provider module, which defines `PROVIDER`; imported on the API's first
            message (or by the warm-up), never when a model is chosen.
    * **key** - what a request needs before it is sent (`KeyRule`).
    * **provider** - the known provider whose base URL a request defaults to and whose name a bare
            `--base-url` model takes; `None` for an API with no server (the scripted model), which
            no `models.json` and no `--api` may name.
    * **lists_models** - whether a server of this API is asked `GET {base}/models` when
            `--base-url` comes without `--model`.
    * **min_output_tokens** - the smallest output cap the API accepts (`pi-rpc doctor --live`
            asks for one token where it can).
    """

    name: KnownApi
    module: str
    key: KeyRule
    provider: KnownProvider | None
    lists_models: bool = True
    min_output_tokens: int = 1

    @property
    def default_base_url(self) -> str:
        return self.provider.base_url if self.provider is not None else ""

    @property
    def key_optional(self) -> bool:
        """A session may use a model of this API with no key (a local server)."""
        return self.key == "optional"

    @property
    def provider_name(self) -> str:
        """The `Model.provider` of a model of this API that nothing else names."""
        return self.provider.name if self.provider is not None else self.name


# Pi's conventions: Anthropic's base URL has no `/v1`, OpenAI's has.
ANTHROPIC = KnownProvider(
    "anthropic", "Anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"
)
OPENAI = KnownProvider("openai", "OpenAI", "https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL")

# Read-only, in the order `--api` lists them: the built-in set is fixed at import.
API_DECLARATIONS: Mapping[KnownApi, ApiDeclaration] = MappingProxyType(
    {
        declaration.name: declaration
        for declaration in (
            ApiDeclaration("faux", "pi_rpc.ai.providers.faux", "optional", None),
            ApiDeclaration(
                "anthropic-messages", "pi_rpc.ai.providers.anthropic", "required", ANTHROPIC, lists_models=False
            ),
            ApiDeclaration("openai-completions", "pi_rpc.ai.providers.openai_completions", "optional", OPENAI),
            # The Responses API refuses `max_output_tokens` below 16.
            ApiDeclaration(
                "openai-responses",
                "pi_rpc.ai.providers.openai_responses",
                "required-or-authorization",
                OPENAI,
                min_output_tokens=16,
            ),
        )
    }
)

# The API of a `--base-url` that names none: what local servers (llama.cpp, Ollama, vLLM) speak.
DEFAULT_ENDPOINT_API: KnownApi = "openai-completions"


def api_declaration(api: str) -> ApiDeclaration:
    """The declaration of `api`; `LookupError` for an API pi-rpc does not speak."""
    try:
        return API_DECLARATIONS[api]  # type: ignore[index]  # any string may be asked about
    except KeyError:
        raise LookupError(f"No provider for api {api!r}") from None


def endpoint_apis() -> list[KnownApi]:
    """The APIs of a server: what `--api` and a `models.json` `api` may name, in declaration order."""
    return [name for name, declaration in API_DECLARATIONS.items() if declaration.provider is not None]


def is_endpoint_api(api: str) -> TypeGuard[KnownApi]:
    return api in endpoint_apis()


def known_providers() -> Mapping[str, KnownProvider]:
    """name -> provider, for every provider an API names, in the order the APIs are declared."""
    return {
        declaration.provider.name: declaration.provider
        for declaration in API_DECLARATIONS.values()
        if declaration.provider is not None
    }


def known_provider(name: str) -> KnownProvider | None:
    return known_providers().get(name)


def key_variables() -> list[str]:
    """The variable each known provider's key is read from, in order."""
    return [provider.key_variable for provider in known_providers().values()]

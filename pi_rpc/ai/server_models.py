"""Asking an OpenAI-compatible server which models it serves (`GET {base}/models`).

Used once at start-up when `--base-url` comes without `--model`: llama.cpp, Ollama, vLLM and LM
Studio all answer this endpoint, and they reject the placeholder id a request would otherwise
carry. The answer's shape is OpenAI's `{"data": [{"id": ...}, ...]}`; of the other fields only a
context window is read (llama-server says `meta.n_ctx`), so the model is not taken to have 128k.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:  # httpx is imported when a list is asked for, not at the daemon's start
    import httpx

# Start-up waits on this; a local server answers at once, a dead one should not hold the editor.
LIST_TIMEOUT_SECONDS = 10.0


class ModelListError(RuntimeError):
    """The list could not be had. The message names the URL, never a key."""


class _Entry(msgspec.Struct):
    id: str
    # Read loosely (Any): a server's odd extra field must not lose the whole listing.
    meta: Any = None  # llama.cpp's llama-server: {"n_ctx": the context it was started with, ...}
    max_model_len: Any = None  # vLLM
    context_length: Any = None  # LM Studio, OpenRouter


class _ModelList(msgspec.Struct):
    data: list[_Entry]


class ServerModel(msgspec.Struct, frozen=True):
    """A model a server lists, with its context window where the listing says it."""

    id: str
    context_window: int | None = None
    # Where the figure came from, for `pi-rpc models` and the start-up log.
    context_from: str | None = None


def _described(entry: _Entry, url: str) -> ServerModel:
    # The context the server was started with comes before what the model was trained on.
    for figure, field in (
        (entry.meta.get("n_ctx") if isinstance(entry.meta, dict) else None, "meta.n_ctx"),
        (entry.max_model_len, "max_model_len"),
        (entry.context_length, "context_length"),
    ):
        if isinstance(figure, int) and not isinstance(figure, bool) and figure > 0:
            return ServerModel(entry.id, figure, f"{field} of GET {url}")
    return ServerModel(entry.id)


def describe_server_models(
    base_url: str, api_key: str | None = None, transport: httpx.BaseTransport | None = None
) -> list[ServerModel]:
    """The models the server at `base_url` lists, in its order, with the context window each
    entry reports (llama-server's `meta.n_ctx`, vLLM's `max_model_len`, `context_length`)."""
    import httpx

    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=LIST_TIMEOUT_SECONDS, transport=transport) as client:
            response = client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise ModelListError(f"Cannot list the models of {url}: {exc or type(exc).__name__}") from None
    if response.status_code != 200:
        raise ModelListError(f"Cannot list the models of {url}: HTTP {response.status_code}")
    try:
        listing = msgspec.json.decode(response.content, type=_ModelList)
    except msgspec.DecodeError:
        raise ModelListError(f"Cannot list the models of {url}: the answer is not an OpenAI model list") from None
    return [_described(entry, url) for entry in listing.data]

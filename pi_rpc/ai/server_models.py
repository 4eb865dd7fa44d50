"""Asking an OpenAI-compatible server which models it serves (`GET {base}/models`).

Used once at start-up when `--base-url` comes without `--model`: llama.cpp, Ollama, vLLM and LM
Studio all answer this endpoint, and they reject the placeholder id a request would otherwise
carry. The answer's shape is OpenAI's `{"data": [{"id": ...}, ...]}`; of the other fields only a
context window is read (llama-server says `meta.n_ctx`), so the model is not taken to have 128k.
`server_model_details` then asks llama.cpp's `/props` or Ollama's `/api/show` for what the listing
does not say: the context window, and whether the model reads images. `template_renders_tools`
asks llama.cpp's `/props` whether its chat template renders tool calls (for `doctor --live`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:  # httpx is imported when a list is asked for, not at the daemon's start
    import httpx

# Start-up waits on this; a local server answers at once, a dead one should not hold the editor.
LIST_TIMEOUT_SECONDS = 10.0
# The details are optional: a server that does not answer them quickly is taken as it listed.
DETAILS_TIMEOUT_SECONDS = 3.0


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
    # Where the figure came from, for the start-up log.
    context_from: str | None = None
    # Whether the server says the model reads images (None: it does not say).
    image_input: bool | None = None


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


def _json_or_none(response: httpx.Response) -> dict[str, Any] | None:
    if response.status_code != 200:
        return None
    try:
        data = msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        return None
    return data if isinstance(data, dict) else None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _from_props(props: dict[str, Any], url: str) -> tuple[int | None, str | None, bool | None]:
    """llama.cpp's `GET /props`: the running context and whether a vision projector is loaded."""
    settings = props.get("default_generation_settings")
    n_ctx = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    modalities = props.get("modalities")
    vision = modalities.get("vision") if isinstance(modalities, dict) else None
    where = f"default_generation_settings.n_ctx of GET {url}" if n_ctx else None
    return n_ctx, where, vision if isinstance(vision, bool) else None


def _from_show(show: dict[str, Any], url: str) -> tuple[int | None, str | None, bool | None]:
    """Ollama's `POST /api/show`: `model_info["<arch>.context_length"]` and `capabilities`."""
    info = show.get("model_info")
    lengths = [v for k, v in info.items() if k.endswith(".context_length")] if isinstance(info, dict) else []
    n_ctx = next((n for n in map(_positive, lengths) if n), None)
    capabilities = show.get("capabilities")
    vision = "vision" in capabilities if isinstance(capabilities, list) else None
    return n_ctx, f"model_info.*.context_length of POST {url}" if n_ctx else None, vision


def server_model_details(
    base_url: str, listed: ServerModel, api_key: str | None = None, transport: httpx.BaseTransport | None = None
) -> ServerModel:
    """`listed` with what the server's own endpoints add: llama.cpp's `/props`, else Ollama's
    `/api/show` (both beside `/v1`, not under it). A figure the listing gave is kept; a server
    that answers neither (vLLM, LM Studio) leaves `listed` as it was. Never raises for the
    server's sake: these are details, the listing already named the model."""
    import httpx

    root = base_url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    found: tuple[int | None, str | None, bool | None] = (None, None, None)
    try:
        with httpx.Client(timeout=DETAILS_TIMEOUT_SECONDS, transport=transport) as client:
            props = _json_or_none(client.get(root + "/props", headers=headers))
            if props is not None:
                found = _from_props(props, root + "/props")
            else:
                show = _json_or_none(client.post(root + "/api/show", json={"model": listed.id}, headers=headers))
                if show is not None:
                    found = _from_show(show, root + "/api/show")
    except httpx.HTTPError:
        return listed
    n_ctx, where, vision = found
    if listed.context_window is None and n_ctx is not None:
        listed = msgspec.structs.replace(listed, context_window=n_ctx, context_from=where)
    return msgspec.structs.replace(listed, image_input=vision) if vision is not None else listed


def template_renders_tools(
    base_url: str, api_key: str | None = None, transport: httpx.BaseTransport | None = None
) -> bool | None:
    """Whether llama.cpp's chat template renders tool calls: `chat_template_caps` of `GET /props`
    (its `supports_tool_calls`, from running the template on a sample call). None where the
    server does not say (not llama.cpp, or it did not answer in time)."""
    import httpx

    root = base_url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=DETAILS_TIMEOUT_SECONDS, transport=transport) as client:
            props = _json_or_none(client.get(root + "/props", headers=headers))
    except httpx.HTTPError:
        return None
    caps = props.get("chat_template_caps") if props is not None else None
    said = caps.get("supports_tool_calls") if isinstance(caps, dict) else None
    return said if isinstance(said, bool) else None

"""Asking an OpenAI-compatible server which models it serves (`GET {base}/models`).

Used once at start-up when `--base-url` comes without `--model`: llama.cpp, Ollama, vLLM and LM
Studio all answer this endpoint, and they reject the placeholder id a request would otherwise
carry. The answer's shape is OpenAI's `{"data": [{"id": ...}, ...]}`; other fields are ignored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:  # httpx is imported when a list is asked for, not at the daemon's start
    import httpx

# Start-up waits on this; a local server answers at once, a dead one should not hold the editor.
LIST_TIMEOUT_SECONDS = 10.0


class ModelListError(RuntimeError):
    """The list could not be had. The message names the URL, never a key."""


class _Entry(msgspec.Struct):
    id: str


class _ModelList(msgspec.Struct):
    data: list[_Entry]


def list_server_models(
    base_url: str, api_key: str | None = None, transport: httpx.BaseTransport | None = None
) -> list[str]:
    """The model ids the server at `base_url` lists, in its order."""
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
    return [entry.id for entry in listing.data]

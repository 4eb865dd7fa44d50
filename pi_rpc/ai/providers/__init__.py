"""Built-in providers, one module per API."""

from __future__ import annotations

import importlib
import logging

from pi_rpc.ai.registry import StreamFn

_log = logging.getLogger(__name__)

_BUILTIN = {
    "faux": "pi_rpc.ai.providers.faux",
    "anthropic-messages": "pi_rpc.ai.providers.anthropic",
    "openai-completions": "pi_rpc.ai.providers.openai_completions",
    "openai-responses": "pi_rpc.ai.providers.openai_responses",
}


def builtin_providers() -> dict[str, StreamFn]:
    """api name -> `stream` function of that API's module."""
    found: dict[str, StreamFn] = {}
    for api, module_name in _BUILTIN.items():
        module = importlib.import_module(module_name)
        found[api] = module.stream
    return found

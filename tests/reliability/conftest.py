from __future__ import annotations

# The scripted loopback HTTP server of the provider tests, and their near-zero retry sleeps.
from tests.providers.conftest import fast_retries, sse_server

__all__ = ["fast_retries", "sse_server"]

from __future__ import annotations

# The end-to-end tests' fixtures (a `pi-rpc` subprocess over real pipes, a loopback provider), and
# the provider tests' scripted loopback HTTP server with its near-zero retry sleeps.
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import spawn, workspace
from tests.e2e.loopback_model import Loopback, loopback
from tests.providers.conftest import fast_retries, sse_server

__all__ = ["fast_retries", "loopback", "spawn", "workspace", "sse_server"]


@pytest.fixture
def argv(tmp_path: Path, loopback: Loopback) -> Iterator[list[str]]:
    """A daemon's arguments for the loopback provider's OpenAI-compatible model, in `tmp_path`."""
    yield [
        "--cwd",
        str(tmp_path),
        "--api",
        "openai-completions",
        "--base-url",
        loopback.server.url + "/v1",
        "--model",
        "test-model",
    ]

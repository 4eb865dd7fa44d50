"""The local-model tier's fixtures: the built servers (install.sh's cache), one of each kind per
pytest worker, started once and shared by that worker's tests, which each send their own requests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .servers import SERVER_KINDS, LlamaInstall, LlamaProcess, installed_llama


@pytest.fixture(scope="session")
def llama_install() -> LlamaInstall:
    return installed_llama()


@pytest.fixture(scope="session", params=SERVER_KINDS)
def llama(
    request: pytest.FixtureRequest, llama_install: LlamaInstall, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaProcess]:
    """A running server of each kind in turn (llama-server, then llama-cpp-python's)."""
    server = LlamaProcess(request.param, llama_install, tmp_path_factory.mktemp("llama"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()

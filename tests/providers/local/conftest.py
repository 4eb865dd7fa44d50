"""The local-model tier's fixtures: the built servers (install.sh's cache), one of each kind per
pytest worker, started once and shared by that worker's tests, which each send their own requests.
`llama` is each server as a user starts it (llama-server with SmolLM2's own template, which has no
tools; llama-cpp-python with its tool-calling chat format); `tool_llama` is each one able to call
tools, for which llama-server needs a template that renders them (a second server, started once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .servers import SERVER_KINDS, TOOL_CALLING_TEMPLATE, LlamaInstall, LlamaProcess, installed_llama


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


@pytest.fixture(scope="session")
def llama_server_with_tools(
    llama_install: LlamaInstall, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaProcess]:
    """llama-server with the tier's ChatML template that renders tools (chatml-tools.jinja)."""
    server = LlamaProcess(
        "llama-server", llama_install, tmp_path_factory.mktemp("llama"), chat_template=TOOL_CALLING_TEMPLATE
    )
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture
def tool_llama(request: pytest.FixtureRequest, llama: LlamaProcess) -> LlamaProcess:
    """Each kind of server as it calls tools: llama-cpp-python's `llama` already does."""
    if llama.kind == "llama-server":
        server: LlamaProcess = request.getfixturevalue("llama_server_with_tools")
        return server
    return llama

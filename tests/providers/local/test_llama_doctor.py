"""`pi-rpc doctor --live --base-url` against the real servers, run as a user runs it: llama-server
with a chat template that renders tools takes every request of a real turn and answers a forced
tool call with one; with SmolLM2's own template (no tools in it) it takes them all too but
answers that call in text, and the doctor says the template renders no tools and how to start
the server with one. llama-cpp-python's server started as its README starts it (no
--chat_format: the GGUF's own template) fails on an image prompt's list of content parts, and
the doctor names the setting that avoids it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.install.doctor_run import doctor

from .servers import MODEL_ID, LlamaInstall, LlamaProcess

pytestmark = [pytest.mark.llama, pytest.mark.e2e]


@pytest.fixture
def default_llama_cpp_python(llama_install: LlamaInstall, tmp_path: Path) -> Iterator[LlamaProcess]:
    server = LlamaProcess("llama-cpp-python", llama_install, tmp_path, chat_format=None)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _live_line(home: Path, server: LlamaProcess) -> tuple[str, str, int]:
    result = doctor(home, "--live", "--base-url", server.base_url)
    [line] = [line for line in result.stdout.splitlines() if "live request:" in line]
    return line, result.stdout, result.returncode


def test_llama_server_with_a_template_that_renders_tools_takes_a_real_turn(
    llama_server_with_tools: LlamaProcess, tmp_path: Path
) -> None:
    line, stdout, status = _live_line(tmp_path, llama_server_with_tools)
    # No vision projector (its /props says so), so no image is sent; the rest is taken.
    assert line.startswith(f"ok    live request: openai/{MODEL_ID}"), stdout
    assert "a tool call replayed with its result" in line and "image" not in line
    assert line.endswith("a forced tool call)"), stdout
    assert status == 0, stdout


@pytest.mark.parametrize("llama", ["llama-server"], indirect=True)  # llama-cpp-python's: the next test
def test_llama_server_with_a_template_without_tools_is_told_to_use_one(llama: LlamaProcess, tmp_path: Path) -> None:
    line, stdout, status = _live_line(tmp_path, llama)
    assert line.startswith(f"warn  live request: openai/{MODEL_ID}"), stdout
    assert 'answered text to a forced tool call (tool_choice "required"): its chat template renders no tools' in line
    assert "→ start the server with a chat template that renders tools: llama-server --jinja" in stdout
    assert "--chat-template-file" in stdout
    assert status == 0, stdout  # text turns work: a warning, not a failure


def test_llama_cpp_python_refuses_list_content_and_doctor_names_the_fix(
    default_llama_cpp_python: LlamaProcess, tmp_path: Path
) -> None:
    line, stdout, status = _live_line(tmp_path, default_llama_cpp_python)
    assert line.startswith(f"warn  live request: openai/{MODEL_ID}"), stdout
    assert "the server refuses an image (content sent as a list of parts)" in line
    assert '→ in models.json, set "input": ["text"] for this model' in stdout
    assert status == 0, stdout  # text turns work: a warning, not a failure

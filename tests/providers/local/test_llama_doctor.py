"""`pi-rpc doctor --live --base-url` against the real servers, run as a user runs it: llama-server
takes every request of a real turn; llama-cpp-python's server takes the text ones and refuses an
image prompt's list of content parts, and the doctor names the setting that avoids it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.install.test_doctor import doctor

from .servers import MODEL_ID, LlamaProcess

pytestmark = [pytest.mark.llama, pytest.mark.e2e]


def test_doctor_live_sends_a_real_turn_and_names_the_fix(llama: LlamaProcess, tmp_path: Path) -> None:
    result = doctor(tmp_path, "--live", "--base-url", llama.base_url)
    [line] = [line for line in result.stdout.splitlines() if "live request:" in line]
    if llama.kind == "llama-server":
        # No vision projector (its /props says so), so no image is sent; the rest is taken.
        assert line.startswith(f"ok    live request: openai/{MODEL_ID}"), result.stdout
        assert "a tool call replayed with its result" in line and "image" not in line
        assert result.returncode == 0, result.stdout
    else:
        assert line.startswith(f"warn  live request: openai/{MODEL_ID}"), result.stdout
        assert "the server refuses an image (content sent as a list of parts)" in line
        assert '→ in models.json, set "input": ["text"] for this model' in result.stdout
        assert result.returncode == 0, result.stdout  # text turns work: a warning, not a failure

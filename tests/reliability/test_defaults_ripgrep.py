"""grep and find use the pinned ripgrep wheel (14.1.0) whatever `rg` the machine
has. An older one first on PATH (Debian's 13.0 words its errors without the `rg:` prefix) used to
win, so results, error texts and this test suite depended on the machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_rpc.agent.types import ToolError
from pi_rpc.tools.find import create_find_tool
from pi_rpc.tools.grep import create_grep_tool
from tests.unit.tools.helpers import run_tool, text_of

pytestmark = pytest.mark.anyio

FAKE_RG = """#!/bin/sh
echo "regex parse error: this is the fake old rg, it must never run" >&2
exit 2
"""


@pytest.fixture
def old_rg_first_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    fake = fake_bin / "rg"
    fake.write_text(FAKE_RG)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    return fake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "greet.py").write_text("def greet(name):\n    return f'Helo, {name}'\n")
    (root / "README.md").write_text("# greeter\n")
    return root


async def test_grep_results_are_unaffected(old_rg_first_on_path: Path, project: Path) -> None:
    result = await run_tool(create_grep_tool(), {"pattern": "Helo"}, project)
    assert text_of(result) == "src/greet.py:2:     return f'Helo, {name}'"


async def test_find_results_are_unaffected(old_rg_first_on_path: Path, project: Path) -> None:
    result = await run_tool(create_find_tool(), {"pattern": "*.py"}, project)
    assert text_of(result) == "src/greet.py"


async def test_rg_errors_are_the_pinned_versions_words(old_rg_first_on_path: Path, project: Path) -> None:
    with pytest.raises(ToolError) as failed:
        await run_tool(create_grep_tool(), {"pattern": "("}, project)
    assert str(failed.value).startswith("rg: regex parse error:")
    assert "fake old rg" not in str(failed.value)

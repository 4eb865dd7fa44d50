"""What the in-process approval tests of every front end share: the scripted model that edits the
demo's sample project (tests/e2e/scripts/approvals.json), a copy of that project, and the line the
edit changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from pi_rpc.ai.providers.faux import Script

TESTS = Path(__file__).parents[2]
SCRIPT = msgspec.json.decode((TESTS / "e2e" / "scripts" / "approvals.json").read_bytes(), type=Script)
SAMPLE = TESTS.parent / "pi_rpc" / "demo" / "workspace"
ORIGINAL = 'return f"Helo, {name}!"'
FIXED = 'return f"Hello, {name}!"'


def sample_workspace(tmp_path: Path) -> Path:
    """A fresh copy of the sample project for one test."""
    workspace = tmp_path / "ws"
    shutil.copytree(SAMPLE, workspace)
    return workspace


def greet(workspace: Path) -> str:
    return (workspace / "src" / "greet.py").read_text()

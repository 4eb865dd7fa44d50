"""`pi-rpc --mode lsp` in Emacs's eglot (Debian's `elpa-eglot`, 1.9) in batch mode, configured by
README.md's own eglot snippet: "Fix with Pi" on an unsaved buffer changes the buffer through
workspace/applyEdit, leaves the file on disk alone, and `undo` takes the change back."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import daemon_env
from tests.lsp.editor import ON_DISK, SCRIPTS, UNSAVED

pytestmark = pytest.mark.eglot

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).parent / "eglot" / "fix_with_pi.el"
EMACS = shutil.which("emacs")
BIN = ROOT / ".venv" / "bin"  # the README's command is plain `pi-rpc`: found on PATH here


def readme_eglot_snippet() -> str:
    readme = (ROOT / "README.md").read_text()
    found = re.search(r"Emacs eglot.*?```elisp\n(.*?)```", readme, re.DOTALL)
    assert found, "README.md has no eglot snippet"
    return found.group(1)


def has_eglot() -> bool:
    if EMACS is None:
        return False
    check = subprocess.run([EMACS, "--batch", "--eval", "(require 'eglot)"], capture_output=True)
    return check.returncode == 0


def test_fix_with_pi_edits_the_unsaved_buffer_and_undo_takes_it_back(tmp_path: Path) -> None:
    if not (BIN / "pi-rpc").exists():
        pytest.skip("the pi-rpc daemon is not installed in .venv yet")
    if not has_eglot():
        pytest.skip("emacs with eglot is not installed (`make test` installs emacs-nox and elpa-eglot)")
    assert EMACS is not None
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text(ON_DISK)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)  # eglot's project root
    snippet = readme_eglot_snippet()
    command = '"pi-rpc" "--mode" "lsp"'
    assert command in snippet
    config = tmp_path / "config.el"
    config.write_text(snippet.replace(command, f'{command} "--script" {json.dumps(str(SCRIPTS / "lsp.json"))}'))
    result = tmp_path / "result.json"
    env = daemon_env(tmp_path / "home")
    env.update(
        PATH=f"{BIN}{os.pathsep}{env['PATH']}",
        PI_EGLOT_FILE=str(workspace / "greet.py"),
        PI_EGLOT_UNSAVED=UNSAVED,
        PI_EGLOT_RESULT=str(result),
        PI_RPC_SESSION_DIR=str(tmp_path / "sessions"),
    )
    emacs = subprocess.run(
        [EMACS, "--batch", "-l", str(config), "-l", str(DRIVER)],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert emacs.returncode == 0, emacs.stderr[-20000:]  # a timeout ends with eglot's last events
    seen = json.loads(result.read_text())
    assert "Fix with Pi" in seen["titles"]
    assert seen["fixed"] == UNSAVED.replace("Helo", "Hello")
    assert (workspace / "greet.py").read_text() == ON_DISK  # nothing was written behind the editor
    assert any("Hello" in answer for answer in seen["answers"]), seen["answers"]
    assert seen["undone"] == UNSAVED
    assert seen["modified"] is True

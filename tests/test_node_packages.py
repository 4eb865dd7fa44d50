"""A test that needs real Pi where Node is missing: skipped with the command that installs it on a
developer's machine, failed in CI (tests/node_packages.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[1]


def run_a_test_needing_pi(folder: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    test = folder / "test_needs_pi.py"
    test.write_text("from tests.node_packages import real_pi\n\n\ndef test_it() -> None:\n    real_pi()\n")
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"PATH": str(folder / "no-node-here")}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", str(test)],
        cwd=REPO,  # `tests` imports from here
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("ci", [False, True], ids=["developer", "ci"])
def test_without_node_a_real_pi_test_skips_naming_the_command_but_fails_in_ci(tmp_path: Path, ci: bool) -> None:
    run = run_a_test_needing_pi(tmp_path, ci)
    if ci:
        assert run.returncode == 1 and "1 failed" in run.stdout
        assert "Node.js and npm are not installed" in run.stdout and "CI must run every test" in run.stdout
    else:
        assert run.returncode == 0 and "1 skipped" in run.stdout
        assert "then run `make pi-client`" in run.stdout

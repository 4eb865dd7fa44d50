"""The npm packages some tests run under Node: Pi itself (tests/pi_client: Pi's CLI, its RpcClient
and the `ignore` matcher its skill loader uses) and the ACP clients (tests/acp_clients).

Each folder is installed from its lock file once per checkout, into its git-ignored node_modules:
by `make test` before pytest starts (the Makefile's `pi-client` target), else by the first test
that needs it. An exclusive lock on a file beside the lock file serialises that install across
pytest-xdist's workers, so no test reads a half-installed package. Without Node, or when the
install fails, a test that needs the package is skipped with the command that installs it; in CI
(`CI=true`, as .ci/run runs) it fails instead, so a red install is never a silent skip.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

TESTS = Path(__file__).parent
IN_CI = os.environ.get("CI") == "true"


@dataclass(frozen=True)
class NodeFolder:
    folder: Path
    install: tuple[str, ...]  # the npm command, run in `folder`
    how: str  # what a developer runs to install it by hand

    @property
    def installed(self) -> bool:
        """node_modules written by npm after the lock file last changed (npm keeps its own copy of
        the lock there: `node_modules/.package-lock.json`)."""
        marker = self.folder / "node_modules" / ".package-lock.json"
        lock = self.folder / "package-lock.json"
        return marker.is_file() and marker.stat().st_mtime >= lock.stat().st_mtime


PI_CLIENT = NodeFolder(
    TESTS / "pi_client", ("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"), "make pi-client"
)
# `npm install` from the lock file: `npm ci` refuses it (npm leaves other platforms out of it).
ACP_CLIENTS = NodeFolder(
    TESTS / "acp_clients",
    ("npm", "install", "--no-audit", "--no-fund", "--ignore-scripts"),
    "cd tests/acp_clients && npm install --no-audit --no-fund --ignore-scripts",
)
PI_CLI = PI_CLIENT.folder / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"


def unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it in CI, where everything a test needs must be there."""
    if IN_CI:
        pytest.fail(f"{reason} (CI must run every test)", pytrace=False)
    pytest.skip(reason)


def ensure_installed(packages: NodeFolder) -> Path:
    """`packages.folder`, its node_modules installed and up to date."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        unavailable(f"Node.js and npm are not installed: install them, then run `{packages.how}`")
    if packages.installed:
        return packages.folder
    with open(packages.folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a worker that waited here finds the install done
        if not packages.installed:
            done = subprocess.run(
                packages.install, cwd=packages.folder, capture_output=True, text=True, timeout=600, check=False
            )
            if done.returncode != 0:
                unavailable(f"`{packages.how}` failed: {done.stderr[-800:]}")
    return packages.folder


def real_pi() -> Path:
    """Pi's CLI (`pi --mode rpc …` runs it under Node), installed in tests/pi_client."""
    ensure_installed(PI_CLIENT)
    if not PI_CLI.is_file():
        unavailable(f"{PI_CLI} is missing after `{PI_CLIENT.how}`")
    return PI_CLI

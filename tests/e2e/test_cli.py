"""The command line: --help, --version and bad arguments (spec 5.2; README.md, "Command line"). The
no-key default is in tests/reliability/test_defaults_no_model.py."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pi_rpc.demo.rpc_client import DaemonClient

from .conftest import daemon_env

pytestmark = pytest.mark.e2e


def run_cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_rpc", *args],
        capture_output=True,
        text=True,
        env=daemon_env(home),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_help_lists_the_builtin_tools_as_pi_does(tmp_path: Path) -> None:
    """spec 5.2: the exact `Built-in Tool Names:` block."""
    result = run_cli("--help", home=tmp_path)
    assert result.returncode == 0
    assert (
        "Built-in Tool Names:\n"
        "  read       - Read file contents\n"
        "  bash       - Execute bash commands\n"
        "  powershell - Execute PowerShell commands on Windows\n"
        "  edit       - Edit files with find/replace\n"
        "  write      - Write files (creates/overwrites)\n"
        "  grep       - Search file contents (read-only, off by default)\n"
        "  find       - Find files by glob pattern (read-only, off by default)\n"
        "  ls         - List directory contents (read-only, off by default)\n"
    ) in result.stdout
    for flag in (
        "--cwd",
        "--provider",
        "--model",
        "--api",
        "--base-url",
        "--tools",
        "--exclude-tools",
        "--framing",
        "--version",
    ):
        assert flag in result.stdout


def test_version(tmp_path: Path) -> None:
    result = run_cli("--version", home=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith("pi-rpc ")


def test_bad_arguments_fail_clearly(tmp_path: Path) -> None:
    result = run_cli("--cwd", str(tmp_path / "missing"), home=tmp_path)
    assert result.returncode == 2 and "is not a directory" in result.stderr
    result = run_cli("--provider", "nobody", "--model", "nothing", home=tmp_path)
    assert result.returncode == 2 and 'Unknown provider "nobody"' in result.stderr
    result = run_cli("--model", "nothing-like-it", home=tmp_path)
    assert result.returncode == 2 and "Model not found: */nothing-like-it" in result.stderr
    result = run_cli("--framing", "xml", home=tmp_path)
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_tools_allowlist_and_exclude(spawn: Callable[..., DaemonClient]) -> None:
    """spec 5.9: --tools narrows the registry itself; --exclude-tools removes names."""
    client = spawn("--tools", "read,grep,ls", "--exclude-tools", "ls")
    tools = client.request("tools/list")["tools"]
    assert [(t["name"], t["active"]) for t in tools] == [("read", True), ("grep", True)]
    assert client.request("tools/setActive", {"names": ["bash", "read"]}) == {"active": ["read"]}
    client.close()

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pi_rpc.demo.rpc_client import DaemonClient

SCRIPTS = Path(__file__).parent / "scripts"
SAMPLE = Path(__file__).parents[2] / "pi_rpc" / "demo" / "workspace"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(SAMPLE, ws)
    return ws


def daemon_env(home: Path | None = None) -> dict[str, str]:
    """The developer's environment minus anything that could pick a real provider."""
    env = dict(os.environ)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        env.pop(name, None)
    if home is not None:  # no models.json of the developer's either
        env["HOME"] = str(home)
        env["XDG_CONFIG_HOME"] = str(home / ".config")
        env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    return env


@pytest.fixture
def spawn(workspace: Path, tmp_path: Path) -> Iterator[Callable[..., DaemonClient]]:
    clients: list[DaemonClient] = []
    home = tmp_path / "home"
    home.mkdir()

    def start(*args: str, framing: str = "lsp", script: str | None = "e2e.json") -> DaemonClient:
        argv = ["--cwd", str(workspace), *args]
        if script is not None:
            argv += ["--script", str(SCRIPTS / script)]
        client = DaemonClient(argv, framing=framing, env=daemon_env(home))
        clients.append(client)
        return client

    yield start
    for client in clients:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        client.terminate()


def processes_with(marker: str) -> list[int]:
    """Pids whose command line contains `marker` (to prove a tool's children are gone)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry))
    return found

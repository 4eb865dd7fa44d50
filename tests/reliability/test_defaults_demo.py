"""`pi-rpc demo` as a new user runs it (README.md, "Quick start"), through real subprocesses. It
must start from a folder holding a `types.py`, stop at once with the error shown when the model
fails, end quietly on Ctrl-C (status 130) and remove its scratch copy on Ctrl-C and SIGTERM
alike."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import daemon_env, descendants, still_running, watch
from tests.reliability.local_server import local_server

pytestmark = pytest.mark.e2e

PI_RPC = Path(sys.executable).parent / "pi-rpc"  # the console script `make demo` runs


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Where the user stands when typing `pi-rpc demo`: a project with its own `types.py` (and, as
    `types` may already be loaded at interpreter start, `typing.py` and `json.py` too)."""
    path = tmp_path / "project"
    path.mkdir()
    for name in ("types", "typing", "json"):
        (path / f"{name}.py").write_text(f'raise SystemExit("the standard {name} module was shadowed")\n')
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    environment = daemon_env(home)
    environment["TMPDIR"] = str(tmp_path / "tmp")  # the scratch copy lands where the test can look
    (tmp_path / "tmp").mkdir()
    return environment


def scratch_copies(env: dict[str, str]) -> list[Path]:
    return sorted(Path(env["TMPDIR"]).glob("pi-rpc-demo-*"))


def test_the_demo_runs_from_a_folder_with_a_types_module(folder: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        [str(PI_RPC), "demo", "--no-color"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert "scripted model" in result.stdout and "Done." in result.stdout
    assert scratch_copies(env) == []


def test_a_failing_model_stops_the_demo_at_once_with_its_error(folder: Path, env: dict[str, str]) -> None:
    with local_server(["gpt-4o"], fail_status=401) as server:
        env.update(OPENAI_API_KEY="sk-wrong", OPENAI_BASE_URL=server.url)
        # The guard is far below the 120 s the demo used to wait in silence for a tool to start.
        result = subprocess.run(
            [str(PI_RPC), "demo", "--no-color"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )
    assert result.returncode == 1
    assert "invalid api key" in result.stdout
    assert result.stdout.count("you>") == 1  # stopped after the first prompt failed
    assert "Traceback" not in result.stderr
    assert scratch_copies(env) == []


def start_and_wait_for_the_first_prompt(folder: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], Path]:
    demo = subprocess.Popen(
        [str(PI_RPC), "demo", "--no-color"],
        cwd=folder,
        env=env,
        text=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert demo.stdout is not None
    scratch = None
    for line in demo.stdout:
        found = re.match(r"workspace: (.+)$", line.rstrip("\n"))
        if found:
            scratch = Path(found.group(1))
        if line.startswith("active tools:"):
            break
    assert scratch is not None and scratch.is_dir()
    return demo, scratch


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_demo_exits_quietly_and_cleans_up(
    folder: Path, env: dict[str, str], signum: int, status: int
) -> None:
    demo, scratch = start_and_wait_for_the_first_prompt(folder, env)
    children = watch(descendants(demo.pid))  # the daemon and anything its tools started
    demo.send_signal(signum)  # to the demo only, as `kill` would; a terminal's Ctrl-C reaches both
    _, stderr = demo.communicate(timeout=60)
    assert demo.returncode == status
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert not scratch.exists()
    assert still_running(children) == 0

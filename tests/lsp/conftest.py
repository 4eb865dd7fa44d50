"""pi-rpc --mode lsp as a subprocess over real pipes, driven by the test editor of
tests/lsp/editor.py (pytest-lsp's client)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from pytest_lsp import LanguageClient

from tests.e2e.conftest import daemon_env
from tests.lsp.editor import SCRIPT, Editor, new_client, sample_workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return sample_workspace(tmp_path)


@contextlib.asynccontextmanager
async def running_client(
    workspace: Path, tmp_path: Path, *, pin_cwd: bool = True
) -> AsyncIterator[tuple[LanguageClient, Editor]]:
    """The daemon with the test script; `pin_cwd=False`: no --cwd, started in another folder."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = daemon_env(home)
    env["PI_RPC_SESSION_DIR"] = str(tmp_path / "sessions")
    client, editor = new_client()
    cwd_args = ["--cwd", str(workspace)] if pin_cwd else []
    await client.start_io(
        sys.executable, "-m", "pi_rpc", "--mode", "lsp", *cwd_args, "--script", str(SCRIPT), env=env, cwd=str(home)
    )
    server = client._server
    try:
        yield client, editor
    finally:
        try:
            if server is not None and server.returncode is None:  # a test may have ended it
                with anyio.fail_after(30):  # a guard against a hang
                    await client.shutdown_session()
        finally:
            if server is not None and server.returncode is None and server.stdin is not None:
                server.stdin.close()  # end of input ends the daemon too (an uninitialized one, here)
            with anyio.fail_after(30):
                await client.stop()  # type: ignore[no-untyped-call]


@pytest.fixture
async def lsp_client(workspace: Path, tmp_path: Path) -> AsyncIterator[tuple[LanguageClient, Editor]]:
    async with running_client(workspace, tmp_path) as started:
        yield started

"""A folder's own rules apply to a session for that folder whichever front end opens it: the
daemon started in it (JSON-RPC, Pi mode), ACP's `session/new {cwd}` from a daemon started
elsewhere, and LSP following the editor's root from a daemon started elsewhere. Every config is
the command line's (`build_session_config`), so the sessions are made as a real daemon makes them
(pi_rpc/session/configuration/factory.py); each front end runs in-process. A folder without the rule runs the
same command, so a missing file means the rule held, not that nothing ran."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from tests.lsp.editor import ended, initialize

from .acp_editor import Editor, acp_agent, text
from .jsonrpc_client import jsonrpc_editor
from .jsonrpc_harness import start
from .lsp_pipes import lsp_in_process
from .pi_harness import pi_mode
from .workspace_folders import daemon_config, folder

pytestmark = pytest.mark.anyio

DENIED = "denied by the permission rule bash"


@pytest.fixture(autouse=True)
def own_config_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The user's settings, trust list and saved rules of this test alone (none at first)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-agent"))
    yield


@pytest.fixture(params=[True, False], ids=["denies-bash", "no-rule"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, bool]:
    denies = bool(request.param)
    return folder(tmp_path, "repo", {"permissions": {"deny": ["bash"]}} if denies else None), denies


def held(repo: tuple[Path, bool], output: str) -> None:
    """Denied: nothing ran and the model read why; else the command ran in that folder."""
    where, denies = repo
    assert (where / "ran.txt").exists() is not denies
    assert (DENIED in output) is denies


async def test_jsonrpc_daemon_started_in_the_folder(tmp_path: Path, repo: tuple[Path, bool]) -> None:
    async with jsonrpc_editor(daemon_config(tmp_path, repo[0])) as editor:
        await start(editor)
        await editor.request("prompt", {"message": "run it"})
    held(repo, json.dumps(editor.received))


async def test_acp_session_new_for_the_folder_from_a_daemon_started_elsewhere(
    tmp_path: Path, repo: tuple[Path, bool]
) -> None:
    elsewhere = folder(tmp_path, "elsewhere", None)
    async with acp_agent(daemon_config(tmp_path, elsewhere), editor := Editor()) as agent:
        session = await agent.new_session(cwd=str(repo[0]))
        await agent.prompt(session_id=session.session_id, prompt=text("run it"))
    held(repo, json.dumps(editor.sent))


async def test_pi_mode_started_in_the_folder_and_after_new_session(tmp_path: Path, repo: tuple[Path, bool]) -> None:
    async with pi_mode(daemon_config(tmp_path, repo[0], "--mode", "rpc")) as pi:
        await pi.call({"id": "1", "type": "new_session"})
        await pi.call({"id": "2", "type": "prompt", "message": "run it"})
        await pi.event("agent_end")
        lines = json.dumps(pi.peer.lines)
    held(repo, lines)


async def test_lsp_following_the_editors_root_from_a_daemon_started_elsewhere(
    tmp_path: Path, repo: tuple[Path, bool]
) -> None:
    elsewhere = folder(tmp_path, "elsewhere", None)
    config = daemon_config(tmp_path, elsewhere, "--mode", "lsp")
    async with lsp_in_process(config, workspace_config=config.open_folder) as (client, editor):
        await initialize(client, repo[0], {"approvalPolicy": "auto", "answer": "message"})
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="pi.prompt", arguments=["run it"])
        )
        await editor.until(lambda: ended(client))
    where, denies = repo
    assert (where / "ran.txt").exists() is not denies
    assert not (elsewhere / "ran.txt").exists()

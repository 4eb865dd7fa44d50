"""The language server as a subprocess over real stdio: what `pi-rpc --mode lsp` advertises, the
server following the editor's root when no --cwd pinned one (the command line's business), and
each way out mid-run (exit, end of input) killing the running command before the process exits.

What the handlers do (code actions, applyEdit to open documents, progress and its cancel, the
chat, the commands, approvals) is tested in-process: tests/unit/modes/test_lsp_*_inprocess.py."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.e2e.conftest import descendants, still_running, watch
from tests.lsp.conftest import running_client
from tests.lsp.editor import (
    ON_DISK,
    Editor,
    code_actions,
    diagnostic,
    ended,
    execute,
    initialize,
    is_sleep,
    until_process,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_initialize_advertises_code_actions_and_commands(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, _ = lsp_client
    result = await client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    capabilities = result.capabilities
    assert result.server_info is not None and result.server_info.name == "pi-rpc"
    assert capabilities.code_action_provider
    assert capabilities.execute_command_provider is not None
    assert {"pi.prompt", "pi.abort", "pi.newSession", "pi.rewind"} <= set(
        capabilities.execute_command_provider.commands
    )
    sync = capabilities.text_document_sync
    assert isinstance(sync, lsp.TextDocumentSyncOptions) and sync.change == lsp.TextDocumentSyncKind.Incremental


async def test_without_cwd_the_server_works_in_the_editors_root(workspace: Path, tmp_path: Path) -> None:
    async with running_client(workspace, tmp_path, pin_cwd=False) as (client, editor):
        await initialize(client, workspace)
        uri = editor.open(workspace / "other.py", "x = 1\n")
        [fix] = [a for a in await code_actions(client, uri, [diagnostic()]) if a.title == "Fix with Pi"]
        assert fix.command is not None
        await execute(client, fix.command)
        await editor.until(lambda: ended(client))
    # The edit of the relative path greet.py landed in the root the editor named.
    assert (workspace / "greet.py").read_text() == ON_DISK.replace("Helo", "Hello")


@pytest.mark.parametrize("way_out", ["exit", "stdin closed"])
async def test_leaving_mid_run_kills_the_running_command(workspace: Path, tmp_path: Path, way_out: str) -> None:
    async with running_client(workspace, tmp_path) as (client, _):
        await initialize(client, workspace)
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="pi.prompt", arguments=["sleep please"])
        )
        server = client._server
        assert server is not None
        sleepers = await until_process(lambda: [p for p in descendants(server.pid) if is_sleep(p)])
        watched = watch(sleepers)
        if way_out == "exit":
            client.exit(None)
        else:
            assert server.stdin is not None
            server.stdin.close()
        with anyio.fail_after(30):  # a guard against a hang
            code = await server.wait()
        assert code == 0
        assert still_running(watched) == 0

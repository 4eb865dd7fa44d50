"""The LSP front end's features in-process (LspDaemon over pipes in the test's event loop, the
scripted model of tests/lsp/scripts/lsp.json, real tools): what initialize advertises, the code
actions of a document with diagnostics, "Fix with Pi" editing the open document's unsaved text by
workspace/applyEdit, answers as documents or messages, and the `.pi.md` chat."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from pi_rpc.ai.providers.faux import load_script
from pi_rpc.session.session import SessionConfig
from tests.lsp.editor import (
    ON_DISK,
    SCRIPT,
    UNSAVED,
    Editor,
    code_actions,
    diagnostic,
    ended,
    execute,
    fs_path,
    initialize,
    progress_of,
    sample_workspace,
)

from ..session.helpers import session_config
from .lsp_pipes import lsp_in_process

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return sample_workspace(tmp_path)


def scripted(workspace: Path) -> SessionConfig:
    return session_config(workspace, load_script(SCRIPT))


@pytest.fixture
async def lsp_client(workspace: Path) -> AsyncIterator[tuple[LanguageClient, Editor]]:
    async with lsp_in_process(scripted(workspace)) as started:
        yield started


async def test_initialize_advertises_code_actions_and_commands(lsp_client: tuple[LanguageClient, Editor]) -> None:
    client, _ = lsp_client
    result = await client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    capabilities = result.capabilities
    assert result.server_info is not None and result.server_info.name == "pi-rpc"
    assert capabilities.code_action_provider
    assert capabilities.execute_command_provider is not None
    assert {"pi.prompt", "pi.abort", "pi.newSession"} <= set(capabilities.execute_command_provider.commands)
    sync = capabilities.text_document_sync
    assert isinstance(sync, lsp.TextDocumentSyncOptions) and sync.change == lsp.TextDocumentSyncKind.Incremental


async def test_code_actions_carry_the_diagnostics_and_the_unsaved_code(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace, {"actions": [{"title": "Translate comments", "prompt": "Translate {file}"}]})
    uri = editor.open(workspace / "greet.py", UNSAVED)
    actions = await code_actions(client, uri, [diagnostic()])
    titles = [action.title for action in actions]
    assert titles == ["Fix with Pi", "Explain with Pi", "Refactor with Pi", "Write tests with Pi", "Translate comments"]
    fix = actions[0]
    assert fix.kind == lsp.CodeActionKind.QuickFix and list(fix.diagnostics or []) == [diagnostic()]
    assert fix.command is not None and fix.command.arguments is not None
    prompt = cast(dict[str, Any], fix.command.arguments[0])["prompt"]
    assert "- line 2: Misspelled word: Helo (spell)" in prompt
    assert 'return "Helo, " + name' in prompt  # the editor's text, not the disk's
    assert "greet.py" in prompt
    assert actions[4].command is not None and list(actions[4].command.arguments or []) == [
        {"title": "Translate comments", "prompt": "Translate greet.py"}
    ]


async def test_without_diagnostics_fix_asks_the_model_to_find_what_is_wrong(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    uri = editor.open(workspace / "greet.py", UNSAVED)
    actions = await code_actions(client, uri, [])
    assert [action.title for action in actions] == [
        "Fix with Pi",
        "Explain with Pi",
        "Refactor with Pi",
        "Write tests with Pi",
    ]
    fix = actions[0]
    assert fix.diagnostics is None and fix.command is not None and fix.command.arguments is not None
    prompt = cast(dict[str, Any], fix.command.arguments[0])["prompt"]
    assert prompt.startswith("Find and fix what is wrong in greet.py at lines 1-2:")
    assert 'return "Helo, " + name' in prompt


async def test_fix_with_pi_edits_the_open_document_with_progress(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    uri = editor.open(workspace / "greet.py", UNSAVED)
    [fix] = [a for a in await code_actions(client, uri, [diagnostic()]) if a.title == "Fix with Pi"]
    assert fix.command is not None
    assert await execute(client, fix.command) is None  # answered at once; the run goes on
    await editor.until(lambda: ended(client))
    reports = progress_of(client)
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin)
    assert reports[0].title == "Fix with Pi" and reports[0].cancellable
    assert any(isinstance(r, lsp.WorkDoneProgressReport) and r.message == "edit greet.py" for r in reports)
    assert isinstance(reports[-1], lsp.WorkDoneProgressEnd) and reports[-1].message == "Done"
    # The agent read the unsaved text (the edit found "Helo" there) and the editor applied it.
    assert editor.text(uri) == 'def greet(name):\n    return "Hello, " + name\n'
    [edit] = editor.edits
    assert edit.edit.changes is not None
    [[change]] = edit.edit.changes.values()
    assert change.range.start.line == 1 and change.range.end.line == 2  # only the changed line
    assert (workspace / "greet.py").read_text() == ON_DISK  # the disk is the editor's business
    # The answer opens as a Markdown document.
    await editor.until(lambda: client.shown_documents)
    answer = fs_path(client.shown_documents[0].uri)
    assert answer.suffix == ".md"
    assert (await anyio.Path(answer.parent).stat()).st_mode & 0o077 == 0  # private, like the sessions
    assert "Fixed: the greeting now says Hello." in await anyio.Path(answer).read_text()


@pytest.mark.parametrize("configured_by", ["initializationOptions", "didChangeConfiguration"])
async def test_answer_as_a_message_when_configured(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path, configured_by: str
) -> None:
    client, editor = lsp_client
    if configured_by == "initializationOptions":
        await initialize(client, workspace, {"answer": "message"})
    else:
        await initialize(client, workspace)
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"pi": {"answer": "message"}})
        )
    uri = editor.open(workspace / "greet.py", UNSAVED)
    [explain] = [a for a in await code_actions(client, uri, []) if a.title == "Explain with Pi"]
    assert explain.command is not None
    await execute(client, explain.command)
    await editor.until(lambda: client.messages)
    assert [m.message for m in client.messages] == ["It returns a greeting."]
    assert client.shown_documents == []


async def test_a_client_that_cannot_show_documents_gets_the_answer_as_a_message(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await client.initialize_session(
        lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=workspace.as_uri())
    )
    uri = editor.open(workspace / "greet.py", UNSAVED)
    [explain] = [a for a in await code_actions(client, uri, []) if a.title == "Explain with Pi"]
    assert explain.command is not None
    await execute(client, explain.command)
    await editor.until(lambda: client.messages)
    assert [(m.type, m.message) for m in client.messages] == [(lsp.MessageType.Info, "It returns a greeting.")]
    assert client.shown_documents == [] and client.progress_reports == {}  # no progress it cannot show


async def test_writes_to_files_not_open_go_to_disk(lsp_client: tuple[LanguageClient, Editor], workspace: Path) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    uri = editor.open(workspace / "other.py", "x = 1\n")
    [fix] = [a for a in await code_actions(client, uri, [diagnostic()]) if a.title == "Fix with Pi"]
    assert fix.command is not None
    await execute(client, fix.command)
    await editor.until(lambda: ended(client))
    assert (workspace / "greet.py").read_text() == ON_DISK.replace("Helo", "Hello")
    assert editor.edits == []


async def test_a_client_error_while_showing_the_answer_leaves_the_server_up(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client

    def refuse(params: lsp.ShowDocumentParams) -> lsp.ShowDocumentResult:
        raise RuntimeError("no windows here")

    client.protocol.fm.features[lsp.WINDOW_SHOW_DOCUMENT] = refuse  # in place of pytest-lsp's own

    await initialize(client, workspace)
    uri = editor.open(workspace / "greet.py", UNSAVED)
    [explain] = [a for a in await code_actions(client, uri, []) if a.title == "Explain with Pi"]
    assert explain.command is not None
    await execute(client, explain.command)
    await editor.until(lambda: client.messages)
    assert client.messages[0].type == lsp.MessageType.Error
    assert "no windows here" in client.messages[0].message
    result = await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="pi.newSession"))
    assert isinstance(result, dict) and result["sessionId"]


async def test_run_action_with_bad_arguments_is_invalid_params(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, _ = lsp_client
    await initialize(client, workspace)
    with pytest.raises(JsonRpcInvalidParams, match="pi.runAction: Object missing required field `prompt`"):
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="pi.runAction", arguments=[{"title": "x"}])
        )


@pytest.mark.parametrize("report_late", [False, True])
async def test_chat_file_streams_the_answer_below_the_question(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path, report_late: bool
) -> None:
    client, editor = lsp_client
    editor.report_late = report_late
    await initialize(client, workspace)
    uri = editor.open(workspace / "notes.pi.md", "### You\nWhat is greet.py for?\n", language="markdown")
    [send] = await code_actions(client, uri, [])
    assert send.title == "Send to Pi" and send.command is not None
    await execute(client, send.command)
    await editor.until(lambda: ended(client))
    expected = "### You\nWhat is greet.py for?\n\n### Pi\n\nIt says hello to you.\n\n### You\n\n"
    assert editor.text(uri) == expected
    # The header, the answer (in as many pieces as came between two edits: on a loaded machine all
    # of it may come during the header's edit; test_lsp_chat_stream.py decides the pieces), the
    # next heading.
    assert len(editor.edits) >= 3
    assert client.shown_documents == [] and client.messages == []


async def test_a_chat_with_nothing_under_the_last_you_heading_sends_nothing(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    text = "### You\nWhat is greet.py for?\n\n### Pi\n\nIt says hello to you.\n\n### You\n\n"
    uri = editor.open(workspace / "notes.pi.md", text, language="markdown")
    [send] = await code_actions(client, uri, [])
    assert send.command is not None
    await execute(client, send.command)
    await editor.until(lambda: client.messages)
    assert [m.message for m in client.messages] == ["Nothing to send: write under '### You' first"]
    assert editor.text(uri) == text and client.progress_reports == {}


async def test_send_chat_for_a_file_that_is_no_chat_says_what_it_needs(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    uri = editor.open(workspace / "greet.py", UNSAVED)
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="pi.chat", arguments=[uri]))
    await editor.until(lambda: client.messages)
    [message] = client.messages
    assert message.type == lsp.MessageType.Error
    assert message.message == "pi.chat needs the URI of an open .pi.md file"

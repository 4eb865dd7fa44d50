"""The language server end to end: document sync, code actions, a run with progress whose edit
reaches the open document by applyEdit, and cancelling the progress aborts a running command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.e2e.conftest import descendants, still_running, watch
from tests.lsp.conftest import ON_DISK, UNSAVED, Editor, initialize, running_client

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

Progress = lsp.WorkDoneProgressBegin | lsp.WorkDoneProgressReport | lsp.WorkDoneProgressEnd


async def until_process(condition: Callable[[], Any]) -> Any:
    """Processes appear with no message to wait for: look again until one does."""
    with anyio.fail_after(60):  # a guard against a hang, not a timing assertion
        while not (value := condition()):  # noqa: ASYNC110 - the kernel signals no process start
            await anyio.sleep(0.02)
    return value


def progress_of(client: LanguageClient) -> list[Progress]:
    [reports] = client.progress_reports.values()
    return cast(list[Progress], list(reports))


def ended(client: LanguageClient) -> bool:
    return any(isinstance(p, lsp.WorkDoneProgressEnd) for reports in client.progress_reports.values() for p in reports)


def diagnostic() -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=lsp.Range(start=lsp.Position(line=1, character=12), end=lsp.Position(line=1, character=18)),
        message="Misspelled word: Helo",
        source="spell",
    )


async def code_actions(client: LanguageClient, uri: str, diagnostics: list[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=2, character=0)),
            context=lsp.CodeActionContext(diagnostics=diagnostics),
        )
    )
    assert result is not None
    return [action for action in result if isinstance(action, lsp.CodeAction)]


async def execute(client: LanguageClient, command: lsp.Command) -> Any:
    return await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )


async def test_initialize_advertises_code_actions_and_commands(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
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
    answer = Path(lsp_uri_path(client.shown_documents[0].uri))
    assert answer.suffix == ".md"
    assert (await anyio.Path(answer.parent).stat()).st_mode & 0o077 == 0  # private, like the sessions
    assert "Fixed: the greeting now says Hello." in await anyio.Path(answer).read_text()


def lsp_uri_path(uri: str) -> str:
    from pygls.uris import to_fs_path

    path = to_fs_path(uri)
    assert path is not None
    return path


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


async def test_cancelling_the_progress_aborts_the_run_and_kills_its_command(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="pi.prompt", arguments=["sleep please"])
    )
    assert client._server is not None
    server_pid = client._server.pid
    sleepers = await until_process(lambda: [p for p in descendants(server_pid) if _is_sleep(p)])
    watched = watch(sleepers)
    [token] = client.progress_reports
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    await editor.until(lambda: ended(client))
    assert progress_of(client)[-1] == lsp.WorkDoneProgressEnd(message="Aborted")
    assert still_running(watched) == 0
    assert [p for p in descendants(server_pid) if _is_sleep(p)] == []


def _is_sleep(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"30"]
    except OSError:
        return False


@pytest.mark.parametrize(("answer", "applied"), [("Reject", False), ("Allow", True), (None, False)])
async def test_a_client_that_can_ask_approves_each_edit(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path, answer: str | None, applied: bool
) -> None:
    client, editor = lsp_client
    asked: list[lsp.ShowMessageRequestParams] = []

    @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)  # type: ignore[untyped-decorator]
    def ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
        asked.append(params)
        return None if answer is None else lsp.MessageActionItem(title=answer)

    capabilities = lsp.ClientCapabilities(
        window=lsp.WindowClientCapabilities(
            work_done_progress=True, show_message=lsp.ShowMessageRequestClientCapabilities()
        ),
        workspace=lsp.WorkspaceClientCapabilities(apply_edit=True),
    )
    await client.initialize_session(lsp.InitializeParams(capabilities=capabilities, root_uri=workspace.as_uri()))
    uri = editor.open(workspace / "greet.py", UNSAVED)
    [fix] = [a for a in await code_actions(client, uri, [diagnostic()]) if a.title == "Fix with Pi"]
    assert fix.command is not None
    await execute(client, fix.command)
    await editor.until(lambda: ended(client))
    [question] = asked
    assert question.message.startswith("Pi asks to run Edit ") and "greet.py" in question.message
    assert '+    return "Hello, " + name' in question.message  # the diff, from the unsaved text
    assert [item.title for item in question.actions or []] == ["Allow", "Allow always", "Reject"]
    assert (editor.text(uri) == UNSAVED.replace("Helo", "Hello")) is applied


@pytest.mark.parametrize("way_out", ["exit", "stdin closed"])
async def test_leaving_mid_run_kills_the_running_command(workspace: Path, tmp_path: Path, way_out: str) -> None:
    async with running_client(workspace, tmp_path) as (client, _):
        await initialize(client, workspace)
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="pi.prompt", arguments=["sleep please"])
        )
        server = client._server
        assert server is not None
        sleepers = await until_process(lambda: [p for p in descendants(server.pid) if _is_sleep(p)])
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
    assert len(editor.edits) > 3  # the header, the text in pieces as it came, the next heading
    assert client.shown_documents == [] and client.messages == []


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


async def test_a_prompt_while_a_run_is_going_is_refused_with_a_message(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    """The agent's one busy flag refuses a second run, from a chat or a command alike: the user is
    told in LSP's words (no streamingBehavior, which no LSP command can send), and the chat gets
    no `### Pi` heading for an answer that will not come."""
    client, editor = lsp_client
    await initialize(client, workspace)
    await execute(client, lsp.Command(title="Pi", command="pi.prompt", arguments=["sleep please"]))
    assert client._server is not None
    server_pid = client._server.pid
    await until_process(lambda: [p for p in descendants(server_pid) if _is_sleep(p)])
    [running] = client.progress_reports
    question = "### You\nWhat is greet.py for?\n"
    uri = editor.open(workspace / "notes.pi.md", question, language="markdown")
    [send] = await code_actions(client, uri, [])
    assert send.command is not None
    await execute(client, send.command)
    await execute(client, lsp.Command(title="Pi", command="pi.prompt", arguments=["and this?"]))
    await editor.until(lambda: len(client.messages) == 2)
    busy = "Pi is already answering; send again when it is done."
    assert [(m.type, m.message) for m in client.messages] == [(lsp.MessageType.Error, busy)] * 2
    assert editor.text(uri) == question
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=running))
    reports = cast(list[Progress], client.progress_reports[running])
    await editor.until(lambda: isinstance(reports[-1], lsp.WorkDoneProgressEnd))
    assert reports[-1] == lsp.WorkDoneProgressEnd(message="Aborted")

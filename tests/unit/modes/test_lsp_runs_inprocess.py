"""The LSP front end's runs in-process (LspDaemon over pipes in the test's event loop, the
scripted model of tests/lsp/scripts/lsp.json, real tools): `$/progress` and its cancel killing a
running command, the pi.prompt / pi.abort / pi.newSession commands, a second run refused while one
is going, approvals by window/showMessageRequest, and following the editor's workspace root."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from pi_rpc.modes.lsp.runs import BUSY_TEXT
from pi_rpc.session.configuration.settings import SettingsError
from pi_rpc.session.session import SessionConfig
from tests.e2e.conftest import watch
from tests.lsp.editor import (
    ON_DISK,
    UNSAVED,
    Editor,
    code_actions,
    diagnostic,
    ended,
    execute,
    initialize,
    progress_of,
    sample_workspace,
    until_process,
)

from ..session.helpers import reply, script, session_config, tool_call
from .lsp_harness import AS_MESSAGES, command, ends, gone, messages, scripted, sleepers
from .lsp_pipes import lsp_in_process

pytestmark = pytest.mark.anyio

# Answers as messages: a run's answer is then one `window/showMessage` to look for.
TEXT = {"text": "Done."}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return sample_workspace(tmp_path)


@pytest.fixture
async def lsp_client(workspace: Path) -> AsyncIterator[tuple[LanguageClient, Editor]]:
    async with lsp_in_process(scripted(workspace)) as started:
        yield started


def real(path: Path) -> str:
    return os.path.realpath(path)


def answered(client: LanguageClient, count: int) -> Callable[[], bool]:
    return lambda: len(client.messages) == count


async def test_cancelling_the_progress_aborts_the_run_and_kills_its_command(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    await command(client, "pi.prompt", "sleep please")
    watched = watch(await until_process(sleepers))
    [token] = client.progress_reports
    # The command may start before the editor has read the progress that names it.
    await editor.until(lambda: any(r.message == "bash sleep 30" for r in progress_of(client)[1:]))
    begin = progress_of(client)[0]
    assert isinstance(begin, lsp.WorkDoneProgressBegin) and begin.title == "Pi" and begin.cancellable
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    await editor.until(lambda: ended(client))
    assert progress_of(client)[-1] == lsp.WorkDoneProgressEnd(message="Aborted")
    assert await gone(watched) == 0
    assert sleepers() == []
    assert client.shown_documents == [] and client.messages == []  # an aborted run shows no answer


async def test_pi_abort_ends_the_run_and_kills_its_command(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    await command(client, "pi.prompt", "sleep please")
    watched = watch(await until_process(sleepers))
    assert await command(client, "pi.abort") is None  # answered once the run has ended
    await editor.until(lambda: ends(client))
    assert ends(client) == ["Aborted"]
    assert await gone(watched) == 0


async def test_pi_new_session_mid_run_aborts_it_and_answers_a_new_session_id(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    first = (await command(client, "pi.newSession"))["sessionId"]
    await command(client, "pi.prompt", "sleep please")
    watched = watch(await until_process(sleepers))
    second = (await command(client, "pi.newSession"))["sessionId"]
    assert first and second and second != first
    await editor.until(lambda: ends(client))
    assert ends(client) == ["Aborted"]
    assert await gone(watched) == 0


@pytest.mark.parametrize(
    "arguments",
    [("Explain greet.py",), ({"message": "Explain greet.py"},), ("Explain", "greet.py")],
    ids=["text", "object", "words"],
)
async def test_pi_prompt_takes_the_text_the_ways_editors_send_it(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path, arguments: tuple[Any, ...]
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace, AS_MESSAGES)
    assert await command(client, "pi.prompt", *arguments) is None  # answered at once; the run goes on
    await editor.until(lambda: client.messages)
    assert messages(client) == [(lsp.MessageType.Info, "It returns a greeting.")]
    assert ends(client) == ["Done"]


async def test_pi_prompt_without_text_says_what_it_needs(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    await command(client, "pi.prompt")
    await editor.until(lambda: client.messages)
    assert messages(client) == [(lsp.MessageType.Error, "pi.prompt needs the prompt text as its argument")]
    assert client.progress_reports == {}


async def test_a_second_run_while_one_is_going_is_refused_and_the_first_goes_on(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace, AS_MESSAGES)
    await command(client, "pi.prompt", "sleep please")
    watched = watch(await until_process(sleepers))
    await command(client, "pi.prompt", "Explain greet.py")
    await editor.until(lambda: ended(client))  # after the message that says why
    assert messages(client) == [(lsp.MessageType.Error, BUSY_TEXT)]
    assert ends(client) == ["Not started"]  # the refused run's progress; the first one's goes on
    assert sleepers() != []
    await command(client, "pi.abort")
    await editor.until(lambda: len(ends(client)) == 2)
    assert sorted(map(str, ends(client))) == ["Aborted", "Not started"]
    assert await gone(watched) == 0


async def test_a_chat_sent_while_a_run_is_going_is_refused_and_the_chat_is_left_alone(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    question = "### You\nWhat is greet.py for?\n"
    uri = editor.open(workspace / "notes.pi.md", question, language="markdown")
    await command(client, "pi.prompt", "sleep please")
    await until_process(sleepers)
    [send] = await code_actions(client, uri, [])
    assert send.command is not None
    await execute(client, send.command)
    await editor.until(lambda: client.messages)
    assert messages(client) == [(lsp.MessageType.Error, BUSY_TEXT)]
    assert editor.text(uri) == question and editor.edits == []
    await command(client, "pi.abort")


async def test_without_a_model_a_run_says_why_and_nothing_runs(workspace: Path) -> None:
    async with lsp_in_process(session_config(workspace, None)) as (client, editor):
        await initialize(client, workspace)
        await command(client, "pi.prompt", "Explain greet.py")
        await editor.until(lambda: ended(client))  # after the message that says why
        [(kind, text)] = messages(client)
        assert kind == lsp.MessageType.Error and "models.json" in text
        assert ends(client) == ["Not started"]
    assert (workspace / "greet.py").read_text() == ON_DISK


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


async def test_allow_always_lets_the_next_edit_run_without_asking(workspace: Path) -> None:
    edit_twice = script(
        reply("^first", [tool_call("edit", path="greet.py", edits=[{"oldText": "Helo", "newText": "Hello"}])], [TEXT]),
        reply("^second", [tool_call("edit", path="greet.py", edits=[{"oldText": "Hello", "newText": "Hi"}])], [TEXT]),
    )
    async with lsp_in_process(session_config(workspace, edit_twice)) as (client, editor):
        asked: list[lsp.ShowMessageRequestParams] = []

        @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)  # type: ignore[untyped-decorator]
        def ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem:
            asked.append(params)
            return lsp.MessageActionItem(title="Allow always")

        capabilities = lsp.ClientCapabilities(
            window=lsp.WindowClientCapabilities(show_message=lsp.ShowMessageRequestClientCapabilities()),
            workspace=lsp.WorkspaceClientCapabilities(apply_edit=True),
        )
        options = {"answer": "message"}
        params = lsp.InitializeParams(
            capabilities=capabilities, root_uri=workspace.as_uri(), initialization_options=options
        )
        await client.initialize_session(params)
        uri = editor.open(workspace / "greet.py", UNSAVED)
        for number, prompt in enumerate(("first edit", "second edit"), start=1):
            await command(client, "pi.prompt", prompt)
            await editor.until(answered(client, number))  # each answer is a message
        assert len(asked) == 1
        assert editor.text(uri) == UNSAVED.replace("Helo", "Hi")


async def test_shutdown_mid_run_aborts_it_and_kills_its_command_before_answering(
    lsp_client: tuple[LanguageClient, Editor], workspace: Path
) -> None:
    client, editor = lsp_client
    await initialize(client, workspace)
    await command(client, "pi.prompt", "sleep please")
    watched = watch(await until_process(sleepers))
    await client.shutdown_async(None)
    await editor.until(lambda: ends(client))
    assert ends(client) == ["Aborted"]
    assert await gone(watched) == 0


async def test_without_a_pinned_folder_the_session_follows_the_editors_root(workspace: Path, tmp_path: Path) -> None:
    started_in = tmp_path / "home"
    started_in.mkdir()
    followed: list[str] = []

    def follow(root: str) -> SessionConfig:
        followed.append(root)
        return scripted(Path(root))

    async with lsp_in_process(scripted(started_in), workspace_config=follow) as (client, editor):
        await initialize(client, workspace)
        uri = editor.open(workspace / "other.py", "x = 1\n")
        [fix] = [a for a in await code_actions(client, uri, [diagnostic()]) if a.title == "Fix with Pi"]
        assert fix.command is not None
        await execute(client, fix.command)
        await editor.until(lambda: ended(client))
    assert followed == [real(workspace)]
    # The edit of the relative path greet.py landed in the root the editor named.
    assert (workspace / "greet.py").read_text() == ON_DISK.replace("Helo", "Hello")


async def test_a_root_whose_settings_are_broken_leaves_the_session_where_it_was(
    workspace: Path, tmp_path: Path
) -> None:
    started_in = tmp_path / "home"
    started_in.mkdir()

    def broken(root: str) -> SessionConfig:
        raise SettingsError(f"{root}/.pi/settings.json: not JSON")

    async with lsp_in_process(scripted(started_in), workspace_config=broken) as (client, editor):
        await initialize(client, workspace)
        await editor.until(lambda: client.messages)
        [(kind, text)] = messages(client)
        assert kind == lsp.MessageType.Warning
        assert text == f"Pi stays in {started_in}: {real(workspace)}/.pi/settings.json: not JSON"

"""Requests the LSP front end makes of the editor, against a client that behaves as Emacs'
lsp-mode 8.0 does: it declares no message actions (`window.showMessage`), yet answers
`window/showMessageRequest`; and it drops, never answering, a server request that arrives in the
same write as a reply. In-process (LspDaemon over pipes), the deadlines made small so nothing
waits long; nothing here measures time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from pi_rpc.ai.providers.faux import load_script
from pi_rpc.modes.editor_requests import EditorDeadlines
from pi_rpc.session.configuration.config import ApprovalConfig
from pi_rpc.session.session import SessionConfig
from tests.e2e.conftest import watch
from tests.lsp.editor import (
    ON_DISK,
    SCRIPT,
    UNSAVED,
    Editor,
    code_actions,
    diagnostic,
    ended,
    execute,
    is_sleep,
    sample_workspace,
    until_process,
)

from ..session.helpers import session_config
from .lsp_harness import command, ends, gone, messages, sleepers
from .lsp_pipes import lsp_in_process

pytestmark = pytest.mark.anyio

# Small deadlines: a request that is never answered gives up at once, whatever the machine's speed.
QUICK = EditorDeadlines(files=5, question=0.05, progress=0.05)

# What lsp-mode declares: progress and edits, and nothing about message actions.
LSP_MODE_CAPABILITIES = lsp.ClientCapabilities(
    window=lsp.WindowClientCapabilities(work_done_progress=True),
    workspace=lsp.WorkspaceClientCapabilities(apply_edit=True),
)


class LspModeClient:
    """Drops each server request that arrives right after a reply to one of the client's requests
    (what lsp-mode does with one that shares the reply's write), and any request of the methods in
    `never_answered`; the dropped requests are kept for the test to look at."""

    def __init__(self, client: LanguageClient, never_answered: frozenset[str] = frozenset()) -> None:
        self.dropped: list[str] = []
        handle = client.protocol.handle_message
        after_reply = False

        def handled(message: Any) -> None:
            nonlocal after_reply
            method: str | None = getattr(message, "method", None)
            is_request = method is not None and getattr(message, "id", None) is not None
            if method is not None and is_request and (after_reply or method in never_answered):
                self.dropped.append(method)
                after_reply = False
                return
            after_reply = method is None  # a response to one of ours
            handle(message)

        client.protocol.handle_message = handled  # type: ignore[method-assign]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return sample_workspace(tmp_path)


def scripted(workspace: Path, approvals: ApprovalConfig | None = None) -> SessionConfig:
    return session_config(workspace, load_script(SCRIPT), approvals=approvals)


@asynccontextmanager
async def lsp_mode(
    workspace: Path,
    options: dict[str, Any],
    never_answered: frozenset[str] = frozenset(),
    approval_timeout: float | None = None,
) -> AsyncIterator[tuple[LanguageClient, Editor, LspModeClient]]:
    config = scripted(workspace, ApprovalConfig(timeout=approval_timeout))
    async with lsp_in_process(config, deadlines=QUICK) as (client, editor):
        like = LspModeClient(client, never_answered)
        params = lsp.InitializeParams(
            capabilities=LSP_MODE_CAPABILITIES, root_uri=workspace.as_uri(), initialization_options=options
        )
        await client.initialize_session(params)
        yield client, editor, like


def answering(client: LanguageClient, title: str) -> list[lsp.ShowMessageRequestParams]:
    asked: list[lsp.ShowMessageRequestParams] = []

    @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)  # type: ignore[untyped-decorator]
    def ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem:
        asked.append(params)
        return lsp.MessageActionItem(title=title)

    return asked


async def fix_with_pi(client: LanguageClient, editor: Editor, workspace: Path) -> str:
    uri = editor.open(workspace / "greet.py", UNSAVED)
    [fix] = [a for a in await code_actions(client, uri, [diagnostic()]) if a.title == "Fix with Pi"]
    assert fix.command is not None
    await execute(client, fix.command)
    return uri


def said(client: LanguageClient, count: int) -> Callable[[], bool]:
    return lambda: len(client.messages) >= count


async def test_pi_prompt_runs_and_finishes_when_the_client_drops_the_progress_request(workspace: Path) -> None:
    async with lsp_mode(workspace, {"answer": "message"}) as (client, editor, like):
        await command(client, "pi.prompt", "Explain greet.py")
        await editor.until(said(client, 1))
        assert messages(client) == [(lsp.MessageType.Info, "It returns a greeting.")]
        assert like.dropped == [lsp.WINDOW_WORK_DONE_PROGRESS_CREATE]
        assert client.progress_reports == {}  # the run went on without progress
        # The next run asks again (a client may answer it), and goes on again when it does not.
        await command(client, "pi.prompt", "Explain greet.py")
        await editor.until(said(client, 2))
        assert like.dropped == [lsp.WINDOW_WORK_DONE_PROGRESS_CREATE] * 2


async def test_an_edit_under_ask_is_asked_of_a_client_that_declares_no_message_actions(workspace: Path) -> None:
    async with lsp_mode(workspace, {"approvalPolicy": "ask", "answer": "message"}) as (client, editor, like):
        asked = answering(client, "Allow")
        uri = await fix_with_pi(client, editor, workspace)
        await editor.until(said(client, 1))  # the answer, as a message
        [question] = asked
        assert question.message.startswith("Pi asks to run Edit ") and "greet.py" in question.message
        assert editor.text(uri) == UNSAVED.replace("Helo", "Hello")


async def test_with_no_policy_configured_a_client_that_declares_nothing_is_asked_too(workspace: Path) -> None:
    async with lsp_mode(workspace, {"answer": "message"}) as (client, editor, _):
        asked = answering(client, "Reject")
        uri = await fix_with_pi(client, editor, workspace)
        await editor.until(said(client, 1))
        assert len(asked) == 1
        assert editor.text(uri) == UNSAVED  # rejected: nothing ran unasked


@pytest.mark.parametrize(
    ("configured", "deadline"),
    [(None, "0.05"), (0.04, "0.04")],
    ids=["the default deadline", "permissions.timeoutSeconds"],
)
async def test_a_question_never_answered_rejects_the_edit_and_says_so(
    workspace: Path, configured: float | None, deadline: str
) -> None:
    never = frozenset({lsp.WINDOW_SHOW_MESSAGE_REQUEST})
    options = {"approvalPolicy": "ask", "answer": "message"}
    async with lsp_mode(workspace, options, never, configured) as (client, editor, like):
        uri = await fix_with_pi(client, editor, workspace)
        await editor.until(said(client, 2))  # the notice, then the run's answer
        assert lsp.WINDOW_SHOW_MESSAGE_REQUEST in like.dropped
        notice = client.messages[0]
        assert notice.type == lsp.MessageType.Warning
        assert notice.message.startswith("Pi did not run Edit ") and "greet.py" in notice.message
        assert notice.message.endswith(f"no answer to the question within {deadline} s.")
        assert editor.text(uri) == UNSAVED
    assert (workspace / "greet.py").read_text() == ON_DISK


async def test_a_chat_ended_by_shutdown_reports_aborted(workspace: Path) -> None:
    async with lsp_in_process(scripted(workspace), deadlines=QUICK) as (client, editor):
        capabilities = lsp.ClientCapabilities(
            window=lsp.WindowClientCapabilities(work_done_progress=True),
            workspace=lsp.WorkspaceClientCapabilities(apply_edit=True),
        )
        await client.initialize_session(
            lsp.InitializeParams(
                capabilities=capabilities,
                root_uri=workspace.as_uri(),
                initialization_options={"approvalPolicy": "auto"},
            )
        )
        uri = editor.open(workspace / "notes.pi.md", "### You\nsleep please\n", language="markdown")
        [send] = await code_actions(client, uri, [])
        assert send.command is not None
        await execute(client, send.command)
        watched = watch(await until_process(lambda: [pid for pid in sleepers() if is_sleep(pid)]))
        await client.shutdown_async(None)
        await editor.until(lambda: ended(client))
        assert ends(client) == ["Aborted"]
        assert await gone(watched) == 0

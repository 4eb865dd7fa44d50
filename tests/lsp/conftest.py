"""pi-rpc --mode lsp as a subprocess over real pipes, driven by pytest-lsp's client (pygls' own
test client). The client plays an editor: it keeps the documents it opened and applies the
server's `workspace/applyEdit` to them, reporting each change by didChange as editors do."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pygls.workspace import TextDocument
from pytest_lsp import LanguageClient
from pytest_lsp.client import make_test_lsp_client

from tests.e2e.conftest import daemon_env

SCRIPTS = Path(__file__).parent / "scripts"

# On disk the file is fine apart from the typo; the editor holds an unsaved version with more.
ON_DISK = 'def greet():\n    return "Helo"\n'
UNSAVED = 'def greet(name):\n    return "Helo, " + name\n'


class Editor:
    """The open documents of the test client, changed by the server's applyEdit."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.documents: dict[str, TextDocument] = {}
        self.edits: list[lsp.ApplyWorkspaceEditParams] = []
        self.inbox: Inbox | None = None
        # Like Neovim's debounce: report each applied edit late, after the answer to the next one.
        self.report_late = False
        self._unreported: dict[str, list[lsp.TextDocumentContentChangePartial]] = {}

    async def until(self, condition: Callable[[], Any]) -> Any:
        """`condition()` once it is true, waiting for the server's messages meanwhile."""
        assert self.inbox is not None
        return await self.inbox.until(condition)

    def open(self, path: Path, text: str, language: str = "python") -> str:
        uri = path.as_uri()
        self.documents[uri] = TextDocument(uri, text, version=1, language_id=language)
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
            )
        )
        return uri

    def text(self, uri: str) -> str:
        return self.documents[uri].source

    def apply(self, params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        self.edits.append(params)
        for uri, edits in (params.edit.changes or {}).items():
            document = self.documents.get(uri)
            if document is None:
                return lsp.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{uri} is not open")
            changes = [
                lsp.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text)
                for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
            ]
            for change in changes:
                document.apply_change(change)
            if not self.report_late:
                self.report(uri, changes)
                continue
            earlier = self._unreported.pop(uri, [])
            self._unreported[uri] = changes
            if earlier:  # sent after this answer has gone out
                asyncio.get_running_loop().call_soon(self.report, uri, earlier)
        return lsp.ApplyWorkspaceEditResult(applied=True)

    def report(self, uri: str, changes: list[lsp.TextDocumentContentChangePartial]) -> None:
        document = self.documents[uri]
        document.version = (document.version or 0) + 1
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=document.version),
                content_changes=changes,
            )
        )


class Inbox:
    """Wakes a waiting test whenever a message from the server has been handled."""

    def __init__(self, client: LanguageClient) -> None:
        self._arrived = anyio.Event()
        handle = client.protocol.handle_message

        def handled(message: Any) -> None:
            handle(message)
            self._arrived.set()
            self._arrived = anyio.Event()

        client.protocol.handle_message = handled  # type: ignore[method-assign]

    async def until(self, condition: Callable[[], Any]) -> Any:
        with anyio.fail_after(60):  # a guard against a hang, not a timing assertion
            while not (value := condition()):
                await self._arrived.wait()
        return value


CAPABILITIES = lsp.ClientCapabilities(
    window=lsp.WindowClientCapabilities(
        work_done_progress=True, show_document=lsp.ShowDocumentClientCapabilities(support=True)
    ),
    workspace=lsp.WorkspaceClientCapabilities(apply_edit=True),
)


def _command_or_code_action(raw: dict[str, Any], _: type) -> lsp.Command | lsp.CodeAction:
    """lsprotocol 2025.0.0 takes any object with a "command" key for a Command, so a CodeAction
    that carries one comes out as a Command with the whole action as its name; editors look at
    the type of "command" instead, and so does this."""
    converter = _CONVERTER
    if isinstance(raw.get("command"), str):
        return cast(lsp.Command, converter.structure(raw, lsp.Command))
    return cast(lsp.CodeAction, converter.structure(raw, lsp.CodeAction))


_CONVERTER = default_converter()  # type: ignore[no-untyped-call]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "greet.py").write_text(ON_DISK)
    return ws


@contextlib.asynccontextmanager
async def running_client(
    workspace: Path, tmp_path: Path, *, pin_cwd: bool = True
) -> AsyncIterator[tuple[LanguageClient, Editor]]:
    """The daemon with the test script; `pin_cwd=False`: no --cwd, started in another folder."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = daemon_env(home)
    env["PI_RPC_SESSION_DIR"] = str(tmp_path / "sessions")
    client = make_test_lsp_client()
    client.protocol._converter.register_structure_hook(lsp.Command | lsp.CodeAction, _command_or_code_action)
    editor = Editor(client)
    editor.inbox = Inbox(client)

    @client.feature(lsp.WORKSPACE_APPLY_EDIT)  # type: ignore[untyped-decorator]
    def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        return editor.apply(params)

    cwd_args = ["--cwd", str(workspace)] if pin_cwd else []
    await client.start_io(
        sys.executable,
        "-m",
        "pi_rpc",
        "--mode",
        "lsp",
        *cwd_args,
        "--script",
        str(SCRIPTS / "lsp.json"),
        env=env,
        cwd=str(home),
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


async def initialize(client: LanguageClient, workspace: Path, options: dict[str, Any] | None = None) -> None:
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=CAPABILITIES,
            root_uri=workspace.as_uri(),
            initialization_options=options if options is not None else {"approvalPolicy": "auto"},
        )
    )

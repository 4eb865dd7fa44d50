"""The editor the LSP tests play, over whichever transport the tier uses (a daemon subprocess in
tests/lsp, the daemon in the test's own event loop in tests/unit/modes): pytest-lsp's client
(pygls' own test client) that keeps the documents it opened and applies the server's
`workspace/applyEdit` to them, reporting each change by didChange as editors do; and the requests
the tests make of the server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import anyio
from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument
from pytest_lsp import LanguageClient
from pytest_lsp.client import make_test_lsp_client

SCRIPTS = Path(__file__).parent / "scripts"
SCRIPT = SCRIPTS / "lsp.json"

# On disk the file is fine apart from the typo; the editor holds an unsaved version with more.
ON_DISK = 'def greet():\n    return "Helo"\n'
UNSAVED = 'def greet(name):\n    return "Helo, " + name\n'

Progress = lsp.WorkDoneProgressBegin | lsp.WorkDoneProgressReport | lsp.WorkDoneProgressEnd


def sample_workspace(tmp_path: Path) -> Path:
    """The workspace the script's tool calls work in: greet.py, as on disk."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "greet.py").write_text(ON_DISK)
    return ws


class Editor:
    """The open documents of the test client, changed by the server's applyEdit."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.documents: dict[str, TextDocument] = {}
        self.edits: list[lsp.ApplyWorkspaceEditParams] = []
        self.inbox = Inbox(client)
        # Like Neovim's debounce: report each applied edit late, after the answer to the next one.
        self.report_late = False
        self._unreported: dict[str, list[lsp.TextDocumentContentChangePartial]] = {}

    async def until(self, condition: Callable[[], Any]) -> Any:
        """`condition()` once it is true, waiting for the server's messages meanwhile."""
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


def new_client() -> tuple[LanguageClient, Editor]:
    """The test client, not connected yet, and the editor state it keeps."""
    client = make_test_lsp_client()
    client.protocol._converter.register_structure_hook(lsp.Command | lsp.CodeAction, _command_or_code_action)
    editor = Editor(client)

    @client.feature(lsp.WORKSPACE_APPLY_EDIT)  # type: ignore[untyped-decorator]
    def apply_edit(params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        return editor.apply(params)

    return client, editor


def _command_or_code_action(raw: dict[str, Any], _: type) -> lsp.Command | lsp.CodeAction:
    """lsprotocol 2025.0.0 takes any object with a "command" key for a Command, so a CodeAction
    that carries one comes out as a Command with the whole action as its name; editors look at
    the type of "command" instead, and so does this."""
    converter = _CONVERTER
    if isinstance(raw.get("command"), str):
        return cast(lsp.Command, converter.structure(raw, lsp.Command))
    return cast(lsp.CodeAction, converter.structure(raw, lsp.CodeAction))


_CONVERTER = default_converter()  # type: ignore[no-untyped-call]


async def initialize(client: LanguageClient, workspace: Path, options: dict[str, Any] | None = None) -> None:
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=CAPABILITIES,
            root_uri=workspace.as_uri(),
            initialization_options=options if options is not None else {"approvalPolicy": "auto"},
        )
    )


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


async def until_process(condition: Callable[[], Any]) -> Any:
    """Processes appear with no message to wait for: look again until one does."""
    with anyio.fail_after(60):  # a guard against a hang, not a timing assertion
        while not (value := condition()):  # noqa: ASYNC110 - the kernel signals no process start
            await anyio.sleep(0.02)
    return value


def is_sleep(pid: int) -> bool:
    """The script's `sleep 30` command (tests/lsp/scripts/lsp.json, "sleep please")."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"30"]
    except OSError:
        return False


def fs_path(uri: str) -> Path:
    path = to_fs_path(uri)
    assert path is not None
    return Path(path)

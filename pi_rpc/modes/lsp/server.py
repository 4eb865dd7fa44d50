"""`pi-rpc --mode lsp`: the agent as a language server, on pygls' `LanguageServer`.

pygls reads and dispatches the messages (its own reader loop, run here inside our task group so
the session's runs and the server share one event loop); its writer is our non-blocking sink on
the private protocol fd (modes/stdio.py), so a tool's output can never reach the LSP stream.
`exit`, end of stdin, or SIGTERM/SIGINT/SIGHUP end the daemon (`serve`, modes/daemon.py: abort the
run, kill what the tools started, flush).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Generator, Sequence
from typing import Any

import anyio
import anyio.abc
import msgspec
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.io_ import StdinAsyncReader, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

import pi_rpc
from pi_rpc.modes.daemon import daemon_tables, serve
from pi_rpc.modes.editor_requests import DEFAULT_DEADLINES, EditorDeadlines
from pi_rpc.modes.lsp.actions import RUN_ACTION, ActionArgs, action_context, code_actions
from pi_rpc.modes.lsp.approvals import message_approver
from pi_rpc.modes.lsp.chat import CHAT_SUFFIX, SEND_CHAT, USER_HEADING, ChatStream, is_chat, last_user_block
from pi_rpc.modes.lsp.client_requests import request
from pi_rpc.modes.lsp.documents import OpenDocuments
from pi_rpc.modes.lsp.options import LspOptions, UserAction, parse_options
from pi_rpc.modes.lsp.rewind import REWIND, Rewinds
from pi_rpc.modes.lsp.runs import Runs, refusal_text
from pi_rpc.modes.stdio import StdoutSink
from pi_rpc.session import SESSION_REFUSALS, AgentSession, SessionConfig, Step
from pi_rpc.tools import EditorRequestError, ProcessTables

_log = logging.getLogger(__name__)


class PiLspProtocol(LanguageServerProtocol):
    """pygls' LSP protocol, except that `exit` ends our daemon instead of calling sys.exit
    from inside the event loop (which would skip killing the tools' processes)."""

    on_exit: Callable[[], None] | None = None

    @lsp_method(lsp.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        if self.on_exit is not None:
            self.on_exit()
        yield from ()  # pygls drives built-in handlers as generators


class SinkWriter:
    """pygls' writer interface over our sink (pygls frames the messages itself)."""

    def __init__(self, sink: StdoutSink) -> None:
        self._sink = sink

    def write(self, data: bytes) -> None:
        self._sink.send(data)

    def close(self) -> None:
        pass


WorkspaceConfig = Callable[[str], SessionConfig]


class LspDaemon:
    """The LSP front end (`serve` in modes/daemon.py runs it); pygls reads and dispatches.

    `workspace_config`: the session's configuration for another workspace folder, to follow the
    editor's root (its `rootUri` or first workspace folder) when no `--cwd` pinned one; None: keep
    `config`'s."""

    def __init__(
        self,
        config: SessionConfig,
        workspace_config: WorkspaceConfig | None = None,
        stdin_fd: int = 0,
        stdout_fd: int | None = None,
        process_tables: ProcessTables | None = None,
        deadlines: EditorDeadlines = DEFAULT_DEADLINES,
    ) -> None:
        self.config = config
        self.deadlines = deadlines
        self.workspace_config = workspace_config
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.process_tables = daemon_tables(process_tables, config)

    async def run(self, warm_up: Sequence[Step] = ()) -> None:
        await serve(self, self.process_tables, self.stdout_fd, warm_up)

    def frame(self, body: bytes) -> bytes:
        return body  # pygls frames the messages itself

    async def start(self, tasks: anyio.abc.TaskGroup, sink: StdoutSink, stop: anyio.Event) -> None:
        self._server = server = LanguageServer(
            "pi-rpc",
            pi_rpc.__version__,
            protocol_cls=PiLspProtocol,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
        )
        protocol = server.protocol
        assert isinstance(protocol, PiLspProtocol)
        protocol.on_exit = stop.set
        protocol.set_writer(SinkWriter(sink))
        self._front_end = LspFrontEnd(
            server, AgentSession(self.config, tasks), tasks, self.workspace_config, self.deadlines
        )

    async def read(self) -> None:
        server = self._server
        stdin = os.fdopen(self.stdin_fd, "rb", closefd=False)
        reader = StdinAsyncReader(stdin, server.thread_pool)
        await run_async(threading.Event(), reader, server.protocol, logger=_log)
        _log.info("stdin closed; exiting")

    async def close(self) -> None:
        await self._front_end.session.close()  # the one it holds now: following the root replaces it

    async def release(self) -> None:
        pass  # pygls writes through our sink: nothing stands between it and the pipe


class LspFrontEnd:
    """The LSP features and commands, each a thin call into the session."""

    def __init__(
        self,
        server: LanguageServer,
        session: AgentSession,
        tasks: anyio.abc.TaskGroup,
        workspace_config: WorkspaceConfig | None = None,
        deadlines: EditorDeadlines = DEFAULT_DEADLINES,
    ) -> None:
        self.server = server
        self.session = session
        self.deadlines = deadlines
        self.runs = Runs(server, session, tasks, deadlines)
        self.rewinds = Rewinds(server, lambda: self.session, self.runs, tasks, deadlines)
        self._tasks = tasks
        self._workspace_config = workspace_config
        self.user_actions: list[UserAction] = []
        self.documents: OpenDocuments | None = None
        self._register()

    def follow_root(self) -> None:
        """Work in the editor's workspace root, unless `--cwd` pinned the folder (before any run:
        the session is replaced, not moved)."""
        workspace = self.server.workspace
        folders = list(workspace.folders.values())
        root = workspace.root_path or (to_fs_path(folders[0].uri) if folders else None)
        if self._workspace_config is None or not root or not os.path.isdir(root):
            return
        if os.path.realpath(root) == os.path.realpath(self.session.cwd):
            return
        try:
            config = self._workspace_config(os.path.realpath(root))
        except Exception as exc:  # the folder's settings are broken: stay where we are, and say why
            self.runs.show_message(f"Pi stays in {self.session.cwd}: {exc}", lsp.MessageType.Warning)
            return
        self.session = self.runs.session = AgentSession(config, self._tasks)

    def apply(self, options: LspOptions) -> None:
        session = self.session
        if options.provider is not msgspec.UNSET or options.model is not msgspec.UNSET:
            current = session.current_model.model
            provider = options.provider or (current.provider if current else "")
            model = options.model or (current.id if current else "")
            try:
                session.current_model.set_model(str(provider), str(model))
            except SESSION_REFUSALS as exc:  # no such model
                self.runs.show_message(f"Pi: {refusal_text(exc)}", lsp.MessageType.Error)
        if options.tools is not msgspec.UNSET:
            session.set_active_tools(options.tools)
        if options.approval_policy is not msgspec.UNSET:
            session.set_approval_policy(options.approval_policy)
        if options.answer is not msgspec.UNSET:
            self.runs.answer_target = options.answer
        if options.actions is not msgspec.UNSET:
            self.user_actions = list(options.actions)

    async def _apply_edit(self, params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        result = await request(self.server, lsp.WORKSPACE_APPLY_EDIT, params, self.deadlines.files)
        if not isinstance(result, lsp.ApplyWorkspaceEditResult):
            raise EditorRequestError(f"the editor answered {lsp.WORKSPACE_APPLY_EDIT} with {result!r}")
        return result

    def _register(self) -> None:
        server = self.server

        @server.feature(lsp.INITIALIZE)
        def initialize(params: lsp.InitializeParams) -> None:
            self.follow_root()
            self.documents = OpenDocuments(server.workspace, self._apply_edit)
            self.session.set_editor_files(self.documents)
            # Every client is asked (base protocol); the policy becomes "ask" unless configured.
            approver = message_approver(
                server, self.deadlines, self.runs.show_message, lambda: self.session.approvals.timeout
            )
            self.session.set_approver(approver)
            self.apply(parse_options(params.initialization_options))

        @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
        def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
            self.apply(parse_options(params.settings))

        @server.feature(lsp.SHUTDOWN)
        async def shutdown(*args: Any) -> None:
            self.runs.shutting_down = True
            await self.session.abort()

        kinds = [lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite, lsp.CodeActionKind.Empty]

        @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=kinds))
        def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
            documents = self.documents
            if documents is None:
                return []
            document = server.workspace.get_text_document(params.text_document.uri)
            text = documents.text_of(document)
            if is_chat(document.path):
                send = lsp.Command(title="Send to Pi", command=SEND_CHAT, arguments=[document.uri])
                return [lsp.CodeAction(title="Send to Pi", kind=lsp.CodeActionKind.Empty, command=send)]
            context = action_context(
                text,
                document.path,
                self.session.cwd,
                document.language_id or "",
                params.range,
                params.context.diagnostics,
            )
            return code_actions(context, params.context.diagnostics, self.user_actions)

        @server.command(SEND_CHAT)
        def send_chat(*args: Any) -> None:
            uri = args[0] if args and isinstance(args[0], str) else None
            documents = self.documents
            if uri is None or documents is None or not is_chat(uri):
                self.runs.show_message(
                    f"{SEND_CHAT} needs the URI of an open {CHAT_SUFFIX} file", lsp.MessageType.Error
                )
                return
            document = server.workspace.get_text_document(uri)
            question = last_user_block(documents.text_of(document))
            if not question:
                self.runs.show_message(f"Nothing to send: write under {USER_HEADING!r} first", lsp.MessageType.Info)
                return
            self.runs.start("Pi", question, ChatStream(documents, document.path))

        @server.command(RUN_ACTION)
        def run_action(*args: Any) -> None:
            try:
                action = msgspec.convert(args[0] if args else None, ActionArgs)
            except msgspec.ValidationError as exc:
                raise JsonRpcInvalidParams(f"{RUN_ACTION}: {exc}") from exc
            self.runs.start(action.title, action.prompt)

        @server.command("pi.prompt")
        def prompt(*args: Any) -> None:
            text = _prompt_text(args)
            if not text:
                self.runs.show_message("pi.prompt needs the prompt text as its argument", lsp.MessageType.Error)
                return
            self.runs.start("Pi", text)

        @server.command(REWIND)
        async def rewind(*args: Any) -> Any:
            return await self.rewinds.command(args)

        @server.command("pi.abort")
        async def abort(*args: Any) -> None:
            await self.session.abort()

        @server.command("pi.newSession")
        async def new_session(*args: Any) -> dict[str, str]:
            return {"sessionId": await self.session.new_session()}


def _prompt_text(args: tuple[Any, ...]) -> str:
    """`pi.prompt "text"`, `pi.prompt {"message": "text"}`, or the words as separate arguments
    (how Helix's `:lsp-workspace-command pi.prompt fix the tests` sends them)."""
    if len(args) == 1 and isinstance(args[0], dict):
        return str(args[0].get("message", ""))
    return " ".join(str(arg) for arg in args).strip()

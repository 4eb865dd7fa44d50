"""The ACP agent side: one AgentSession per ACP session; each method maps names and payloads.

Runs, tools, aborts and persistence are the session's; this module only translates. Updates are
written synchronously from the session's event listener, so an editor sees them in event order
and always before the `session/prompt` response that ends the turn.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec
from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import (
    SessionUpdate,
    update_agent_message_text,
    update_available_commands,
    update_current_mode,
)
from acp.meta import CLIENT_METHODS
from acp.schema import (
    AgentCapabilities,
    AudioContentBlock,
    AuthenticateResponse,
    AuthMethodAgent,
    BlobResourceContents,
    ClientCapabilities,
    CloseSessionResponse,
    ConfigOptionUpdate,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionNotification,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    StopReason,
    TextContentBlock,
    UsageUpdate,
)
from acp.utils import serialize_params

import pi_rpc
from pi_rpc.agent import AgentEvent, MessageUpdate, ToolExecutionUpdate
from pi_rpc.ai import ImageContent, TextDeltaEvent, ThinkingDeltaEvent, known_providers, no_model_message
from pi_rpc.modes.acp.client_side import AcpSessionClient
from pi_rpc.modes.acp.commands import available_commands, run_command
from pi_rpc.modes.acp.config_options import config_options, set_config_option
from pi_rpc.modes.acp.connection import ClientConnection
from pi_rpc.modes.acp.errors import SESSION_REFUSALS, auth_required, run_failed, session_error, session_not_found
from pi_rpc.modes.acp.mcp_servers import McpServer, server_configs, status_meta
from pi_rpc.modes.acp.permissions import mode_policy, session_modes
from pi_rpc.modes.acp.rewind import PermissionPicker
from pi_rpc.modes.acp.session_info import info_update, usage_update
from pi_rpc.modes.acp.terminal_output import wants_terminal_output
from pi_rpc.modes.acp.updates import UpdateMapper, transcript_updates
from pi_rpc.modes.daemon import daemon_tables
from pi_rpc.modes.editor_requests import DEFAULT_DEADLINES
from pi_rpc.modes.writer import StdoutSink
from pi_rpc.session import (
    AgentSession,
    ApprovalDecision,
    RuleError,
    SessionConfig,
    SettingsError,
    folder_opener,
    list_sessions,
)
from pi_rpc.tools import ProcessTables

_log = logging.getLogger(__name__)

PromptBlock = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)
Send = Callable[[dict[str, Any]], None]
# (key, text, message for a text): a streamed chunk the writer may merge with the previous chunk
# of the same key while the client is behind (modes/writer.py).
SendDelta = Callable[[Hashable, str, Callable[[str], dict[str, Any]]], None]
# The SDK helpers' SessionUpdate lacks the newer kinds that a SessionNotification carries.
AnyUpdate = SessionUpdate | ConfigOptionUpdate | UsageUpdate

# Our run outcomes as ACP stop reasons; "error" is answered as a JSON-RPC error instead.

STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "toolUse": "end_turn",
    "length": "max_tokens",
    "aborted": "cancelled",
}


class AcpAgent:
    """What the SDK's router calls (acp.interfaces.Agent); unimplemented methods answer -32601."""

    def __init__(
        self,
        config: SessionConfig,
        tasks: anyio.abc.TaskGroup,
        send: Send,
        send_delta: SendDelta | None = None,
        process_tables: ProcessTables | None = None,
        sink: StdoutSink | None = None,
    ) -> None:
        self.config = config
        self.process_tables = daemon_tables(process_tables, config)
        # Every session is made for its folder the one way (session/configuration/factory.py).
        self._open_folder = folder_opener(config, self.process_tables)
        self.tasks = tasks
        self.send = send
        self.send_delta = send_delta
        # The writer under `send`: while its client is far behind, the model's stream holds and
        # live tool snapshots are skipped (modes/writer.py). None: a test's editor, never behind.
        self.sink = sink
        self.sessions: dict[str, AgentSession] = {}
        self.conn: ClientConnection | None = None  # the SDK's, for requests to the client
        self.deadlines = DEFAULT_DEADLINES  # of the requests to the client (modes/editor_requests.py)
        self.client_capabilities = ClientCapabilities()
        self._prompts = 0
        self._pickers: dict[str, PermissionPicker] = {}  # by session: a slash command's, while it runs
        self._idle = anyio.Event()
        self._idle.set()

    def on_connect(self, conn: ClientConnection) -> None:
        """The SDK hands us the client connection: requests to the client (permission, files) go
        through it; every update goes out through `send` instead, in event order."""
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        if client_capabilities is not None:
            self.client_capabilities = client_capabilities
        return InitializeResponse(
            # ACP: echo the client's version when we speak it, else answer with ours.
            protocol_version=protocol_version if protocol_version == PROTOCOL_VERSION else PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            agent_info=Implementation(name="pi-rpc", title="Pi", version=pi_rpc.__version__),
            auth_methods=[*auth_methods()],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """Keys come from the environment the editor starts us with: nothing to do once a model
        is configured; otherwise the same auth-required error a prompt gets."""
        if method_id not in {method.id for method in auth_methods()}:
            raise RequestError.invalid_params({"details": f"Unknown auth method: {method_id}"})
        if self.config.models.choice is None:
            raise auth_required(no_model_message())
        return AuthenticateResponse()

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session = self._open(cwd)
        session.history.save()  # listed and loadable before its first prompt, here and after a restart
        meta = await self._start_mcp(session, mcp_servers)
        self._register(session.history.session_id, session)
        return NewSessionResponse(
            session_id=session.history.session_id,
            modes=session_modes(session.approvals.policy),
            config_options=[*config_options(session)],
            field_meta=meta,
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        session, meta = await self._load(cwd, session_id, mcp_servers, replay=True)
        return LoadSessionResponse(
            modes=session_modes(session.approvals.policy), config_options=[*config_options(session)], field_meta=meta
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        """`session/load` without the replay: the client still shows the conversation."""
        session, meta = await self._load(cwd, session_id, mcp_servers, replay=False)
        return ResumeSessionResponse(
            modes=session_modes(session.approvals.policy), config_options=[*config_options(session)], field_meta=meta
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """Abort its run, stop its MCP servers and forget it here (its file stays, loadable)."""
        session = self._session(session_id)
        del self.sessions[session_id]
        await session.close()
        return CloseSessionResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        """Model and thinking level (config_options.py); the next model request uses them."""
        session = self._session(session_id)
        set_config_option(session, config_id, value)
        return SetSessionConfigOptionResponse(config_options=[*config_options(session)])

    def set_session_model(self, params: dict[str, Any]) -> dict[str, Any]:
        """The older `session/set_model {sessionId, modelId}` (no longer in the SDK's schema, still
        sent by some clients): the `model` config option by another name. Answered by the transport."""
        session_id, model_id = params.get("sessionId"), params.get("modelId")
        if not isinstance(session_id, str) or not isinstance(model_id, str):
            raise RequestError.invalid_params({"details": "session/set_model needs sessionId and modelId strings"})
        session = self._session(session_id)
        set_config_option(session, "model", model_id)
        self._send_updates(
            session_id,
            [ConfigOptionUpdate(session_update="config_option_update", config_options=[*config_options(session)])],
        )
        return {}

    async def _load(
        self, cwd: str, session_id: str, mcp_servers: list[McpServer] | None, replay: bool
    ) -> tuple[AgentSession, dict[str, Any] | None]:
        session = self._open(cwd)
        try:
            await session.load_session(session_id)
        except SESSION_REFUSALS as exc:
            raise session_error(exc) from exc
        previous = self.sessions.pop(session_id, None)
        if previous is not None:
            await previous.close()
        meta = await self._start_mcp(session, mcp_servers)
        if replay:  # ACP: the whole conversation is replayed as updates before the response.
            self._send_updates(session_id, transcript_updates(session.messages, session.cwd))
        self._register(session_id, session)
        return session, meta

    async def set_session_mode(self, mode_id: str, session_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """A mode is an approval policy; it applies from the next tool call, in a running turn too."""
        session = self._session(session_id)
        policy = mode_policy(mode_id)
        if policy is None:
            raise RequestError.invalid_params({"details": f"Unknown mode: {mode_id}"})
        session.set_approval_policy(policy)
        self._send_updates(session_id, [update_current_mode(policy)])
        return SetSessionModeResponse()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        """The sessions of `cwd`, or without it of the daemon's own folder: never another
        workspace's unasked (sessions stay with their workspace, docs/SECURITY.md)."""
        folder = _absolute_dir(cwd) if cwd is not None else self.config.cwd
        found = [(folder, s) for s in list_sessions(folder, self.config.persistence.root)]
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s.session_id, cwd=folder, title=s.name or s.first_message or None, updated_at=s.modified
                )
                for folder, s in found
            ]
        )

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> PromptResponse:
        session = self._session(session_id)
        text, images = prompt_input(prompt)
        picker = self._picker(session_id)
        answer = await run_command(session, text.strip(), picker) if not images else None
        self._pickers.pop(session_id, None)
        if answer is not None:  # a built-in slash command: answered here, never sent to the model
            self._send_updates(
                session_id,
                [
                    update_agent_message_text(answer),
                    ConfigOptionUpdate(
                        session_update="config_option_update", config_options=[*config_options(session)]
                    ),
                    info_update(session),  # `/name` retitles the session
                    *([usage] if (usage := usage_update(session)) is not None else []),  # `/compact` shrinks it
                ],
            )
            return PromptResponse(stop_reason="cancelled" if picker is not None and picker.cancelled else "end_turn")
        self._prompts += 1
        self._idle = anyio.Event()
        try:
            outcome = await session.prompt(text, images)
        except SESSION_REFUSALS as exc:  # busy, or no model
            raise session_error(exc) from exc
        finally:
            self._prompts -= 1
            if self._prompts == 0:
                self._idle.set()
        usage = usage_update(session)
        self._send_updates(session_id, [info_update(session), *([usage] if usage is not None else [])])
        reason = outcome.stop_reason
        if reason == "error" or not isinstance(reason, str):
            message = outcome.error_message if isinstance(outcome.error_message, str) else "The run failed"
            raise run_failed(message)
        return PromptResponse(stop_reason=STOP_REASONS[reason])

    def _picker(self, session_id: str) -> PermissionPicker | None:
        """How a slash command asks the user to choose; `session/cancel` ends its question."""
        if self.conn is None:
            return None
        picker = PermissionPicker(
            self.conn, session_id, lambda updates: self._send_updates(session_id, updates), self.deadlines
        )
        self._pickers[session_id] = picker
        return picker

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        picker = self._pickers.get(session_id)
        if picker is not None:
            picker.cancel()
        session = self.sessions.get(session_id)
        if session is not None:
            await session.abort()

    async def close(self) -> None:
        """Abort every session's run and wait until each prompt in flight has been answered
        (bounded by the caller): the SDK writes a response as soon as its handler returns."""
        async with anyio.create_task_group() as aborts:
            for session in self.sessions.values():
                aborts.start_soon(session.abort)
        await self._idle.wait()
        async with anyio.create_task_group() as closing:  # their MCP servers
            for session in self.sessions.values():
                closing.start_soon(session.close)

    # --- helpers --------------------------------------------------------------------------------

    async def _start_mcp(self, session: AgentSession, mcp_servers: Sequence[McpServer] | None) -> dict[str, Any] | None:
        """The editor's servers and settings.json's, started before the answer (each bounded)."""
        configs, refused = server_configs(mcp_servers)
        statuses = await session.start_mcp_servers(configs)
        return status_meta([*statuses, *refused])

    def _open(self, cwd: str) -> AgentSession:
        """A session for `cwd` made as the command line makes its own: that folder's settings and
        rules (trust-gated), tools made for it with its own router and process table."""
        folder = _absolute_dir(cwd)
        try:
            config = self._open_folder(folder)
        except (SettingsError, RuleError) as exc:
            raise RequestError.invalid_params({"details": f"{folder}: {exc}"}) from exc
        return AgentSession(config, self.tasks)

    def _register(self, session_id: str, session: AgentSession) -> None:
        mapper = UpdateMapper(session.cwd, terminal_output=wants_terminal_output(self.client_capabilities))

        def forward(event: AgentEvent) -> None:
            if isinstance(event, ToolExecutionUpdate) and self.sink is not None and self.sink.holding:
                return  # a snapshot: the next one (or the call's end) carries what it did
            inner = event.assistant_message_event if isinstance(event, MessageUpdate) else None
            if self.send_delta is not None and isinstance(inner, TextDeltaEvent | ThinkingDeltaEvent):

                def message_for(text: str, inner: TextDeltaEvent | ThinkingDeltaEvent = inner) -> dict[str, Any]:
                    merged = MessageUpdate(assistant_message_event=msgspec.structs.replace(inner, delta=text))
                    return self._notification(session_id, mapper.updates(merged)[0])

                self.send_delta((session_id, type(inner), inner.content_index), inner.delta, message_for)
                return
            self._send_updates(session_id, mapper.updates(event))

        session.subscribe(forward, self.sink.wait_for_room if self.sink is not None else None)
        self.sessions[session_id] = session
        self.tasks.start_soon(self._announce_commands, session_id, session)
        if self.conn is None:  # no connection to ask through (a test driving the agent directly)
            return

        def cannot_ask() -> ApprovalDecision:
            # The client answered "method not found": it cannot ask, so its session is what a
            # client without approvals gets (auto unless configured), for this call and the next.
            session.set_approver(None)
            self._send_updates(session_id, [update_current_mode(session.approvals.policy)])
            if session.approvals.policy == "auto":
                return ApprovalDecision(outcome="allow")
            return ApprovalDecision(
                outcome="reject",
                reason=f"approval policy {session.approvals.policy} needs "
                "the user's approval, and this client cannot ask for it",
            )

        client = AcpSessionClient(self.conn, session_id, self.client_capabilities.fs, cannot_ask, self.deadlines)
        session.set_approver(client.approve)
        session.set_editor_files(mapper.watching(client) if client.serves_files else None)

    async def _announce_commands(self, session_id: str, session: AgentSession) -> None:
        """After the session/new or load response (the client must know the session first)."""
        await anyio.lowlevel.checkpoint()
        if self.sessions.get(session_id) is session:
            self._send_updates(session_id, [update_available_commands(available_commands(session))])

    def _send_updates(self, session_id: str, updates: Sequence[AnyUpdate]) -> None:
        for update in updates:
            self.send(self._notification(session_id, update))

    @staticmethod
    def _notification(session_id: str, update: AnyUpdate) -> dict[str, Any]:
        # SessionNotification directly: the SDK helper's SessionUpdate lacks the newer kinds.
        params = serialize_params(SessionNotification(session_id=session_id, update=update))
        return {"jsonrpc": "2.0", "method": CLIENT_METHODS["session_update"], "params": params}

    def _session(self, session_id: str) -> AgentSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise session_not_found(f"Session not found: {session_id}")
        return session


def _absolute_dir(cwd: str) -> str:
    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise RequestError.invalid_params({"details": f"cwd must be an absolute path to a directory: {cwd}"})
    return os.path.normpath(cwd)


def auth_methods() -> list[AuthMethodAgent]:
    """One method per provider whose key an environment variable holds (ai/apis.py). ACP's
    current schema has no environment-variable method, so each is an `agent` method whose
    description names the variable (and `_meta.env` lists it): `authenticate` then checks."""
    methods = []
    for known in known_providers().values():
        methods.append(
            AuthMethodAgent(
                id=f"{known.name}-api-key",
                name=f"{known.title} API key",
                description=f"Set {known.key_variable} in the environment pi-rpc is started with",
                field_meta={"env": [known.key_variable]},
            )
        )
    return methods


def join_prompt_parts(parts: Sequence[str]) -> str:
    """The prompt's pieces in order; a mention is kept apart from its neighbours by a space
    (two adjacent `@` links would otherwise read as one path)."""
    text = ""
    after_mention = False
    for part in parts:
        if not part:
            continue
        mention = part.startswith("@")
        if text and (mention or after_mention) and not text[-1].isspace() and not part[0].isspace():
            text += " "
        text += part
        after_mention = mention
    return text


def prompt_input(blocks: Sequence[PromptBlock]) -> tuple[str, list[ImageContent]]:
    """ACP prompt blocks as our prompt text and images. Mentions stay where the user put them;
    embedded file contents follow the text, each wrapped with the URI it came from."""
    parts: list[str] = []
    context: list[str] = []
    images: list[ImageContent] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ImageContentBlock):
            images.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"@{block.uri}")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            parts.append(f"@{resource.uri}")
            if isinstance(resource, BlobResourceContents):
                if (resource.mime_type or "").startswith("image/"):
                    images.append(ImageContent(data=resource.blob, mime_type=resource.mime_type or ""))
                continue
            context.append(f'<context ref="{resource.uri}">\n{resource.text}\n</context>')
        elif isinstance(block, AudioContentBlock):  # not advertised: promptCapabilities.audio = false
            raise RequestError.invalid_params({"details": "Audio prompts are not supported"})
    text = join_prompt_parts(parts)
    return "\n\n".join([text, *context]) if context else text, images

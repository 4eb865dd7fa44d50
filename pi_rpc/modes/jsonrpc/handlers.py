"""One thin async function per method: convert, call the session, return its Struct.

The methods are listed once, in `protocol.METHODS` (their params and result types, which the schema
is generated from); a handler is registered by name, takes its params type from there, and
`register` refuses a name the table lacks and a table entry left without a handler. The session's
refusals (busy, no model, not found, an invalid argument) reach the client through `errors.SESSION_ERRORS`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from msgspec import UNSET

import pi_rpc
from pi_rpc.ai import Model
from pi_rpc.modes.jsonrpc.client_requests import ClientRequests
from pi_rpc.modes.jsonrpc.errors import InvalidParams
from pi_rpc.modes.jsonrpc.protocol import (
    CLIENT_NOTIFICATIONS,
    METHODS,
    PROTOCOL_VERSION,
    ActiveTools,
    ApprovalPolicyResult,
    BashParams,
    BashResult,
    Checkpoints,
    CommandList,
    CompactionResult,
    CompactParams,
    Empty,
    EntriesParams,
    EntryList,
    ForkedSession,
    ForkParams,
    ForkPoint,
    ForkPoints,
    InitializeParams,
    InitializeResult,
    LoadedSession,
    LoadSessionParams,
    MessageList,
    ModelList,
    NewSession,
    PromptParams,
    QueueContents,
    QueueParams,
    RewindParams,
    ServerInfo,
    SessionList,
    SessionName,
    SetActiveToolsParams,
    SetApprovalPolicyParams,
    SetModelParams,
    SetNameParams,
    SetThinkingParams,
    ThinkingLevels,
    ToolList,
    to_image,
)
from pi_rpc.modes.jsonrpc.rpc import Rpc
from pi_rpc.session import AgentSession, PromptOutcome, RewindResult, SessionState, SessionStats


class Registrations:
    """`rpc`'s handlers by name, each checked against the one list of methods (`protocol.METHODS`)."""

    def __init__(self, rpc: Rpc) -> None:
        self._rpc = rpc
        self._served: set[str] = set()

    def method(self, name: str) -> Callable[[Callable[[Any], Awaitable[Any]]], Any]:
        if name not in METHODS:
            raise ValueError(f"{name!r} is not in protocol.METHODS: declare its params and result there first")
        self._served.add(name)
        return self._rpc.method(name, METHODS[name][0])

    def notification(self, name: str) -> Callable[[Callable[[Any], Any]], Any]:
        if name not in CLIENT_NOTIFICATIONS:
            raise ValueError(f"{name!r} is not in protocol.CLIENT_NOTIFICATIONS: declare its params there first")
        self._served.add(name)
        return self._rpc.notification(name, CLIENT_NOTIFICATIONS[name])

    def check_complete(self) -> None:
        """Start-up refuses a method the schema promises and nothing serves."""
        unserved = sorted((METHODS.keys() | CLIENT_NOTIFICATIONS.keys()) - self._served)
        if unserved:
            raise ValueError(f"protocol.METHODS declares {', '.join(unserved)}, but no handler serves it")


def register(
    rpc: Rpc,
    session: AgentSession,
    client: ClientRequests,
    on_shutdown: Callable[[], object],
    on_exit: Callable[[], None],
) -> None:
    served = Registrations(rpc)

    @served.method("initialize")
    async def initialize(params: InitializeParams) -> InitializeResult:
        capabilities = params.capabilities
        session.set_approver(client.approve if capabilities.approvals else None)
        session.set_editor_files(client if capabilities.files else None)
        if params.approval_policy is not UNSET:
            session.set_approval_policy(params.approval_policy)
        servers = await session.start_mcp_servers(params.mcp_servers)
        return InitializeResult(
            server_info=ServerInfo(name="pi-rpc", version=pi_rpc.__version__),
            protocol_version=PROTOCOL_VERSION,
            cwd=session.cwd,
            model=session.current_model.model,
            scripted=session.current_model.scripted,
            tools=session.tool_infos(),
            approval_policy=session.approvals.policy,
            mcp_servers=servers or UNSET,
        )

    @served.method("approval/setPolicy")
    async def approval_set_policy(params: SetApprovalPolicyParams) -> ApprovalPolicyResult:
        return ApprovalPolicyResult(policy=session.set_approval_policy(params.policy))

    @served.method("shutdown")
    async def shutdown(params: Empty) -> None:
        await session.abort()
        on_shutdown()

    @served.notification("exit")
    def exit_(params: Empty) -> None:
        on_exit()

    @served.method("prompt")
    async def prompt(params: PromptParams) -> PromptOutcome:
        behaviour = None if params.streaming_behavior is UNSET else params.streaming_behavior
        return await session.prompt(params.message, [to_image(i) for i in params.images], behaviour)

    @served.method("abort")
    async def abort(params: Empty) -> None:
        await session.abort()

    @served.method("steer")
    async def steer(params: QueueParams) -> None:
        session.steer(params.message, [to_image(i) for i in params.images])

    @served.method("followUp")
    async def follow_up(params: QueueParams) -> None:
        session.follow_up(params.message, [to_image(i) for i in params.images])

    @served.method("clearQueue")
    async def clear_queue(params: Empty) -> QueueContents:
        steering, follow_ups = session.clear_queue()
        return QueueContents(steering=steering, follow_up=follow_ups)

    @served.method("tools/list")
    async def tools_list(params: Empty) -> ToolList:
        return ToolList(tools=session.tool_infos())

    @served.method("commands/list")
    async def commands_list(params: Empty) -> CommandList:
        return CommandList(commands=session.slash_commands())

    @served.method("bash")
    async def bash(params: BashParams) -> BashResult:
        return await session.run_bash(params.command, params.exclude_from_context)

    @served.method("compact")
    async def compact(params: CompactParams) -> CompactionResult:
        instructions = None if params.custom_instructions is UNSET else params.custom_instructions
        return await session.compaction.compact(instructions)

    @served.method("abortBash")
    async def abort_bash(params: Empty) -> None:
        session.user_bash.abort()

    @served.method("tools/setActive")
    async def tools_set_active(params: SetActiveToolsParams) -> ActiveTools:
        return ActiveTools(active=session.set_active_tools(params.names))

    @served.method("state")
    async def state(params: Empty) -> SessionState:
        return session.state()

    @served.method("messages")
    async def messages(params: Empty) -> MessageList:
        return MessageList(messages=list(session.messages))

    @served.method("models/list")
    async def models_list(params: Empty) -> ModelList:
        return ModelList(models=session.current_model.available_models())

    @served.method("model/set")
    async def model_set(params: SetModelParams) -> Model:
        return session.current_model.set_model(params.provider, params.model_id)

    @served.method("session/new")
    async def session_new(params: Empty) -> NewSession:
        return NewSession(session_id=await session.new_session())

    @served.method("session/list")
    async def session_list(params: Empty) -> SessionList:
        return SessionList(sessions=session.history.list_sessions())

    @served.method("session/load")
    async def session_load(params: LoadSessionParams) -> LoadedSession:
        count = await session.load_session(params.session_id)
        return LoadedSession(session_id=session.history.session_id, message_count=count)

    @served.method("session/forkPoints")
    async def session_fork_points(params: Empty) -> ForkPoints:
        return ForkPoints(
            fork_points=[ForkPoint(entry_id=entry, text=text) for entry, text in session.history.fork_points()]
        )

    @served.method("session/fork")
    async def session_fork(params: ForkParams) -> ForkedSession:
        text = await session.fork(params.entry_id)
        return ForkedSession(session_id=session.history.session_id, text=text)

    @served.method("session/clone")
    async def session_clone(params: Empty) -> NewSession:
        await session.clone()
        return NewSession(session_id=session.history.session_id)

    @served.method("session/entries")
    async def session_entries(params: EntriesParams) -> EntryList:
        since = None if params.since is UNSET else params.since
        limit = None if params.limit is UNSET else params.limit
        if limit is not None and limit < 1:
            raise InvalidParams(f"limit must be at least 1, not {limit}")
        entries, leaf = session.history.after(since, limit)  # a `since` off the branch: NotFound (errors.py)
        return EntryList(entries=entries, leaf_id=leaf)

    @served.method("session/setName")
    async def session_set_name(params: SetNameParams) -> SessionName:
        return SessionName(name=session.history.set_name(params.name))  # an empty one: -32602 (errors.py)

    @served.method("session/checkpoints")
    async def session_checkpoints(params: Empty) -> Checkpoints:
        return Checkpoints(checkpoints=session.checkpoints.listing())

    @served.method("session/rewind")
    async def session_rewind(params: RewindParams) -> RewindResult:
        # An unknown entry: NotFound; a run going: Busy (errors.SESSION_ERRORS).
        return await session.checkpoints.rewind(params.entry_id, params.restore, params.force, params.preview)

    @served.method("session/stats")
    async def session_stats(params: Empty) -> SessionStats:
        return session.stats()

    @served.method("thinking/set")
    async def thinking_set(params: SetThinkingParams) -> ThinkingLevels:
        level = session.current_model.set_thinking_level(params.level)
        return ThinkingLevels(level=level, available=session.current_model.thinking_levels())

    served.check_complete()

"""One thin async function per method: convert, call the session, return its Struct."""

from __future__ import annotations

from collections.abc import Callable

from msgspec import UNSET

import pi_rpc
from pi_rpc.agent.agent import AgentBusyError
from pi_rpc.ai.types import Model
from pi_rpc.modes.jsonrpc.client_requests import ClientRequests
from pi_rpc.modes.jsonrpc.errors import Busy, InvalidParams, NoModel, NotFound
from pi_rpc.modes.jsonrpc.protocol import (
    PROTOCOL_VERSION,
    ActiveTools,
    ApprovalPolicyResult,
    BashParams,
    BashResult,
    CommandList,
    CompactionResult,
    CompactParams,
    Empty,
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
from pi_rpc.session.compaction import CompactionError
from pi_rpc.session.session import (
    AgentSession,
    ModelNotFoundError,
    NoModelError,
    SessionNotFoundError,
)
from pi_rpc.session.types import PromptOutcome, SessionState, SessionStats
from pi_rpc.session.user_bash import BashBusyError


def register(
    rpc: Rpc,
    session: AgentSession,
    client: ClientRequests,
    on_shutdown: Callable[[], object],
    on_exit: Callable[[], None],
) -> None:
    @rpc.method("initialize", InitializeParams)
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
            model=session.model,
            scripted=session.scripted,
            tools=session.tool_infos(),
            approval_policy=session.approvals.policy,
            mcp_servers=servers or UNSET,
        )

    @rpc.method("approval/setPolicy", SetApprovalPolicyParams)
    async def approval_set_policy(params: SetApprovalPolicyParams) -> ApprovalPolicyResult:
        return ApprovalPolicyResult(policy=session.set_approval_policy(params.policy))

    @rpc.method("shutdown", Empty)
    async def shutdown(params: Empty) -> None:
        await session.abort()
        on_shutdown()

    @rpc.notification("exit", Empty)
    def exit_(params: Empty) -> None:
        on_exit()

    @rpc.method("prompt", PromptParams)
    async def prompt(params: PromptParams) -> PromptOutcome:
        behaviour = None if params.streaming_behavior is UNSET else params.streaming_behavior
        try:
            return await session.prompt(params.message, [to_image(i) for i in params.images], behaviour)
        except AgentBusyError as exc:
            raise Busy(str(exc)) from exc
        except NoModelError as exc:
            raise NoModel(str(exc)) from exc

    @rpc.method("abort", Empty)
    async def abort(params: Empty) -> None:
        await session.abort()

    @rpc.method("steer", QueueParams)
    async def steer(params: QueueParams) -> None:
        session.steer(params.message, [to_image(i) for i in params.images])

    @rpc.method("followUp", QueueParams)
    async def follow_up(params: QueueParams) -> None:
        session.follow_up(params.message, [to_image(i) for i in params.images])

    @rpc.method("clearQueue", Empty)
    async def clear_queue(params: Empty) -> QueueContents:
        steering, follow_ups = session.clear_queue()
        return QueueContents(steering=steering, follow_up=follow_ups)

    @rpc.method("tools/list", Empty)
    async def tools_list(params: Empty) -> ToolList:
        return ToolList(tools=session.tool_infos())

    @rpc.method("commands/list", Empty)
    async def commands_list(params: Empty) -> CommandList:
        return CommandList(commands=session.slash_commands())

    @rpc.method("bash", BashParams)
    async def bash(params: BashParams) -> BashResult:
        try:
            return await session.run_bash(params.command, params.exclude_from_context)
        except BashBusyError as exc:
            raise Busy(str(exc)) from exc

    @rpc.method("compact", CompactParams)
    async def compact(params: CompactParams) -> CompactionResult:
        instructions = None if params.custom_instructions is UNSET else params.custom_instructions
        try:
            return await session.compact(instructions)
        except NoModelError as exc:
            raise NoModel(str(exc)) from exc
        except CompactionError as exc:
            raise Busy(str(exc)) from exc

    @rpc.method("abortBash", Empty)
    async def abort_bash(params: Empty) -> None:
        session.user_bash.abort()

    @rpc.method("tools/setActive", SetActiveToolsParams)
    async def tools_set_active(params: SetActiveToolsParams) -> ActiveTools:
        return ActiveTools(active=session.set_active_tools(params.names))

    @rpc.method("state", Empty)
    async def state(params: Empty) -> SessionState:
        return session.state()

    @rpc.method("messages", Empty)
    async def messages(params: Empty) -> MessageList:
        return MessageList(messages=list(session.messages))

    @rpc.method("models/list", Empty)
    async def models_list(params: Empty) -> ModelList:
        return ModelList(models=session.available_models())

    @rpc.method("model/set", SetModelParams)
    async def model_set(params: SetModelParams) -> Model:
        try:
            return session.set_model(params.provider, params.model_id)
        except ModelNotFoundError as exc:
            raise NotFound(str(exc)) from exc

    @rpc.method("session/new", Empty)
    async def session_new(params: Empty) -> NewSession:
        return NewSession(session_id=await session.new_session())

    @rpc.method("session/list", Empty)
    async def session_list(params: Empty) -> SessionList:
        return SessionList(sessions=session.list_sessions())

    @rpc.method("session/load", LoadSessionParams)
    async def session_load(params: LoadSessionParams) -> LoadedSession:
        try:
            count = await session.load_session(params.session_id)
        except SessionNotFoundError as exc:
            raise NotFound(str(exc)) from exc
        return LoadedSession(session_id=session.session_id, message_count=count)

    @rpc.method("session/forkPoints", Empty)
    async def session_fork_points(params: Empty) -> ForkPoints:
        return ForkPoints(fork_points=[ForkPoint(entry_id=entry, text=text) for entry, text in session.fork_points()])

    @rpc.method("session/fork", ForkParams)
    async def session_fork(params: ForkParams) -> ForkedSession:
        try:
            text = await session.fork(params.entry_id)
        except SessionNotFoundError as exc:
            raise NotFound(str(exc)) from exc
        return ForkedSession(session_id=session.session_id, text=text)

    @rpc.method("session/clone", Empty)
    async def session_clone(params: Empty) -> NewSession:
        await session.clone()
        return NewSession(session_id=session.session_id)

    @rpc.method("session/setName", SetNameParams)
    async def session_set_name(params: SetNameParams) -> SessionName:
        try:
            return SessionName(name=session.set_session_name(params.name))
        except ValueError as exc:
            raise InvalidParams(str(exc)) from exc

    @rpc.method("session/stats", Empty)
    async def session_stats(params: Empty) -> SessionStats:
        return session.stats()

    @rpc.method("thinking/set", SetThinkingParams)
    async def thinking_set(params: SetThinkingParams) -> ThinkingLevels:
        level = session.set_thinking_level(params.level)
        return ThinkingLevels(level=level, available=session.thinking_levels())

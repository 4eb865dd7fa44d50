"""AgentSession: the one object every mode drives.

It owns the agent and the tool registry versus the active tools, and makes the parts that hold the
rest, each handed only what it needs: its history (the transcript and its file, `SessionHistory`
in storage/history.py), its model and level (`SessionModel`, models/current.py), its compaction
(`SessionCompaction`, compaction/session_compaction.py), its runs (`SessionRuns`, runs.py), its
approvals (`ApprovalGate`) and checkpoints (`SessionCheckpoints`). The parts are public and the
front ends call them directly (`session.history.session_id`, `session.runs.start`); the session's
own methods are those that are its own (prompting, the tool set, events, closing) or that join
several parts (becoming another session, stats, state).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.abc
from msgspec import UNSET

from pi_rpc.agent import (
    Agent,
    AgentEvent,
    AgentSettled,
    BashExecutionUpdate,
    MessageEnd,
    QueueMode,
    ToolApprovalEnd,
    ToolApprovalRequest,
    ToolCallContext,
    WaitForRoom,
)
from pi_rpc.ai import (
    AssistantMessage,
    AutoRetryEnd,
    AutoRetryStart,
    ImageContent,
    Message,
    StreamOptions,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    sections_text,
)
from pi_rpc.session.approvals.gate import ApprovalGate, ApprovalPolicy, Approver
from pi_rpc.session.checkpoints.session_checkpoints import SessionCheckpoints
from pi_rpc.session.compaction.session_compaction import SessionCompaction
from pi_rpc.session.configuration.config import ModelChoice as ModelChoice
from pi_rpc.session.configuration.config import SessionConfig as SessionConfig
from pi_rpc.session.mcp_tools import callable_tools, mcp_prompt_sections, register_mcp_tools
from pi_rpc.session.models.current import ModelNotFoundError as ModelNotFoundError
from pi_rpc.session.models.current import NoModelError as NoModelError
from pi_rpc.session.models.current import SessionModel
from pi_rpc.session.resources.loading import load_resources
from pi_rpc.session.runs import AutoToggles, SessionRuns, StreamingBehavior, total_usage
from pi_rpc.session.storage.history import NothingToCloneError as NothingToCloneError
from pi_rpc.session.storage.history import SessionHistory
from pi_rpc.session.storage.history import SessionNotFoundError as SessionNotFoundError
from pi_rpc.session.system_prompt import build_system_prompt
from pi_rpc.session.types import (
    PromptOutcome,
    SessionState,
    SessionStats,
    SlashCommand,
    TokenTotals,
    ToolInfo,
)
from pi_rpc.session.user_bash import BashResult, UserBash, bash_execution_message
from pi_rpc.tools import EditorFiles, McpServerConfig, McpServerStatus

if TYPE_CHECKING:
    from pi_rpc.agent import LoopConfig
    from pi_rpc.tools import McpServers

_log = logging.getLogger(__name__)
_T = TypeVar("_T")


class AgentSession:
    def __init__(self, config: SessionConfig, task_group: anyio.abc.TaskGroup) -> None:
        self.config = config
        self.cwd = config.cwd
        self.agent = Agent()
        self.agent.steering_mode = config.steering_mode
        self.agent.follow_up_mode = config.follow_up_mode
        self._tasks = task_group
        self._definitions = dict(config.tools.definitions)
        self._active: list[str] = [name for name in config.tools.active if name in self._definitions]
        self._system_prompt: dict[str, str] = {}
        self.mcp: McpServers | None = None  # made with the first server: the SDK is slow to import
        self.resources = load_resources(self.cwd, config.resources)
        self._rebuild_system_prompt()
        self.toggles = AutoToggles(retry=config.retry.enabled)
        self._retrying = False
        self.agent.subscribe(self._track_retry)
        self.user_bash = UserBash(config.tools.processes)
        # A session dropped without `close` leaves its table to no one (the daemon's exit reaches
        # only live tables): its leftovers die, and their lifelines close, with the session.
        weakref.finalize(self, config.tools.processes.kill_all)
        self.history = SessionHistory(self.agent, config)
        self.current_model = SessionModel(config.models, self.history)
        self.compaction = SessionCompaction(
            self.agent,
            self.history,
            self.current_model,
            config.compaction,
            config.retry,
            lambda: self.toggles.retry,
            self.abort,
        )
        self.runs = SessionRuns(
            self.agent,
            task_group,
            model=self.current_model,
            history=self.history,
            compaction=self.compaction,
            settings=config.compaction,
            retry=config.retry,
            toggles=self.toggles,
            loop_config=self.loop_config,
            expand=lambda text: self.resources.expand(text),
        )
        self._start_history()
        self.approvals = ApprovalGate(
            lambda: self.cwd,
            self._definitions.get,
            self._tool_context,
            policy=config.approvals.policy,
            rules=config.approvals.rules,
            timeout=config.approvals.timeout,
            save_rule=config.approvals.save_allow_rule,
        )
        self.approvals.on_request = lambda request: self.agent.emit(ToolApprovalRequest(request=request))
        self.approvals.on_resolved = lambda call_id, outcome: self.agent.emit(
            ToolApprovalEnd(tool_call_id=call_id, outcome=outcome)
        )
        self.checkpoints = SessionCheckpoints(self)  # every user message a restore point (checkpoints/)

    def _start_history(self) -> None:
        """The session the command line asks for: `--fork`, `--session`, `--continue`, `--session-id`, or new."""
        config = self.config
        if config.persistence.fork_from is not None:
            self.history.fork_file(config.persistence.fork_from)
        elif config.persistence.resume_from is not None and config.persistence.resume_from.exists():
            self.history.resume(config.persistence.resume_from)
        else:
            if config.persistence.resume_from is not None:
                self.history.start_at(config.persistence.resume_from)
            self.history.command_line_identity(config.persistence.new_session_id, config.persistence.start_name)
            self.current_model.record_start()
            return
        self.current_model.restore_recorded()
        self.history.command_line_identity(None, config.persistence.start_name)

    # --- the client's part: approvals and editor-owned files ------------------------------------

    def set_approver(self, approver: Approver | None) -> None:
        """The front end's way to ask the user (None: it cannot); one that can gets "ask" unless configured."""
        self.approvals.approver = approver
        if not self.config.approvals.configured:
            self.approvals.policy = "ask" if approver is not None else self.config.approvals.policy

    def set_approval_policy(self, policy: ApprovalPolicy) -> ApprovalPolicy:
        """Takes effect at the next tool call, in a running run too."""
        self.approvals.policy = policy
        return policy

    def set_editor_files(self, editor: EditorFiles | None) -> None:
        """Serve read/edit/write of text files from the client (its buffers); None: the disk."""
        self.config.tools.files.editor = editor

    # --- events ---------------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[AgentEvent], None], room: WaitForRoom | None = None) -> Callable[[], None]:
        # A front end passes its writer's `wait_for_room`: the stream holds while its client lags.
        return self.agent.subscribe(listener, room)

    def _track_retry(self, event: AgentEvent) -> None:
        if isinstance(event, AutoRetryStart):
            self._retrying = True
        elif isinstance(event, AutoRetryEnd | MessageEnd | AgentSettled):
            self._retrying = False

    @property
    def retrying(self) -> bool:
        """A failed request waits to be retried (between auto_retry_start and its end)."""
        return self._retrying

    # --- history (pi_rpc/session/storage/history.py) ---------------------------------------------------

    async def load_session(self, session_id: str) -> int:
        """Abort any run and continue a stored session of this workspace; returns its size."""
        await self._become(lambda: self.history.load(session_id))
        return len(self.agent.messages)

    async def switch_session(self, path: str) -> int:
        """Abort any run and continue the session stored at `path` (Pi's `switch_session`)."""
        await self._become(lambda: self.history.resume(Path(path)))
        return len(self.agent.messages)

    async def fork(self, entry_id: str) -> str:
        """A new session holding what came before the user message `entry_id`; returns that
        message's text, for the client to edit and send again (Pi's `fork`)."""
        return await self._become(lambda: self.history.fork(entry_id))

    async def clone(self) -> None:
        """A new session holding the whole current branch (Pi's `clone`)."""
        await self._become(self.history.clone)

    async def _become(self, change: Callable[[], _T]) -> _T:
        """Become another stored session: abort any run first (its last messages must reach the
        file before the file is read), then restore the model and level the session recorded and
        read the resources again, as Pi does for every session it becomes."""
        if self.runs.is_streaming:
            await self.abort()
        result = change()
        self.current_model.restore_recorded()
        self._reload_resources()
        return result

    def export_html(self, output_path: str | None = None) -> str:
        tools = [(name, self._definitions[name].description) for name in self._active]
        return self.history.export_html(output_path, self.system_prompt, tools)

    def stats(self) -> SessionStats:
        messages = self.agent.messages
        assistants = [m for m in messages if isinstance(m, AssistantMessage)]
        usage = total_usage(assistants)
        return SessionStats(
            session_id=self.history.session_id,
            session_file=self.history.session_file,
            user_messages=sum(isinstance(m, UserMessage) for m in messages),
            assistant_messages=len(assistants),
            tool_calls=sum(isinstance(b, ToolCall) for m in assistants for b in m.content),
            tool_results=sum(isinstance(m, ToolResultMessage) for m in messages),
            total_messages=len(messages),
            tokens=TokenTotals(
                input=usage.input,
                output=usage.output,
                cache_read=usage.cache_read,
                cache_write=usage.cache_write,
                total=usage.total_tokens,
            ),
            cost=usage.cost.total,
            context_usage=self.compaction.context_usage() or UNSET,
        )

    # --- tools ----------------------------------------------------------------------------------

    def tool_infos(self) -> list[ToolInfo]:
        return [
            ToolInfo(
                name=name,
                label=definition.label,
                description=definition.description,
                parameters=self._definitions[name].declaration().parameters,
                active=name in self._active,
                source=UNSET if definition.source == "builtin" else definition.source,
            )
            for name, definition in self._definitions.items()
        ]

    async def start_mcp_servers(self, servers: Sequence[McpServerConfig] = ()) -> list[McpServerStatus]:
        """Start the settings', `mcp.json`'s and a client's `servers` (the client wins a name), bounded;
        failures are reported. Their tools join by exposure (session/mcp_tools.py)."""
        wanted = [*self.config.tools.mcp_servers, *servers]
        if not wanted or not self.config.tools.mcp_enabled:  # Pi's --no-mcp: none starts
            return self.mcp.statuses() if self.mcp is not None else []
        if self.mcp is None:
            from pi_rpc.tools import McpServers

            self.mcp = McpServers()
        await self.mcp.start(wanted, self._tasks)
        register_mcp_tools(self.mcp, self._definitions, self._active, self.config, {s.name for s in servers}, self)
        self._rebuild_system_prompt()
        return self.mcp.statuses()

    async def close(self) -> None:
        """Abort any run, stop the MCP servers (bounded), kill what its commands left running."""
        try:
            await self.abort()
            if self.mcp is not None:
                await self.mcp.stop()
        finally:
            self.config.tools.processes.kill_all()

    @property
    def active_tools(self) -> list[str]:
        return list(self._active)

    def set_active_tools(self, names: Sequence[str]) -> list[str]:
        """Only registered names activate; unknown ones are ignored (spec 5.5). Next turn sees it."""
        self._active = [name for name in dict.fromkeys(names) if name in self._definitions]
        self._rebuild_system_prompt()
        return self.active_tools

    def _tool_context(self) -> ToolCallContext:
        choice = self.current_model.choice
        assert choice is not None  # tools run only inside a run, and a run needs a model
        return ToolCallContext(
            cwd=self.cwd,
            model=choice.model,
            session_id=self.history.session_id,
            session_file=self.history.session_file,
            thinking_level=self.current_model.thinking_level,
            custom_entries=self.history,
        )

    def _rebuild_system_prompt(self) -> None:
        """The command line's base prompt and addition win over the folders' SYSTEM.md, APPEND_SYSTEM.md."""
        config, resources = self.config, self.resources
        self._system_prompt = build_system_prompt(
            [self._definitions[name] for name in self._active],
            self.cwd,
            config.append_system_prompt if config.append_system_prompt is not None else resources.append_system_prompt,
            resources,
            custom=config.system_prompt if config.system_prompt is not None else resources.system_prompt,
            extra=mcp_prompt_sections(self.mcp),
        )

    @property
    def system_prompt(self) -> str:
        return sections_text(self._system_prompt)

    def slash_commands(self) -> list[SlashCommand]:
        """What a user can invoke as `/name` in a prompt: prompt templates, then `skill:` names."""
        return [
            SlashCommand(
                name=c.name,
                description=c.description,
                source=c.kind,
                path=c.path,
                scope="path" if c.origin.scope == "temporary" else c.origin.scope,
                argument_hint=c.argument_hint or UNSET,
            )
            for c in self.resources.commands()
        ]

    # --- model ----------------------------------------------------------------------------------

    # --- runs (pi_rpc/session/runs.py) ---------------------------------------------------------

    async def prompt(
        self, text: str, images: Sequence[ImageContent] = (), streaming_behavior: StreamingBehavior | None = None
    ) -> PromptOutcome:
        return await self.runs.prompt(text, images, streaming_behavior)

    def steer(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self.runs.steer(text, images)

    def follow_up(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self.runs.follow_up(text, images)

    def clear_queue(self) -> tuple[list[str], list[str]]:
        return self.agent.clear_queues()

    async def abort(self) -> None:
        """Abort the run (and a compaction), if any, and return once the session is idle."""
        await self.runs.abort()

    async def run_bash(self, command: str, exclude_from_context: bool = False) -> BashResult:
        """Run a command for the user (Pi's `bash`); its output joins the next context unless excluded."""
        result = await self.user_bash.run(
            command, self.cwd, lambda run_id, delta: self.agent.emit(BashExecutionUpdate(id=run_id, delta=delta))
        )
        # Kept like Pi keeps it, `!!` commands too: the transcript shows them, the model does not.
        self.history.pending_bash.append(bash_execution_message(command, result, exclude_from_context))
        if not self.runs.is_streaming:
            self.history.flush_pending_bash()
            return result

        def flush_when_settled(event: AgentEvent) -> None:  # Pi flushes them when the run ends
            if isinstance(event, AgentSettled):
                stop_listening()
                self.history.flush_pending_bash()

        stop_listening = self.agent.subscribe(flush_when_settled)
        return result

    async def new_session(self, parent_session: str | None = None) -> str:
        """Abort any run, forget the transcript and queues (tools, model stay); the header names
        `parent_session` if given (Pi's). Idle, nothing awaits: later requests see the new session."""
        if self.runs.is_streaming:
            await self.abort()
        self.history.start_new(parent_session)
        self.current_model.record_start()
        self._reload_resources()
        return self.history.session_id

    def _reload_resources(self) -> None:
        """Context files, templates, skills and their settings read again, as Pi reloads them for
        every session it becomes (new, switched to, forked, cloned): edited AGENTS.md etc. apply."""
        self.resources = load_resources(self.cwd, self.config.resources)
        self._rebuild_system_prompt()

    def loop_config(self) -> LoopConfig:
        """How a run of this session calls the model and its tools, as the session is now."""
        from pi_rpc.agent import LoopConfig  # the agent loop: loaded by the first run, not the session

        choice = self.current_model.require()
        options = StreamOptions(
            api_key=choice.api_key,
            thinking_level=self.current_model.thinking_level,
            headers=dict(choice.headers),
            session_id=self.history.session_id,
            max_retries=self.config.retry.max if self.toggles.retry and not self.config.retry.after_run else 0,
            retry_base_ms=self.config.retry.base_ms,
            http=choice.http,
        )
        return LoopConfig(
            model=choice.model,
            stream_fn=choice.stream_fn,
            options=options,
            system_prompt=lambda: self._system_prompt,
            tools=lambda: callable_tools(self._definitions, self._active),
            before_tool_call=self.checkpoints.before_tool_call,  # the approval gate, then the checkpoint
            after_tool_call=self.checkpoints.after_tool_call,
            tool_context=self._tool_context,
        )

    # --- state ----------------------------------------------------------------------------------

    def set_queue_modes(self, steering: QueueMode | None = None, follow_up: QueueMode | None = None) -> None:
        if steering is not None:
            self.agent.steering_mode = steering
        if follow_up is not None:
            self.agent.follow_up_mode = follow_up

    def state(self) -> SessionState:
        return SessionState(
            model=self.current_model.model,
            thinking_level=self.current_model.thinking_level,
            is_streaming=self.runs.is_streaming,
            steering_mode=self.agent.steering_mode,
            follow_up_mode=self.agent.follow_up_mode,
            session_id=self.history.session_id,
            message_count=len(self.agent.messages),
            pending_message_count=self.agent.pending_count,
            cwd=self.cwd,
            active_tools=self.active_tools,
            scripted=self.current_model.scripted,
            session_file=self.history.session_file,
            session_name=self.history.session_name,
            approval_policy=self.approvals.policy,
            pending_approvals=[request.tool_call_id for request in self.approvals.pending.values()],
        )

    @property
    def messages(self) -> list[Message]:
        return self.agent.messages

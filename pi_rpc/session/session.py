"""AgentSession: the one object every mode drives.

It owns the agent, the tool registry versus the active tools, the model, and the runs. A run is a
task of the session's own task group, not of the request that started it: a client that cancels
its request gets a graceful abort (agent_end, results for every call), never a torn-down run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc

from pi_rpc.agent.agent import Agent, QueueMode
from pi_rpc.agent.control import RunControl
from pi_rpc.agent.loop import LoopConfig
from pi_rpc.agent.types import (
    AgentEvent,
    AgentSettled,
    AgentTool,
    ApprovalRequest,
    MessageEnd,
    ToolApprovalEnd,
    ToolApprovalRequest,
)
from pi_rpc.ai.config import no_model_message
from pi_rpc.ai.models import clamp_thinking_level, not_found_hint, supported_thinking_levels
from pi_rpc.ai.redact import redact, request_secrets
from pi_rpc.ai.registry import DEFAULT_RETRY_BASE_MS, StreamFn, StreamOptions
from pi_rpc.ai.types import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingLevel,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)
from pi_rpc.ai.usage import add_usage
from pi_rpc.session.approvals import ApprovalGate, ApprovalPolicy, ApprovalRules, Approver
from pi_rpc.session.store import SessionFile, SessionSummary, find_session, list_sessions, load_session
from pi_rpc.session.system_prompt import build_system_prompt
from pi_rpc.session.types import PromptOutcome, SessionState, SessionStats, TokenTotals, ToolInfo
from pi_rpc.tools.base import ToolContext, ToolDefinition, wrap_tool_definition
from pi_rpc.tools.editor_files import EditorFiles, FileRouter

_log = logging.getLogger(__name__)

StreamingBehavior = Literal["steer", "followUp"]

BUSY_TEXT = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."


class SessionBusyError(RuntimeError):
    pass


class ModelNotFoundError(LookupError):
    pass


class NoModelError(RuntimeError):
    """A prompt while no model is configured; the message says how to configure one."""

    def __init__(self) -> None:
        super().__init__(no_model_message())


class SessionNotFoundError(LookupError):
    pass


@dataclass
class ModelChoice:
    """A model and how to reach it."""

    model: Model
    stream_fn: StreamFn
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    scripted: bool = False


@dataclass
class SessionConfig:
    cwd: str
    model: ModelChoice | None  # None: nothing configured; prompts fail until model/set picks one
    tools: dict[str, ToolDefinition]
    active_tools: list[str]
    thinking_level: ThinkingLevel = "off"
    # Every model a client may switch to, and how to reach each.
    available_models: Callable[[], list[Model]] = field(default=lambda: [])
    resolve_model: Callable[[str, str], ModelChoice | None] = field(default=lambda provider, model_id: None)
    append_system_prompt: str | None = None
    steering_mode: QueueMode = "one-at-a-time"
    follow_up_mode: QueueMode = "one-at-a-time"
    # Keep each session's transcript on disk (pi_rpc/session/store.py); None root = the user data dir.
    persist: bool = True
    session_root: Path | None = None
    # Where read/edit/write get file contents; the tools in `tools` must have been made with it.
    files: FileRouter = field(default_factory=FileRouter)
    # Approvals (pi_rpc/session/approvals.py): the policy until a client sets one, and the rules.
    approval_policy: ApprovalPolicy = "auto"
    # False: nobody chose a policy, so a client that can ask gets "ask" rather than this default.
    approval_policy_configured: bool = False
    approval_rules: ApprovalRules = field(default_factory=ApprovalRules)
    approval_timeout: float | None = None
    save_allow_rule: Callable[[str], None] | None = None
    # Provider retries: retry n waits retry_base_ms * 2**(n-1) (PI_RPC_RETRY_BASE_MS sets it).
    retry_base_ms: int = DEFAULT_RETRY_BASE_MS


class AgentSession:
    def __init__(self, config: SessionConfig, task_group: anyio.abc.TaskGroup) -> None:
        self.config = config
        self.cwd = config.cwd
        self.session_id = uuid.uuid4().hex
        self.agent = Agent()
        self.agent.steering_mode = config.steering_mode
        self.agent.follow_up_mode = config.follow_up_mode
        self.choice = config.model
        self.thinking_level: ThinkingLevel = config.thinking_level
        self._tasks = task_group
        self._definitions = dict(config.tools)
        self._active: list[str] = [name for name in config.active_tools if name in self._definitions]
        self._agent_tools: dict[str, AgentTool] = {}
        self._system_prompt = ""
        self._rebuild_system_prompt()
        self._busy = False
        self._settled = anyio.Event()
        self._settled.set()
        self._file: SessionFile | None = None
        self.agent.subscribe(self._persist)
        self.approvals = ApprovalGate(
            lambda: self.cwd, self._definitions.get, self._tool_context, policy=config.approval_policy,
            rules=config.approval_rules, timeout=config.approval_timeout, save_rule=config.save_allow_rule,
        )
        self.approvals.on_request = lambda request: self.agent.emit(ToolApprovalRequest(request=request))
        self.approvals.on_resolved = lambda call_id, outcome: self.agent.emit(
            ToolApprovalEnd(tool_call_id=call_id, outcome=outcome))

    # --- the client's part: approvals and editor-owned files ------------------------------------

    def set_approver(self, approver: Approver | None) -> None:
        """The front end's way to ask the user; None for a client that cannot ask. A client that
        can ask gets the "ask" policy unless the user configured one."""
        self.approvals.approver = approver
        if not self.config.approval_policy_configured:
            self.approvals.policy = "ask" if approver is not None else self.config.approval_policy

    def set_approval_policy(self, policy: ApprovalPolicy) -> ApprovalPolicy:
        """Takes effect at the next tool call, in a running run too."""
        self.approvals.policy = policy
        return policy

    @property
    def pending_approvals(self) -> list[ApprovalRequest]:
        return list(self.approvals.pending.values())

    def set_editor_files(self, editor: EditorFiles | None) -> None:
        """Serve read/edit/write of text files from the client (its buffers); None: the disk."""
        self.config.files.editor = editor

    # --- events ---------------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[AgentEvent], None]) -> Callable[[], None]:
        return self.agent.subscribe(listener)

    # --- persistence ----------------------------------------------------------------------------

    def _persist(self, event: AgentEvent) -> None:
        if not self.config.persist or not isinstance(event, MessageEnd):
            return
        if self._file is None:  # created on the first message: an unused daemon leaves no file
            self._file = SessionFile.create(self.cwd, self.session_id, self.config.session_root)
        self._file.append(event.message)

    @property
    def session_file(self) -> str | None:
        return str(self._file.path) if self._file is not None else None

    def list_sessions(self) -> list[SessionSummary]:
        return list_sessions(self.cwd, self.config.session_root)

    async def load_session(self, session_id: str) -> int:
        """Abort any run and continue a stored session of this workspace; returns its size."""
        if self._busy:  # first: the run's last messages must reach the file before it is read
            await self.abort()
        path = find_session(self.cwd, session_id, self.config.session_root)
        if path is None:
            raise SessionNotFoundError(f"Session not found: {session_id}")
        try:
            header, messages = load_session(path)
        except (OSError, ValueError, IndexError) as exc:
            raise SessionNotFoundError(f"Session {session_id} cannot be read: {exc}") from exc
        self.agent.clear_queues()
        self.agent.messages[:] = messages
        self.session_id = header.id
        self._file = SessionFile(path=path, session_id=header.id)
        return len(messages)

    def stats(self) -> SessionStats:
        messages = self.agent.messages
        assistants = [m for m in messages if isinstance(m, AssistantMessage)]
        usage = total_usage(assistants)
        return SessionStats(
            session_id=self.session_id, session_file=self.session_file,
            user_messages=sum(isinstance(m, UserMessage) for m in messages),
            assistant_messages=len(assistants),
            tool_calls=sum(isinstance(b, ToolCall) for m in assistants for b in m.content),
            tool_results=sum(isinstance(m, ToolResultMessage) for m in messages),
            total_messages=len(messages),
            tokens=TokenTotals(input=usage.input, output=usage.output, cache_read=usage.cache_read,
                               cache_write=usage.cache_write, total=usage.total_tokens),
            cost=usage.cost.total,
        )

    # --- tools ----------------------------------------------------------------------------------

    def tool_infos(self) -> list[ToolInfo]:
        return [
            ToolInfo(name=name, label=definition.label, description=definition.description,
                     parameters=self._agent_tool(name).declaration().parameters, active=name in self._active)
            for name, definition in self._definitions.items()
        ]

    @property
    def active_tools(self) -> list[str]:
        return list(self._active)

    def set_active_tools(self, names: Sequence[str]) -> list[str]:
        """Only registered names activate; unknown ones are ignored (spec 5.5). Next turn sees it."""
        self._active = [name for name in dict.fromkeys(names) if name in self._definitions]
        self._rebuild_system_prompt()
        return self.active_tools

    def _agent_tool(self, name: str) -> AgentTool:
        tool = self._agent_tools.get(name)
        if tool is None:
            tool = self._agent_tools[name] = wrap_tool_definition(self._definitions[name], self._tool_context)
        return tool

    def _tool_context(self) -> ToolContext:
        assert self.choice is not None  # tools run only inside a run, and a run needs a model
        return ToolContext(cwd=self.cwd, model=self.choice.model, session_id=self.session_id,
                           session_file=self.session_file, thinking_level=self.thinking_level)

    def _rebuild_system_prompt(self) -> None:
        self._system_prompt = build_system_prompt(
            [self._definitions[name] for name in self._active], self.cwd, self.config.append_system_prompt
        )

    # --- model ----------------------------------------------------------------------------------

    def set_model(self, provider: str, model_id: str) -> Model:
        choice = self.config.resolve_model(provider, model_id)
        if choice is None:
            raise ModelNotFoundError(f"Model not found: {provider}/{model_id}"
                                     + not_found_hint(provider, model_id, self.config.available_models()))
        self.choice = choice
        self.thinking_level = clamp_thinking_level(choice.model, self.thinking_level)
        return choice.model

    @property
    def model(self) -> Model | None:
        return self.choice.model if self.choice is not None else None

    @property
    def scripted(self) -> bool:
        return self.choice is not None and self.choice.scripted

    def set_thinking_level(self, level: ThinkingLevel) -> ThinkingLevel:
        """Clamped to what the model supports (Pi's clampThinkingLevel); next request uses it.
        With no model yet the level is kept as asked and clamped when one is set."""
        self.thinking_level = level if self.choice is None else clamp_thinking_level(self.choice.model, level)
        return self.thinking_level

    def thinking_levels(self) -> list[ThinkingLevel]:
        return ["off"] if self.choice is None else supported_thinking_levels(self.choice.model)

    def available_models(self) -> list[Model]:
        models = self.config.available_models()
        if self.choice is None:
            return models
        current = self.choice.model
        if not any(m.provider == current.provider and m.id == current.id for m in models):
            models = [current, *models]
        return models

    # --- runs -----------------------------------------------------------------------------------

    @property
    def is_streaming(self) -> bool:
        return self._busy

    async def prompt(
        self, text: str, images: Sequence[ImageContent] = (), streaming_behavior: StreamingBehavior | None = None
    ) -> PromptOutcome:
        """Start a run and wait for its end, or queue the message into the running one."""
        started = self.start_prompt(text, images, streaming_behavior)
        if isinstance(started, PromptOutcome):
            return started
        try:
            await self._settled.wait()
        except BaseException:
            # The request was cancelled ($/cancelRequest, client gone): abort the run gracefully.
            with anyio.CancelScope(shield=True):
                await self.abort()
            raise
        return started[0]

    def start_prompt(
        self, text: str, images: Sequence[ImageContent] = (), streaming_behavior: StreamingBehavior | None = None
    ) -> PromptOutcome | list[PromptOutcome]:
        """Synchronously start a run (the returned list receives its outcome when it settles), or
        queue the message into the running one (its PromptOutcome says so). Nothing here awaits,
        so a request handled after this one already sees the session busy."""
        if self.choice is None:
            raise NoModelError()
        message = user_message(text, images)
        if self._busy:
            if streaming_behavior == "steer":
                self.agent.steer(message)
                return PromptOutcome(queued="steer")
            if streaming_behavior == "followUp":
                self.agent.follow_up(message)
                return PromptOutcome(queued="followUp")
            raise SessionBusyError(BUSY_TEXT)
        control = self.agent.begin_run()  # an abort sent next finds the run
        self._busy = True
        self._settled = anyio.Event()
        outcome: list[PromptOutcome] = []
        prompts: list[Message] = [message]
        self._tasks.start_soon(self._run, control, prompts, outcome)
        return outcome

    def steer(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self.agent.steer(user_message(text, images))

    def follow_up(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        self.agent.follow_up(user_message(text, images))

    def clear_queue(self) -> tuple[list[str], list[str]]:
        return self.agent.clear_queues()

    async def abort(self) -> None:
        """Abort the run, if any, and return once the session is idle."""
        self.agent.abort()
        await self._settled.wait()

    async def new_session(self) -> str:
        """Abort any run, forget the transcript and the queues; tools and model stay as they are.
        When idle nothing here awaits, so requests sent after it see the new session."""
        if self._busy:
            await self.abort()
        self.agent.clear_queues()
        self.agent.messages.clear()
        self.session_id = uuid.uuid4().hex
        self._file = None
        return self.session_id

    async def _run(self, control: RunControl, prompts: list[Message], outcome: list[PromptOutcome]) -> None:
        new_messages: list[Message] = []
        try:
            new_messages = await self.agent.run(control, prompts, self._loop_config())
        except Exception as exc:  # Agent.prompt already converts run failures; this is a last guard
            _log.exception("run failed")
            choice = self.choice
            secrets = request_secrets(choice.api_key, choice.headers) if choice is not None else ()
            outcome.append(PromptOutcome(stop_reason="error", error_message=redact(str(exc), secrets)))
        finally:
            if not outcome:
                outcome.append(run_outcome(new_messages, aborted=self.agent.last_run_aborted))
            self._busy = False
            self.agent.emit(AgentSettled())
            self._settled.set()

    def _loop_config(self) -> LoopConfig:
        choice = self.choice
        assert choice is not None  # start_prompt refuses to start a run without one
        options = StreamOptions(api_key=choice.api_key, thinking_level=self.thinking_level,
                                headers=dict(choice.headers), session_id=self.session_id,
                                retry_base_ms=self.config.retry_base_ms)
        return LoopConfig(model=choice.model, stream_fn=choice.stream_fn, options=options,
                          system_prompt=lambda: self._system_prompt,
                          tools=lambda: [self._agent_tool(name) for name in self._active],
                          before_tool_call=self.approvals.check)

    # --- state ----------------------------------------------------------------------------------

    def set_queue_modes(self, steering: QueueMode | None = None, follow_up: QueueMode | None = None) -> None:
        if steering is not None:
            self.agent.steering_mode = steering
        if follow_up is not None:
            self.agent.follow_up_mode = follow_up

    def state(self) -> SessionState:
        return SessionState(
            model=self.model, thinking_level=self.thinking_level, is_streaming=self._busy,
            steering_mode=self.agent.steering_mode, follow_up_mode=self.agent.follow_up_mode,
            session_id=self.session_id, message_count=len(self.agent.messages),
            pending_message_count=self.agent.pending_count, cwd=self.cwd, active_tools=self.active_tools,
            scripted=self.scripted, session_file=self.session_file,
            approval_policy=self.approvals.policy,
            pending_approvals=[request.tool_call_id for request in self.approvals.pending.values()],
        )

    @property
    def messages(self) -> list[Message]:
        return self.agent.messages


def total_usage(assistants: Sequence[AssistantMessage]) -> Usage:
    usage = Usage()
    for message in assistants:
        usage = add_usage(usage, message.usage)
    return usage


def user_message(text: str, images: Sequence[ImageContent] = ()) -> UserMessage:
    if not images:
        return UserMessage(content=text)
    content: list[UserContent] = [TextContent(text=text), *images]
    return UserMessage(content=content)


def run_outcome(new_messages: list[Message], aborted: bool = False) -> PromptOutcome:
    assistants = [m for m in new_messages if isinstance(m, AssistantMessage)]
    usage = total_usage(assistants)
    if not assistants:
        return PromptOutcome(stop_reason="aborted", usage=usage)
    last = assistants[-1]
    outcome = PromptOutcome(stop_reason="aborted" if aborted else last.stop_reason, usage=usage)
    if last.error_message:
        outcome.error_message = last.error_message
    return outcome

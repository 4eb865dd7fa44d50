"""An AgentSession in-process: the scripted model, real tools in a tmp_path workspace, a session
store of its own, and a recorder of the events every front end would forward."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec

from pi_rpc.agent.types import AgentEvent, ApprovalRequest
from pi_rpc.ai.providers.faux import FAUX_MODEL, FauxProvider, Script
from pi_rpc.ai.types import Model, ThinkingLevel
from pi_rpc.session.approvals.gate import ApprovalDecision
from pi_rpc.session.checkpoints.snapshots import CheckpointSettings
from pi_rpc.session.compaction.planning import CompactionSettings
from pi_rpc.session.configuration.config import (
    ApprovalConfig,
    ModelStart,
    PersistenceConfig,
    RetryConfig,
    ToolsConfig,
)
from pi_rpc.session.session import AgentSession, ModelChoice, SessionConfig
from pi_rpc.session.storage.store import SessionRoot
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.editor_files import FileRouter
from pi_rpc.tools.mcp_config import McpServerConfig
from pi_rpc.tools.process import ProcessTable
from pi_rpc.tools.registry import create_tool_definitions

TOOLS = ["read", "bash", "edit", "write", "grep", "find", "ls"]
# A turn that streams until aborted: the session stays busy while a test looks at it.
FOREVER: list[dict[str, Any]] = [{"text": "thinking about it", "chunk": 1, "delayMs": 60_000}]


def script(*replies: dict[str, Any]) -> Script:
    """Replies in the scripted model's JSON shape (protocol/PROTOCOL.md, "Scripted model")."""
    return msgspec.convert({"replies": list(replies)}, Script)


def reply(match: str, *turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {"match": match, "turns": list(turns)}


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCall": {"name": name, "arguments": arguments}}


def scripted_choice(the_script: Script) -> ModelChoice:
    return ModelChoice(model=FAUX_MODEL, stream_fn=FauxProvider(the_script).stream, scripted=True)


def session_config(
    workspace: Path,
    the_script: Script | None,
    *,
    model: ModelChoice | None = None,
    thinking_level: ThinkingLevel = "off",
    models: ModelStart | None = None,
    definitions: dict[str, ToolDefinition] | None = None,
    active: list[str] | None = None,
    mcp_servers: list[McpServerConfig] | None = None,
    auto_enable_codemode: bool = True,
    compaction: CompactionSettings | None = None,
    checkpoints: CheckpointSettings | None = None,
    approvals: ApprovalConfig | None = None,
    retry: RetryConfig | None = None,
    withheld_env: frozenset[str] | None = None,
    resume_from: Path | None = None,
    persist: bool = True,
    session_root: SessionRoot | None = None,
) -> SessionConfig:
    """What `pi-rpc --script` builds, minus the user's settings: every model switch resolves to
        the scripted model, a model of another name is not found. `model` replaces the script's
        model, `models` the whole start (its resolvers too), `definitions` the tools (all active
    unless `active` says which), `mcp_servers` the MCP servers it starts (`auto_enable_codemode`: mcp.json's); the
    other parts, when given, theirs. The sessions are kept beside the workspace unless `session_root`."""
    scripted = scripted_choice(the_script) if the_script is not None else None
    choice = model if model is not None else scripted
    files = FileRouter()
    processes = ProcessTable()  # the tools' and the session's: closing the session kills what they left

    def resolve(provider: str, model_id: str) -> ModelChoice | None:
        return scripted if scripted is not None and (provider, model_id) == ("faux", "scripted") else None

    def available() -> list[Model]:
        return [FAUX_MODEL] if scripted is not None else []

    if definitions is None:
        definitions = create_tool_definitions(TOOLS, files, processes=processes)
    tools = ToolsConfig(
        definitions=definitions,
        active=list(definitions) if active is None else active,
        mcp_servers=mcp_servers or [],
        auto_enable_codemode=auto_enable_codemode,
        files=files,
        processes=processes,
    )
    return SessionConfig(
        cwd=str(workspace),
        models=models or ModelStart(choice=choice, thinking_level=thinking_level, available=available, resolve=resolve),
        tools=tools if withheld_env is None else msgspec.structs.replace(tools, withheld_env=withheld_env),
        persistence=PersistenceConfig(
            persist=persist, root=session_root or workspace.parent / "sessions", resume_from=resume_from
        ),
        compaction=compaction or CompactionSettings(),
        checkpoints=checkpoints or CheckpointSettings(),
        approvals=approvals or ApprovalConfig(),
        retry=retry or RetryConfig(),
    )


class Events:
    """Every event the session emitted, in order."""

    def __init__(self, session: AgentSession) -> None:
        self.all: list[AgentEvent] = []
        self._changed = anyio.Event()
        session.subscribe(self._record)

    def _record(self, event: AgentEvent) -> None:
        self.all.append(event)
        self._changed.set()

    def types(self) -> list[str]:
        return [str(type(e).__struct_config__.tag) for e in self.all]

    async def wait_for(self, predicate: Callable[[AgentEvent], bool]) -> AgentEvent:
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            while True:
                found = next((e for e in self.all if predicate(e)), None)
                if found is not None:
                    return found
                self._changed = anyio.Event()
                await self._changed.wait()

    async def wait_for_type(self, tag: str) -> AgentEvent:
        return await self.wait_for(lambda e: type(e).__struct_config__.tag == tag)


class FakeUser:
    """The user behind the editor: gives one answer to every approval request, keeping each request."""

    def __init__(self, decision: ApprovalDecision) -> None:
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return self.decision


@asynccontextmanager
async def open_session(config: SessionConfig) -> AsyncIterator[tuple[AgentSession, Events]]:
    """A session whose runs live in a task group of the test; any run left is aborted at the end."""
    async with anyio.create_task_group() as tasks:
        session = AgentSession(config, tasks)
        events = Events(session)
        try:
            yield session, events
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(30):
                await session.abort()

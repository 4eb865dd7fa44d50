"""How a session is configured: the model it starts on and how to reach it, its tools, and what
the user's settings say (built by the front ends from the command line and settings.json).

`SessionConfig` is a frozen record of parts. What holds for every session of a daemon (the model
start, the retries, the prompts, the queue modes, compaction, checkpoints, resource options) is
decided once by the command line and kept in the `DaemonContext`'s template (factory.py); what
is per folder (`ToolsConfig`, made with the folder's file router and process table,
`ApprovalConfig`, the folder's rules, and `PersistenceConfig`'s session folder) `open_folder`
fills in. A change is a new config (`msgspec.structs.replace`), never an assignment."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from pi_rpc.agent import QueueMode
from pi_rpc.ai import DEFAULT_RETRY_BASE_MS, HttpClients, Model, StreamFn, ThinkingLevel, repr_without_secrets
from pi_rpc.session.approvals.gate import ApprovalPolicy, ApprovalRules
from pi_rpc.session.checkpoints.snapshots import CheckpointSettings
from pi_rpc.session.compaction.planning import CompactionSettings
from pi_rpc.session.models.patterns import ScopedModel
from pi_rpc.session.resources.loading import ResourceOptions
from pi_rpc.session.storage.store import SessionRoot
from pi_rpc.tools import PROVIDER_KEY_VARS, FileRouter, McpServerConfig, ProcessTable, ToolDefinition


class ModelChoice(msgspec.Struct):
    """A model and how to reach it: `http` is the daemon's connection pool (pi_rpc/ai/clients.py),
    made and closed by the composition root; None, a pool per request."""

    model: Model
    stream_fn: StreamFn
    api_key: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    scripted: bool = False
    http: HttpClients | None = None

    def __repr__(self) -> str:  # no key in a log line or a test failure
        return repr_without_secrets(self, self.__struct_fields__, ("api_key", "headers"))


class ModelStart(msgspec.Struct, frozen=True):
    """The model and level a session starts on, and the models it may switch to (the daemon's)."""

    choice: ModelChoice | None = None  # None: nothing configured; prompts fail until model/set picks one
    thinking_level: ThinkingLevel = "off"
    # The level to use where nobody chose one: a resumed session that records none, a switch from
    # a model without reasoning (settings.json defaultThinkingLevel, else the mode's default).
    default_thinking_level: ThinkingLevel = "off"
    # The command line chose the model (or the level): a resumed session keeps it rather than the
    # one it recorded, as Pi does.
    model_pinned: bool = False
    thinking_pinned: bool = False
    # Every model a client may switch to, and how to reach each.
    available: Callable[[], list[Model]] = msgspec.field(default=lambda: [])
    resolve: Callable[[str, str], ModelChoice | None] = msgspec.field(default=lambda provider, model_id: None)
    # The models `cycle_model` walks (Pi's `--models`, settings.json enabledModels); empty: all.
    scoped: list[ScopedModel] = msgspec.field(default_factory=list)


class ToolsConfig(msgspec.Struct, frozen=True):
    """A folder's tools: made with its file router and process table, which they share with the session."""

    definitions: dict[str, ToolDefinition] = msgspec.field(default_factory=dict)
    active: list[str] = msgspec.field(default_factory=list)
    # Whether an MCP server's tool exists (None: not) and starts active, as `--tools`,
    # `--exclude-tools` and `--no-tools` decide (tools/registry.py `ToolSelection.mcp_tool_state`).
    mcp_tool_state: Callable[[str], bool | None] = msgspec.field(default=lambda name: True)
    # Pi's `--no-mcp`: no MCP server starts, the settings' nor a client's.
    mcp_enabled: bool = True
    # MCP tool servers every session of this folder starts (settings.json `mcpServers`, mcp.json).
    mcp_servers: list[McpServerConfig] = msgspec.field(default_factory=list)
    # mcp.json's `autoEnableCodemode`: false leaves `codemode` inactive for `codemode`-exposed tools.
    auto_enable_codemode: bool = True
    # Where read/edit/write get file contents; the tools in `definitions` must have been made with it.
    files: FileRouter = msgspec.field(default_factory=FileRouter)
    # What the shell and ripgrep tools leave running belongs to the session: the tools must have
    # been made with it. A daemon makes it in its ProcessTables (`new_table`), so its way out kills it.
    processes: ProcessTable = msgspec.field(default_factory=ProcessTable)
    # The daemon's variables its shell tools' children do not get (provider keys unless the user
    # opted in, spec 9.7); the tools in `definitions` were made with it, and tools made again (an
    # ACP session's) must be too.
    withheld_env: frozenset[str] = PROVIDER_KEY_VARS


class ApprovalConfig(msgspec.Struct, frozen=True):
    """Approvals (pi_rpc/session/approvals/gate.py): the policy until a client sets one, and the rules."""

    policy: ApprovalPolicy = "auto"
    # False: nobody chose a policy, so a client that can ask gets "ask" rather than this default.
    configured: bool = False
    rules: ApprovalRules = msgspec.field(default_factory=ApprovalRules)
    timeout: float | None = None
    save_allow_rule: Callable[[str], None] | None = None


class RetryConfig(msgspec.Struct, frozen=True):
    """Retries of a failed model request: retry n waits base_ms * 2**(n-1), at most `max` of them
    (settings.json `retry`; PI_RPC_RETRY_BASE_MS sets the base too)."""

    base_ms: int = DEFAULT_RETRY_BASE_MS
    max: int = 3
    enabled: bool = True
    # Pi mode: a failed request ends its run, and the session runs again (Pi's auto-retry event
    # order, session/auto_retry.py); the other modes retry inside the request (ai/http.py).
    after_run: bool = False


class PersistenceConfig(msgspec.Struct, frozen=True):
    """Where a session's transcript is kept (pi_rpc/session/storage/store.py) and which one it starts from."""

    persist: bool = True
    # None: the default root (`sessions_root`); a `SessionDir`: a folder the user chose (Pi's `--session-dir`).
    root: SessionRoot | None = None
    # A stored session to continue from the start (`--session`, `--continue`); a path with no
    # file yet is where the new session is kept (Pi's `--session` of a new file).
    resume_from: Path | None = None
    # A stored session (of any workspace) copied into a new one of this workspace (Pi's `--fork`).
    fork_from: Path | None = None
    # Pi's `--session-id` (the new session's id, kept by a fork too) and `--name` (the session's
    # name, recorded at start): set for the command line's own session only, not the template.
    new_session_id: str | None = None
    start_name: str | None = None


class SessionConfig(msgspec.Struct, frozen=True):
    cwd: str
    models: ModelStart = msgspec.field(default_factory=ModelStart)
    tools: ToolsConfig = msgspec.field(default_factory=ToolsConfig)
    # The base prompt in place of ours (Pi's `--system-prompt`) and what follows it
    # (`--append-system-prompt`, joined); None: the project's or agent folder's SYSTEM.md and
    # APPEND_SYSTEM.md, when there are any.
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    steering_mode: QueueMode = "one-at-a-time"
    follow_up_mode: QueueMode = "one-at-a-time"
    persistence: PersistenceConfig = msgspec.field(default_factory=PersistenceConfig)
    # When and how much to compact (settings.json `compaction`, pi_rpc/session/compaction/planning.py).
    compaction: CompactionSettings = msgspec.field(default_factory=CompactionSettings)
    # Checkpoints' limits and the shell capture switch (settings.json `checkpoints`).
    checkpoints: CheckpointSettings = msgspec.field(default_factory=CheckpointSettings)
    # Context files, prompt templates and skills (pi_rpc/session/resources/loading.py).
    resources: ResourceOptions = msgspec.field(default_factory=ResourceOptions)
    approvals: ApprovalConfig = msgspec.field(default_factory=ApprovalConfig)
    retry: RetryConfig = msgspec.field(default_factory=RetryConfig)
    # How this daemon makes a session for another folder (pi_rpc/session/configuration/factory.py, `open_folder`
    # with the daemon's context); None for a config built by hand (`folder_opener` copes).
    open_folder: Callable[[str], SessionConfig] | None = None

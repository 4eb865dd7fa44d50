"""The one way a session for a folder is configured, in every front end.

The command line decides once what holds for every session of the daemon (the model and its
resolvers, the level, the prompts, the tool names, the flags, the user's settings, the trust the
editor passed); a `DaemonContext` holds it. `open_folder` turns (that context, a folder) into the
folder's `SessionConfig`: the folder's settings merged and trust-gated (pi_rpc/session/configuration/trust.py),
its approval rules and policy, tools made with its own file router and process table, its MCP
servers and its session folder. The command line's first session, ACP's `session/new`, `load`
and `resume`, and LSP's following of the editor's root all call it; Pi mode and JSON-RPC keep the
folder they started in (a session of another workspace is refused, not moved in).

    context = DaemonContext(template=config_without_a_folder, tool_names=["read", "bash"],
                            process_tables=ProcessTables(), user_settings=load_settings())
    config = open_folder(context, "/home/me/project")   # the daemon's first session
    other = config.open_folder("/home/me/elsewhere")    # ACP session/new {cwd: elsewhere}

A config built by hand (tests, the demo) has no context: `folder_opener` derives one from it,
so its sessions for other folders are made the same way, its own fields standing for the settings.
"""

from __future__ import annotations

import functools
import logging
import shlex
from collections.abc import Callable
from pathlib import Path

import msgspec

from pi_rpc.session.approvals.gate import ApprovalPolicy, ApprovalRules, parse_rules
from pi_rpc.session.configuration.config import SessionConfig
from pi_rpc.session.configuration.settings import Settings, workspace_settings, workspace_settings_path
from pi_rpc.session.configuration.trust import (
    TrustDecision,
    TrustFileError,
    decide_trust,
    save_allow_rule,
    saved_allow_rules,
)
from pi_rpc.session.resources.loading import untrusted_resources
from pi_rpc.session.storage.store import chosen_session_root
from pi_rpc.tools import (
    FileRouter,
    McpServerConfig,
    ProcessTables,
    create_tool_definitions,
    load_mcp_files,
    servers_from_settings,
)

_log = logging.getLogger(__name__)


class DaemonContext(msgspec.Struct):
    """What the command line decided once, for every session the daemon opens."""

    # The parts no folder changes (`models`, `retry`, the prompts, queue modes, compaction,
    # checkpoints, resource options, whether to persist, the active tool names); `open_folder`
    # makes the folder's `tools`, `approvals` (after the rules given by hand, a test's) and
    # session folder.
    template: SessionConfig
    tool_names: list[str]  # the registered tools, made anew with each folder's router and table
    process_tables: ProcessTables
    # The user's settings.json; None for a config built by hand, whose own fields stand for it.
    user_settings: Settings | None = None
    approval_policy: ApprovalPolicy | None = None  # `--approval-policy` (or a hand-made config's)
    session_dir: str | None = None  # `--session-dir`
    trust: bool | None = None  # `--approve` / `--no-approve` (the editor's trust); None: the trust list
    # Folders whose ignored settings were named already: each is named once per daemon.
    warned: set[str] = msgspec.field(default_factory=set)

    @classmethod
    def of_config(cls, config: SessionConfig, process_tables: ProcessTables) -> DaemonContext:
        """The context a config built by hand implies: its own fields, no settings file of the user's."""
        return cls(
            template=config,
            tool_names=list(config.tools.definitions),
            process_tables=process_tables,
            approval_policy=config.approvals.policy if config.approvals.configured else None,
        )


def folder_trust(context: DaemonContext, folder: str) -> TrustDecision:
    """Whether `folder`'s own settings may loosen anything in this daemon (session/configuration/trust.py)."""
    default = context.user_settings.default_project_trust if context.user_settings is not None else None
    return decide_trust(folder, context.trust, default if isinstance(default, str) else None)


def untrusted_summary(folder: str, ignored: list[str], skipped: list[str]) -> str:
    """What an untrusted folder's warning names, in the log and in `pi-rpc doctor`: its settings
    ignored (by key), then its own resources not loaded (session/resources/loading.py)."""
    parts = [f"{workspace_settings_path(folder)}: {', '.join(ignored)} ignored"] if ignored else []
    return "; ".join([*parts, *([f"{folder}: {', '.join(skipped)} not loaded"] if skipped else [])])


def _save_rule(folder: str, rule: str) -> None:
    """An "allow always" rule with save: into the user's own rules for the folder, never the repository's."""
    try:
        save_allow_rule(folder, rule)
    except (TrustFileError, OSError) as exc:
        _log.warning("allow-always rule %r applies to this session only; it could not be saved: %s", rule, exc)


def open_folder(
    context: DaemonContext, folder: str, *, resume_from: Path | None = None, fork_from: Path | None = None
) -> SessionConfig:
    """The session config for `folder` (absolute, a directory). Raises SettingsError for a
    workspace settings file that does not parse, RuleError for a rule that does not.

        template = SessionConfig(cwd=cwd, models=ModelStart(choice=choice, resolve=resolve),
                                 tools=ToolsConfig(active=["read", "bash"]))
        context = DaemonContext(template=template, tool_names=["read", "bash"],
                                process_tables=ProcessTables(), user_settings=load_settings())
        config = open_folder(context, "/home/me/project")  # tools made with the folder's router
        async with anyio.create_task_group() as tasks:
            session = AgentSession(config, tasks)
            outcome = await session.prompt("What does this project do?")
    """
    template = context.template
    user = context.user_settings or Settings()
    trust = folder_trust(context, folder)
    workspace = workspace_settings(user, folder, trust.trusted)
    # The folder's own resources load only when it is trusted; every reload of the session
    # (new, switch, fork, clone) reads these options again, so it keeps the decision.
    resources = msgspec.structs.replace(template.resources, workspace_resources=trust.trusted)
    skipped = [] if trust.trusted else untrusted_resources(folder, resources)
    if (workspace.ignored or skipped) and folder not in context.warned:
        context.warned.add(folder)
        _log.warning(
            "%s: the folder is not trusted (start pi-rpc with --approve, or trust it for good: pi-rpc trust %s)",
            untrusted_summary(folder, workspace.ignored, skipped),
            shlex.quote(folder),
        )
    permissions = user.permissions
    rules = ApprovalRules(
        allow=[
            *template.approvals.rules.allow,
            *parse_rules([*permissions.allow, *saved_allow_rules(folder), *workspace.allow]),
        ],
        deny=[*template.approvals.rules.deny, *parse_rules([*permissions.deny, *workspace.deny])],
    )
    user_policy = None if not isinstance(permissions.default_policy, str) else permissions.default_policy
    policy = context.approval_policy or user_policy or workspace.default_policy
    files = FileRouter()
    processes = context.process_tables.new_table()
    session_root = (
        template.persistence.root
        if context.user_settings is None
        else chosen_session_root(
            context.session_dir, user.session_dir if isinstance(user.session_dir, str) else None, folder
        )
    )
    tools = template.tools
    mcp_servers, auto_enable_codemode = _mcp_servers(
        context, folder, trust.trusted, servers_from_settings(workspace.settings.mcp_servers)
    )
    return msgspec.structs.replace(
        template,
        cwd=folder,
        tools=msgspec.structs.replace(
            tools,
            definitions=create_tool_definitions(
                context.tool_names, files, withheld_env=tools.withheld_env, processes=processes
            ),
            files=files,
            processes=processes,
            mcp_servers=mcp_servers,
            auto_enable_codemode=auto_enable_codemode,
        ),
        approvals=msgspec.structs.replace(
            template.approvals,
            policy=policy or template.approvals.policy,
            configured=policy is not None,
            rules=rules,
            save_allow_rule=functools.partial(_save_rule, folder),
        ),
        resources=resources,
        persistence=msgspec.structs.replace(
            template.persistence, root=session_root, resume_from=resume_from, fork_from=fork_from
        ),
        open_folder=functools.partial(open_folder, context),
    )


def _mcp_servers(
    context: DaemonContext, folder: str, trusted: bool, from_settings: list[McpServerConfig]
) -> tuple[list[McpServerConfig], bool]:
    """The template's servers, settings.json `mcpServers`, then Pi's `mcp.json` files (trusted
    project's included; tools/mcp_files.py), a later one replacing an earlier of its name when
    the session starts them; and the files' `autoEnableCodemode`. A file's errors are logged once
    per daemon, as the untrusted warning is."""
    files = load_mcp_files(folder, trusted)
    for error in files.errors:
        if error not in context.warned:
            context.warned.add(error)
            _log.warning("MCP server skipped: %s", error)
    from_files = files.enabled_configs()
    named = {config.name for config in from_files}
    for config in from_settings:
        if config.name in named and f"mcp-clash:{config.name}" not in context.warned:
            context.warned.add(f"mcp-clash:{config.name}")
            _log.warning("MCP server \"%s\": mcp.json's entry replaces settings.json's", config.name)
    servers = [*context.template.tools.mcp_servers, *from_settings, *from_files]
    return servers, files.auto_enable_codemode


def folder_opener(config: SessionConfig, process_tables: ProcessTables) -> Callable[[str], SessionConfig]:
    """How the daemon `config` belongs to makes a session for a folder: through its context, or
    the one a config built by hand implies (its tables the daemon's `process_tables`)."""
    if config.open_folder is not None:
        return config.open_folder
    return functools.partial(open_folder, DaemonContext.of_config(config, process_tables))

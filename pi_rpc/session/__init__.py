"""The session core's public names: `AgentSession` and its configuration, the model choice,
settings, the session store, approvals, and the results and errors the front ends report.

The front ends import these from here (`from pi_rpc.session import AgentSession`); the modules
behind them are the layer's own. Nothing is loaded until a name is first used
(`pi_rpc/lazy_exports.py`), so importing this package loads no provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_rpc.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from pi_rpc.session.approvals import (
        APPROVAL_POLICIES,
        ApprovalDecision,
        ApprovalPolicy,
        ApprovalRules,
        Approver,
        RuleError,
        parse_rules,
    )
    from pi_rpc.session.compaction import CompactionError, CompactionResult, summary_heading
    from pi_rpc.session.entries import EntryNotOnBranchError, SessionEntry
    from pi_rpc.session.models import (
        ModelSetupError,
        choose_model,
        demo_script_path,
        model_resolvers,
        provider_key_variables,
    )
    from pi_rpc.session.resources import ResourceOptions
    from pi_rpc.session.session import (
        AgentSession,
        ModelChoice,
        ModelNotFoundError,
        NoModelError,
        SessionConfig,
        SessionNotFoundError,
    )
    from pi_rpc.session.settings import (
        SettingsError,
        load_settings,
        load_workspace_permissions,
        resolve_default_tools,
        save_workspace_allow_rule,
        settings_paths,
        workspace_settings_path,
    )
    from pi_rpc.session.store import (
        SessionSummary,
        list_all_sessions,
        list_sessions,
        private_workspace_subfolder,
        sessions_root,
    )
    from pi_rpc.session.types import PromptOutcome, SessionState, SessionStats, SlashCommand, ToolInfo
    from pi_rpc.session.user_bash import BashBusyError, BashResult, UserBashError
    from pi_rpc.session.warm_up import Step, first_prompt_steps, run_warm_up

__all__ = [
    "APPROVAL_POLICIES",
    "AgentSession",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRules",
    "Approver",
    "BashBusyError",
    "BashResult",
    "CompactionError",
    "CompactionResult",
    "EntryNotOnBranchError",
    "ModelChoice",
    "ModelNotFoundError",
    "ModelSetupError",
    "NoModelError",
    "PromptOutcome",
    "ResourceOptions",
    "RuleError",
    "SessionConfig",
    "SessionEntry",
    "SessionNotFoundError",
    "SessionState",
    "SessionStats",
    "SessionSummary",
    "SettingsError",
    "SlashCommand",
    "Step",
    "ToolInfo",
    "UserBashError",
    "choose_model",
    "demo_script_path",
    "first_prompt_steps",
    "list_all_sessions",
    "list_sessions",
    "load_settings",
    "load_workspace_permissions",
    "model_resolvers",
    "parse_rules",
    "private_workspace_subfolder",
    "provider_key_variables",
    "resolve_default_tools",
    "run_warm_up",
    "save_workspace_allow_rule",
    "sessions_root",
    "settings_paths",
    "summary_heading",
    "workspace_settings_path",
]

if not TYPE_CHECKING:  # for mypy the imports above are the names, so a misspelt one stays an error
    __getattr__, __dir__ = lazy_exports(__name__, __all__)

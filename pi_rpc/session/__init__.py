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
    from pi_rpc.session.approvals.gate import (
        APPROVAL_POLICIES,
        ApprovalDecision,
        ApprovalPolicy,
        ApprovalRules,
        Approver,
        RuleError,
        parse_rules,
    )
    from pi_rpc.session.checkpoints.session_checkpoints import (
        CheckpointFile,
        CheckpointInfo,
        RewindConflict,
        RewindDiff,
        RewindResult,
        RewindTarget,
        SessionCheckpoints,
    )
    from pi_rpc.session.compaction.planning import CompactionError, CompactionResult, estimated_tokens, summary_heading
    from pi_rpc.session.configuration.config import (
        ApprovalConfig,
        ModelStart,
        PersistenceConfig,
        RetryConfig,
        ToolsConfig,
    )
    from pi_rpc.session.configuration.factory import DaemonContext, folder_opener, folder_trust, open_folder
    from pi_rpc.session.configuration.settings import (
        Settings,
        SettingsError,
        load_settings,
        resolve_default_tools,
        settings_paths,
        with_workspace_settings,
        workspace_settings,
        workspace_settings_path,
    )
    from pi_rpc.session.configuration.trust import (
        TrustDecision,
        decide_trust,
        needs_trust,
        record_trust,
        saved_allow_rules,
        trust_file,
    )
    from pi_rpc.session.models.choice import (
        ModelSetupError,
        demo_script_path,
        model_resolvers,
        provider_key_variables,
        starting_model,
    )
    from pi_rpc.session.refusals import (
        SESSION_REFUSALS,
        CompactionRefused,
        InvalidArgument,
        NoModelConfigured,
        PromptWhileRunning,
        SessionBusy,
        SessionRefusal,
        UnknownModel,
        UnknownSessionOrEntry,
        refusal_kind,
    )
    from pi_rpc.session.resources.loading import ResourceCommand, ResourceOptions, prompt_input, untrusted_resources
    from pi_rpc.session.session import (
        AgentSession,
        ModelChoice,
        ModelNotFoundError,
        NoModelError,
        SessionConfig,
        SessionNotFoundError,
    )
    from pi_rpc.session.storage.entries import EntryNotOnBranchError, SessionEntries, SessionEntry
    from pi_rpc.session.storage.entry_kinds import Entry, LabelEntry
    from pi_rpc.session.storage.export_html import session_html
    from pi_rpc.session.storage.history import OtherWorkspaceSessionError
    from pi_rpc.session.storage.store import (
        SessionRoot,
        SessionSummary,
        chosen_session_root,
        list_all_sessions,
        list_sessions,
        load_entries,
        load_session,
        other_workspace,
        other_workspace_message,
        private_workspace_subfolder,
        sessions_folder,
        sessions_root,
    )
    from pi_rpc.session.system_prompt import build_system_prompt
    from pi_rpc.session.types import PromptOutcome, SessionState, SessionStats, SlashCommand, ToolInfo
    from pi_rpc.session.user_bash import BashBusyError, BashResult, UserBashError
    from pi_rpc.session.warm_up import WARM_UP_AFTER_S, Step, first_prompt_steps, run_warm_up

__all__ = [
    "APPROVAL_POLICIES",
    "AgentSession",
    "ApprovalConfig",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRules",
    "Approver",
    "BashBusyError",
    "BashResult",
    "CheckpointFile",
    "CheckpointInfo",
    "CompactionError",
    "CompactionRefused",
    "CompactionResult",
    "DaemonContext",
    "Entry",
    "EntryNotOnBranchError",
    "InvalidArgument",
    "LabelEntry",
    "ModelChoice",
    "ModelNotFoundError",
    "ModelSetupError",
    "ModelStart",
    "NoModelConfigured",
    "NoModelError",
    "OtherWorkspaceSessionError",
    "PersistenceConfig",
    "PromptOutcome",
    "PromptWhileRunning",
    "ResourceCommand",
    "ResourceOptions",
    "RetryConfig",
    "RewindConflict",
    "RewindDiff",
    "RewindResult",
    "RewindTarget",
    "RuleError",
    "SESSION_REFUSALS",
    "SessionBusy",
    "WARM_UP_AFTER_S",
    "SessionCheckpoints",
    "SessionConfig",
    "SessionEntries",
    "SessionEntry",
    "SessionNotFoundError",
    "SessionRefusal",
    "SessionRoot",
    "SessionState",
    "SessionStats",
    "SessionSummary",
    "Settings",
    "SettingsError",
    "SlashCommand",
    "Step",
    "ToolInfo",
    "ToolsConfig",
    "TrustDecision",
    "UnknownModel",
    "UnknownSessionOrEntry",
    "UserBashError",
    "build_system_prompt",
    "chosen_session_root",
    "decide_trust",
    "demo_script_path",
    "estimated_tokens",
    "first_prompt_steps",
    "folder_opener",
    "folder_trust",
    "list_all_sessions",
    "list_sessions",
    "load_entries",
    "load_session",
    "load_settings",
    "model_resolvers",
    "needs_trust",
    "open_folder",
    "other_workspace",
    "other_workspace_message",
    "parse_rules",
    "private_workspace_subfolder",
    "prompt_input",
    "provider_key_variables",
    "record_trust",
    "refusal_kind",
    "resolve_default_tools",
    "run_warm_up",
    "saved_allow_rules",
    "session_html",
    "sessions_folder",
    "sessions_root",
    "settings_paths",
    "starting_model",
    "summary_heading",
    "trust_file",
    "untrusted_resources",
    "with_workspace_settings",
    "workspace_settings",
    "workspace_settings_path",
]

if not TYPE_CHECKING:  # for mypy the imports above are the names, so a misspelt one stays an error
    __getattr__, __dir__ = lazy_exports(__name__, __all__)

"""`pi-rpc`: argv, logging to stderr, the model choice, then the daemon (or the demo)."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
from msgspec import UNSET

import pi_rpc
from pi_rpc.ai.clients import HttpClients
from pi_rpc.ai.config import no_model_message
from pi_rpc.ai.registry import retry_base_from_env
from pi_rpc.commands import SUBCOMMANDS, run_subcommand, subcommands_help
from pi_rpc.session.approvals import APPROVAL_POLICIES, ApprovalRules, RuleError, parse_rules
from pi_rpc.session.models import ModelSetupError, choose_model, model_resolvers, provider_key_variables
from pi_rpc.session.resources import ResourceOptions
from pi_rpc.session.session import SessionConfig
from pi_rpc.session.settings import (
    SettingsError,
    load_settings,
    load_workspace_permissions,
    resolve_default_tools,
    save_workspace_allow_rule,
)
from pi_rpc.session.store import list_sessions
from pi_rpc.session.warm_up import first_prompt_steps
from pi_rpc.tools.editor_files import FileRouter
from pi_rpc.tools.mcp_config import servers_from_settings
from pi_rpc.tools.pending_writes import sweep_stale_temp_files
from pi_rpc.tools.process import ProcessTables
from pi_rpc.tools.registry import ToolSelection, create_tool_definitions, tools_help, unknown_tool_names

_log = logging.getLogger("pi_rpc")


def _names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pi-rpc",
        description="The Pi coding agent as a JSON-RPC daemon on stdio (the protocol: `pi-rpc protocol`).",
        epilog=tools_help() + "\n\n" + subcommands_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-v",
        "--version",
        action=_ShowVersion,
        nargs=0,
        help="show the version, the protocol versions and Python's, then exit",
    )
    parser.add_argument("--cwd", default=os.getcwd(), help="workspace the tools work in (default: .)")
    parser.add_argument("--provider", help="provider name (anthropic, openai, or one from models.json)")
    parser.add_argument("--model", help="model id")
    parser.add_argument(
        "--api",
        choices=["anthropic-messages", "openai-completions", "openai-responses"],
        help="wire API of a custom endpoint (with --base-url)",
    )
    parser.add_argument("--base-url", help="base URL of any compatible server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the key for --base-url (default: no key is sent)",
    )
    parser.add_argument(
        "--script",
        help="scripted-model script (JSON), for demos and tests: canned replies whose tool calls really run in --cwd",
    )
    parser.add_argument("-t", "--tools", type=_names, help="allowlist: only these tools exist and are active")
    parser.add_argument("--exclude-tools", type=_names, default=[], help="tools that do not exist")
    parser.add_argument(
        "--framing",
        choices=["lsp", "jsonl"],
        default="lsp",
        help="LSP base framing (Content-Length headers, default) or JSON lines",
    )
    parser.add_argument(
        "--mode",
        choices=["jsonrpc", "pi", "rpc", "acp", "lsp"],
        default="jsonrpc",
        help="jsonrpc (default; see `pi-rpc protocol`), pi (or rpc, Pi's own name): Pi's "
        "own `--mode rpc` JSON lines, for clients written for Pi, acp: the Agent "
        "Client Protocol (Zed and other ACP editors), or lsp: a language server (code "
        "actions, progress, edits by workspace/applyEdit) for any LSP editor",
    )
    parser.add_argument(
        "--approval-policy",
        choices=APPROVAL_POLICIES,
        help="when tools wait for the user's approval: ask, acceptEdits (edits and writes in "
        "the workspace run), auto (everything runs, as in Pi), readOnly (nothing that "
        "changes files or runs commands). Default: settings.json permissions.defaultPolicy; "
        "else ask for a client that can show approvals and auto for one that cannot",
    )
    parser.add_argument(
        "--thinking",
        default="off",
        choices=["off", "minimal", "low", "medium", "high", "xhigh"],
        help="thinking (reasoning) level of the first model, clamped to what it supports (default: off)",
    )
    parser.add_argument(
        "--no-session", action="store_true", help="keep the transcript in memory only (no session file)"
    )
    parser.add_argument(
        "--pass-provider-keys-to-tools",
        action="store_true",
        help="let bash/powershell commands inherit the provider API key variables "
        "(withheld by default; settings.json: passProviderKeysToTools)",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("PI_RPC_LOG", "WARNING"),
        help="DEBUG, INFO, WARNING or ERROR; logs go to stderr (default: $PI_RPC_LOG, else WARNING)",
    )
    add_pi_flags(parser)
    return parser


class _ShowVersion(argparse.Action):
    """--version, computed only when asked for: the ACP SDK is slow to import for a daemon that
    does not speak ACP."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from acp import PROTOCOL_VERSION as ACP_PROTOCOL_VERSION

        from pi_rpc.modes.jsonrpc.protocol import PROTOCOL_VERSION

        sys.stdout.write(
            f"pi-rpc {pi_rpc.__version__} (protocol {PROTOCOL_VERSION}, ACP protocol "
            f"{ACP_PROTOCOL_VERSION}, Python {sys.version.split()[0]})\n"
        )
        parser.exit()


def add_pi_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of Pi's own command line that a Pi client passes (its `RpcClient` adds any list of
    `args`): those that mean something here are honoured, the rest are accepted and ignored."""
    pi = parser.add_argument_group(
        "Pi's flags", "accepted so that clients written for `pi --mode rpc` start this daemon unchanged"
    )
    pi.add_argument("--session-dir", help="root folder of the session files (default: the user data folder)")
    pi.add_argument("--session", metavar="PATH", help="continue the session stored in this file")
    pi.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="continue this workspace's most recent session",
    )
    pi.add_argument("-r", "--resume", action="store_true", help="as --continue (there is no picker on a pipe)")
    pi.add_argument("--api-key", help="API key of the chosen provider")
    pi.add_argument(
        "--append-system-prompt", metavar="TEXT_OR_FILE", help="text (or a file of text) appended to the system prompt"
    )
    pi.add_argument(
        "-nt",
        "--no-tools",
        "-nbt",
        "--no-builtin-tools",
        dest="no_tools",
        action="store_true",
        help="start with no tool active",
    )
    pi.add_argument("--offline", action="store_true", help="accepted: pi-rpc never calls home")
    for flag in ("--system-prompt", "--fork", "--models", "--export", "--theme"):
        pi.add_argument(flag, help=argparse.SUPPRESS)
    pi.add_argument("--skill", action="append", default=[], metavar="PATH", help="a skill file or folder to load")
    pi.add_argument(
        "--prompt-template",
        action="append",
        default=[],
        metavar="PATH",
        help="a prompt template file or folder to load",
    )
    pi.add_argument("-ns", "--no-skills", action="store_true", help="load no skills but those of --skill")
    pi.add_argument(
        "-np",
        "--no-prompt-templates",
        action="store_true",
        help="load no prompt templates but those of --prompt-template",
    )
    pi.add_argument("-nc", "--no-context-files", action="store_true", help="leave AGENTS.md/CLAUDE.md out")
    pi.add_argument("--extension", "-e", action="append", default=[], help=argparse.SUPPRESS)
    for flags in (("-ne", "--no-extensions"), ("--no-themes",), ("--verbose",)):
        pi.add_argument(*flags, action="store_true", help=argparse.SUPPRESS)


def _append_system_prompt(value: str | None) -> str | None:
    """Pi reads the value as a file when one exists by that name."""
    if value and os.path.isfile(value):
        with open(value, encoding="utf-8") as source:
            return source.read()
    return value


def _resume_path(args: argparse.Namespace, cwd: str, root: Path | None) -> Path | None:
    if args.session:
        path = Path(args.session).expanduser()
        if path.is_file():
            return path
        _log.warning("--session %s: no such session file; starting a new session", path)
        return None
    if args.continue_session or args.resume:
        sessions = list_sessions(cwd, root)
        return Path(sessions[0].path) if sessions else None
    return None


def build_session_config(
    args: argparse.Namespace, http: HttpClients | None = None, process_tables: ProcessTables | None = None
) -> SessionConfig:
    """The session the command line asks for; its model requests go through `http`, the daemon's
    pool, and its table of processes is made in `process_tables`, the daemon's."""
    cwd = os.path.abspath(os.path.expanduser(args.cwd))
    if not os.path.isdir(cwd):
        raise ModelSetupError(f"--cwd {cwd} is not a directory")
    for name in unknown_tool_names([*(args.tools or []), *args.exclude_tools]):
        _log.warning("Unknown tool %r ignored", name)
    settings = load_settings()
    default_tools = None if settings.default_tools is UNSET else resolve_default_tools(settings.default_tools)
    selection = ToolSelection(allow=args.tools, exclude=args.exclude_tools, default_tools=default_tools)
    choice = choose_model(
        provider=args.provider,
        model_id=args.model,
        api=args.api,
        base_url=args.base_url,
        script=args.script,
        api_key_env=args.api_key_env,
        http=http,
    )
    if choice is not None and args.api_key:
        choice.api_key = args.api_key
    if choice is None:
        _log.warning("%s", no_model_message())
    available, resolve = model_resolvers(choice, http)
    files = FileRouter()
    processes = (process_tables if process_tables is not None else ProcessTables()).new_table()
    workspace_permissions = load_workspace_permissions(cwd)
    permissions = settings.permissions
    rules = ApprovalRules(
        allow=parse_rules([*permissions.allow, *workspace_permissions.allow]),
        deny=parse_rules([*permissions.deny, *workspace_permissions.deny]),
    )
    policy = args.approval_policy or (permissions.default_policy or None)
    pass_keys = args.pass_provider_keys_to_tools or settings.pass_provider_keys_to_tools
    withheld_env = frozenset() if pass_keys else provider_key_variables()
    session_root = Path(os.path.abspath(os.path.expanduser(args.session_dir))) if args.session_dir else None
    return SessionConfig(
        cwd=cwd,
        model=choice,
        tools=create_tool_definitions(selection.registered(), files, withheld_env=withheld_env, processes=processes),
        files=files,
        processes=processes,
        approval_policy=policy or "auto",
        approval_policy_configured=policy is not None,
        approval_rules=rules,
        approval_timeout=permissions.timeout_seconds or None,
        save_allow_rule=lambda rule: save_workspace_allow_rule(cwd, rule),
        active_tools=[] if args.no_tools else selection.initial_active(),
        thinking_level=args.thinking,
        append_system_prompt=_append_system_prompt(args.append_system_prompt),
        available_models=available,
        resolve_model=resolve,
        steering_mode=settings.steering_mode or "one-at-a-time",
        follow_up_mode=settings.follow_up_mode or "one-at-a-time",
        persist=not args.no_session,
        session_root=session_root,
        retry_base_ms=retry_base_from_env(),
        mcp_servers=servers_from_settings(settings.mcp_servers),
        resume_from=_resume_path(args, cwd, session_root),
        compaction=settings.compaction,
        resources=ResourceOptions(
            context_files=not args.no_context_files,
            skills=not args.no_skills,
            skill_paths=args.skill,
            prompt_templates=not args.no_prompt_templates,
            prompt_template_paths=args.prompt_template,
        ),
    )


async def run_daemon(serve: Callable[[], Awaitable[None]], http: HttpClients) -> None:
    """Run a daemon to its end, then close its HTTP pool (its sessions are closed by then, so no
    request is left to use it), whichever way it ended."""
    try:
        await serve()
    finally:
        await http.aclose()


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in SUBCOMMANDS:
        sys.exit(run_subcommand(argv[0], argv[1:]))
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="pi-rpc %(levelname)s %(name)s: %(message)s"
    )
    # pygls logs every outbound body at INFO and every error reply with a traceback; the
    # daemon logs what matters itself (rpc.py, server.py).
    logging.getLogger("pygls").setLevel(logging.CRITICAL)
    sweep_stale_temp_files()  # what a killed daemon's atomic writes left in a workspace
    # The daemon's one HTTP pool: every session's model requests reuse its connections, and it is
    # closed once the daemon has wound down (`run_daemon`).
    http = HttpClients()
    # The daemon's process tables: every session's table is made in them, and every way out of the
    # daemon kills what any session's tools left running through them (modes/daemon.py).
    tables = ProcessTables()
    try:
        config = build_session_config(args, http, tables)
    except (ModelSetupError, SettingsError, RuleError) as exc:
        print(f"pi-rpc: {exc}", file=sys.stderr)  # noqa: T201 - stderr, before the daemon exists
        sys.exit(2)
    # Readied while the daemon waits for its first prompt (session/warm_up.py).
    warm_up = first_prompt_steps(config)
    if args.mode in ("pi", "rpc"):
        from pi_rpc.modes.pi.server import PiDaemon

        anyio.run(run_daemon, functools.partial(PiDaemon(config, process_tables=tables).run, warm_up), http)
    elif args.mode == "acp":
        from pi_rpc.modes.acp.server import AcpDaemon

        anyio.run(run_daemon, functools.partial(AcpDaemon(config, process_tables=tables).run, warm_up), http)
    elif args.mode == "lsp":
        from pi_rpc.modes.lsp.server import LspDaemon

        # Without --cwd the server works in the editor's workspace root, as language servers do.
        pinned = any(arg == "--cwd" or arg.startswith("--cwd=") for arg in argv)

        def follow(root: str) -> SessionConfig:
            return build_session_config(argparse.Namespace(**{**vars(args), "cwd": root}), http, tables)

        lsp = LspDaemon(config, workspace_config=None if pinned else follow, process_tables=tables)
        anyio.run(run_daemon, functools.partial(lsp.run, warm_up), http)
    else:
        from pi_rpc.modes.jsonrpc.server import Daemon

        daemon = Daemon(config, framing=args.framing, process_tables=tables)
        anyio.run(run_daemon, functools.partial(daemon.run, warm_up), http)
    sys.stderr.flush()
    # A reader thread may still sit in read(0): leave without waiting for it.
    os._exit(0)

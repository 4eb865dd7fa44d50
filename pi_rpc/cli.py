"""`pi-rpc`: argv, logging to stderr, the model choice, then the daemon (or the demo)."""

from __future__ import annotations

import argparse
import functools
import gc
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import NoReturn

import anyio
import msgspec
from msgspec import UNSET

import pi_rpc
from pi_rpc.ai import (
    RETRY_BASE_ENV,
    HttpClients,
    ThinkingLevel,
    endpoint_apis,
    no_model_message,
    retry_base_from_env,
    thinking_level_of,
)
from pi_rpc.commands import SUBCOMMANDS, run_subcommand, subcommands_help
from pi_rpc.key_handoff import hide_keys_from_proc, key_from_file
from pi_rpc.modes.stack_dumps import dump_threads_on_sigusr1
from pi_rpc.pi_args import PiExtras
from pi_rpc.pi_flags import (
    MAX_THINKING,
    PI_MODES,
    PRINT_MODES,
    SessionArgumentError,
    add_pi_flags,
    command_line_notices,
    export_session,
    list_models_text,
    names,
    parse_command_line,
    session_paths,
)
from pi_rpc.session import (
    APPROVAL_POLICIES,
    ApprovalConfig,
    DaemonContext,
    ModelSetupError,
    ModelStart,
    PersistenceConfig,
    ResourceOptions,
    RetryConfig,
    RuleError,
    SessionConfig,
    Settings,
    SettingsError,
    ToolsConfig,
    chosen_session_root,
    first_prompt_steps,
    load_settings,
    model_resolvers,
    open_folder,
    prompt_input,
    provider_key_variables,
    resolve_default_tools,
    starting_model,
    with_workspace_settings,
)
from pi_rpc.tools import (
    ProcessTables,
    ToolSelection,
    sweep_stale_temp_files,
    tools_help,
    unknown_tool_names,
)

# httpx imports its own command-line client whenever it is imported and click and pygments are
# installed (they often are, for other tools); the daemon never runs it. Refusing that one module
# keeps about 1.6 MiB and 15 ms out of every daemon that talks to a model (httpx then defines a
# `main` that says how to install its client).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

_log = logging.getLogger("pi_rpc")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pi-rpc",
        description="The Pi coding agent as a JSON-RPC daemon on stdio (the protocol: `pi-rpc protocol`).",
        epilog=tools_help() + "\n\n" + subcommands_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # Pi reads an abbreviation as an unknown flag (pi_args.py), not as an option
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
        choices=endpoint_apis(),
        help="wire API of a custom endpoint (with --base-url)",
    )
    parser.add_argument("--base-url", help="base URL of any compatible server, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="environment variable holding the key for --base-url (default: no key is sent)",
    )
    parser.add_argument(
        "--api-key-file",
        dest="api_key",
        metavar="PATH",
        type=key_from_file,
        help="file holding the API key of the chosen provider (its first line): unlike --api-key, "
        "the key is then on no command line",
    )
    parser.add_argument(
        "--script",
        help="scripted-model script (JSON), for demos and tests: canned replies whose tool calls really run in --cwd",
    )
    parser.add_argument(
        "-t",
        "--tools",
        type=names,
        help="allowlist of tool names or patterns (*): only these exist, all active (MCP servers' tools stay, "
        "inactive, unless an entry starts with mcp__); or only +name/-name entries, which edit the default set",
    )
    parser.add_argument(
        "-xt",
        "--exclude-tools",
        type=names,
        default=[],
        help="tool names or patterns (*) that do not exist, MCP servers' tools included",
    )
    parser.add_argument(
        "--framing",
        choices=["lsp", "jsonl"],
        default="lsp",
        help="LSP base framing (Content-Length headers, default) or JSON lines",
    )
    parser.add_argument(
        "--mode",
        choices=["jsonrpc", "pi", "rpc", "acp", "lsp", *PRINT_MODES],
        default="jsonrpc",
        help="jsonrpc (default; see `pi-rpc protocol`), pi (or rpc, Pi's own name): Pi's "
        "own `--mode rpc` JSON lines, for clients written for Pi, acp: the Agent "
        "Client Protocol (Zed and other ACP editors), or lsp: a language server (code "
        "actions, progress, edits by workspace/applyEdit) for any LSP editor; Pi's print "
        "modes text and json are refused (a daemon answers no one-off prompt)",
    )
    parser.add_argument(
        "--partial-messages",
        action="store_true",
        help="Pi mode: each message_update carries the whole message so far (`message` and "
        "`assistantMessageEvent.partial`), as Pi 0.73.1 sent it, for clients that render from it; "
        "newer Pi and this daemon leave them out by default (their size grows with the square of "
        "the answer's length)",
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
        metavar="LEVEL",
        help="thinking (reasoning) level of the first model: off, minimal, low, medium, high, xhigh or max, "
        "clamped to what it supports (default: settings.json defaultThinkingLevel, else medium in Pi "
        "mode as in Pi, off in the others; an unknown level is warned about and ignored, as Pi does)",
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


def _thinking(
    args: argparse.Namespace, settings: Settings, model_level: ThinkingLevel | None
) -> tuple[ThinkingLevel, ThinkingLevel, bool]:
    """(the first level, the default level, whether the command line chose it), in Pi's order (spec 18.10):
    `--thinking`, a `--model pattern:level`, the scope's level, settings.json defaultThinkingLevel,
    the mode's default (Pi's medium in Pi mode; off in the others, where reasoning is paid for
    only when a client asks)."""
    saved = None if settings.default_thinking_level is UNSET else settings.default_thinking_level
    if saved is not None and thinking_level_of(saved) is None:
        _log.warning("settings.json defaultThinkingLevel %r is no level pi-rpc knows; ignored", saved)
    default: ThinkingLevel = thinking_level_of(saved) or ("medium" if args.mode in PI_MODES else "off")
    # Pi's `max` clamps to the highest level a model has, pi-rpc's xhigh at most (pi_flags.py).
    chosen = thinking_level_of("xhigh" if args.thinking == MAX_THINKING else args.thinking)
    if chosen is not None:
        return chosen, default, True
    if model_level is not None:
        return model_level, default, args.model is not None
    return default, default, False


def build_session_config(
    args: argparse.Namespace, http: HttpClients | None = None, process_tables: ProcessTables | None = None
) -> SessionConfig:
    """The session the command line asks for; its model requests go through `http`, the daemon's
    pool, and its table of processes is made in `process_tables`, the daemon's. What the command
    line decides here once is the daemon's context (session/configuration/factory.py): every session the daemon
    opens for a folder, this first one included, is made from it by `open_folder`."""
    cwd = os.path.abspath(os.path.expanduser(args.cwd))
    if not os.path.isdir(cwd):
        raise ModelSetupError(f"--cwd {cwd} is not a directory")
    for name in unknown_tool_names([*(args.tools or []), *args.exclude_tools]):
        _log.warning("Unknown tool %r ignored" if "*" not in name else "Tool pattern %r matches no tool", name)
    user = load_settings()
    # The workspace's model defaults are harmless and apply, trusted or not (settings.py).
    settings = with_workspace_settings(user, cwd, warn=False)  # the factory warns, below
    default_tools = None if settings.default_tools is UNSET else resolve_default_tools(settings.default_tools)
    selection = ToolSelection(
        tools=args.tools,
        exclude=args.exclude_tools,
        default_tools=default_tools,
        no_tools="all" if args.no_tools else "builtin" if args.no_builtin_tools else None,
    )
    if args.tools and not selection.initial_active() and selection.allow is not None:
        _log.warning("--tools %s leaves no built-in tool active", ",".join(args.tools))
    session_root = chosen_session_root(
        args.session_dir, None if settings.session_dir is UNSET else settings.session_dir, cwd
    )
    try:
        resume_from, fork_from = session_paths(args, cwd, session_root)
    except SessionArgumentError as exc:
        raise ModelSetupError(str(exc)) from exc
    saved = settings.default_provider, settings.default_model
    start = starting_model(
        provider=args.provider,
        model_id=args.model,
        api=args.api,
        base_url=args.base_url,
        script=args.script,
        api_key_env=args.api_key_env,
        http=http,
        scope_patterns=args.models or (settings.enabled_models or []),
        saved=None if UNSET in saved else (str(saved[0]), str(saved[1])),
        resuming=fork_from is not None or (resume_from is not None and resume_from.exists()),
    )
    for warning in start.warnings:
        _log.warning("%s", warning)
    choice = start.choice
    if choice is not None and args.api_key:
        choice.api_key = args.api_key
    if choice is None:
        _log.warning("%s", no_model_message())
    level, default_level, level_pinned = _thinking(args, settings, start.thinking_level)
    available, resolve = model_resolvers(choice, http)
    pass_keys = args.pass_provider_keys_to_tools or settings.pass_provider_keys_to_tools
    appended = [prompt_input(value, "append system prompt") for value in args.append_system_prompt]
    template = SessionConfig(
        cwd=cwd,
        models=ModelStart(
            choice=choice,
            thinking_level=level,
            default_thinking_level=default_level,
            model_pinned=start.pinned,
            thinking_pinned=level_pinned,
            available=available,
            resolve=resolve,
            scoped=start.scope,
        ),
        tools=ToolsConfig(  # the definitions are made for each folder (DaemonContext.tool_names)
            active=selection.initial_active(),
            mcp_tool_state=selection.mcp_tool_state,
            mcp_enabled=not args.no_mcp,
            withheld_env=frozenset() if pass_keys else provider_key_variables(),
        ),
        approvals=ApprovalConfig(timeout=settings.permissions.timeout_seconds or None),
        system_prompt=prompt_input(args.system_prompt, "system prompt") if args.system_prompt else None,
        append_system_prompt="\n\n".join(appended) if appended else None,
        steering_mode=settings.steering_mode or "one-at-a-time",
        follow_up_mode=settings.follow_up_mode or "one-at-a-time",
        persistence=PersistenceConfig(persist=not args.no_session),
        retry=RetryConfig(
            base_ms=retry_base_from_env()
            if os.environ.get(RETRY_BASE_ENV, "").strip()
            else settings.retry.base_delay_ms,
            max=settings.retry.max_retries,
            enabled=settings.retry.enabled,
        ),
        compaction=settings.compaction,
        checkpoints=settings.checkpoints,
        resources=ResourceOptions(
            context_files=not args.no_context_files,
            skills=not args.no_skills,
            skill_paths=args.skill,
            prompt_templates=not args.no_prompt_templates,
            prompt_template_paths=args.prompt_template,
        ),
    )
    context = DaemonContext(
        template=template,
        tool_names=selection.registered(),
        process_tables=process_tables if process_tables is not None else ProcessTables(),
        user_settings=user,
        approval_policy=args.approval_policy,
        session_dir=args.session_dir,
        trust=args.project_trust,
    )
    config = open_folder(context, cwd, resume_from=resume_from, fork_from=fork_from)
    # The command line's own session only: a folder opened later gets a new id and no name.
    new_session_id = None
    if args.session_id is not None and resume_from is None:
        if not args.no_session:
            _log.warning("No project session found with id '%s'; creating a new session with that id.", args.session_id)
        new_session_id = args.session_id
    persistence = msgspec.structs.replace(
        config.persistence,
        start_name=args.name.strip() if args.name is not None else None,
        new_session_id=new_session_id,
    )
    return msgspec.structs.replace(config, persistence=persistence)


def _one_shot(args: argparse.Namespace, extras: PiExtras) -> int | None:
    """Pi's flags that do their work and exit instead of starting a daemon (`--export`,
    `--list-models`): their exit status, None when there is none of them."""
    if args.export:
        try:
            written = export_session(args.export, extras.messages[0] if extras.messages else None)
        except (SessionArgumentError, OSError) as exc:
            print(f"pi-rpc: {exc}", file=sys.stderr)  # noqa: T201 - stderr, no daemon
            return 1
        print(f"Exported to: {written}")  # noqa: T201 - the one line Pi prints
        return 0
    if extras.list_models is not None:
        from pi_rpc.ai import ConfigError

        try:
            sys.stdout.write(list_models_text(extras.list_models if isinstance(extras.list_models, str) else None))
        except ConfigError as exc:
            print(f"pi-rpc: {exc}", file=sys.stderr)  # noqa: T201 - stderr, no daemon
            return 2
        return 0
    return None


def resume_collector() -> None:
    """The cyclic collector back on, if the entry point (`pi_rpc.__main__.run`) turned it off for
    the imports: what they made is frozen first, out of every later collection's walk. Before the
    session is built, so whatever garbage reading settings and sessions leaves is collected."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def refuse_command_line(errors: Sequence[str], *, pi_mode: bool) -> NoReturn:
    """Exit with `errors` on stderr. In Pi mode every refusal is one Pi 1.6.0 makes in the same words,
    so it is printed as Pi prints it (`Error: …`) with Pi's status, 1, for a client that reads either;
    pi-rpc's own modes say `pi-rpc: …` and exit 2, as argparse does."""
    for error in errors:
        print(f"Error: {error}" if pi_mode else f"pi-rpc: {error}", file=sys.stderr)  # noqa: T201 - no daemon yet
    sys.exit(1 if pi_mode else 2)


async def run_daemon(serve: Callable[[], Awaitable[None]], http: HttpClients) -> None:
    """Run a daemon to its end, then close its HTTP pool (its sessions are closed by then, so no
    request is left to use it), whichever way it ended."""
    try:
        await serve()
    finally:
        await http.aclose()


def main(argv: Sequence[str] | None = None) -> None:
    hide_keys_from_proc(argv, provider_key_variables)  # before anything else: see key_handoff.py
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in SUBCOMMANDS:
        resume_collector()
        sys.exit(run_subcommand(argv[0], argv[1:]))
    args, extras = parse_command_line(build_parser(), argv)
    logging.basicConfig(
        stream=sys.stderr, level=args.log_level.upper(), format="pi-rpc %(levelname)s %(name)s: %(message)s"
    )
    status = _one_shot(args, extras)
    if status is not None:
        sys.exit(status)
    dump_threads_on_sigusr1()  # `kill -USR1`: every thread's stack to the log (modes/stack_dumps.py)
    notices = command_line_notices(args, extras)
    for warning in notices.warnings:
        _log.warning("%s", warning)
    if notices.errors:
        refuse_command_line(notices.errors, pi_mode=args.mode in PI_MODES)
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
    resume_collector()
    try:
        config = build_session_config(args, http, tables)
    except (ModelSetupError, SettingsError, RuleError) as exc:
        print(f"pi-rpc: {exc}", file=sys.stderr)  # noqa: T201 - stderr, before the daemon exists
        sys.exit(2)
    # Readied while the daemon waits for its first prompt (session/warm_up.py).
    warm_up = first_prompt_steps(config)
    if args.mode in PI_MODES:
        from pi_rpc.modes.pi.server import PiDaemon

        pi = PiDaemon(config, process_tables=tables, partial_messages=args.partial_messages)
        anyio.run(run_daemon, functools.partial(pi.run, warm_up), http)
    elif args.mode == "acp":
        from pi_rpc.modes.acp.server import AcpDaemon

        anyio.run(run_daemon, functools.partial(AcpDaemon(config, process_tables=tables).run, warm_up), http)
    elif args.mode == "lsp":
        from pi_rpc.modes.lsp.server import LspDaemon

        # Without --cwd the server works in the editor's workspace root, as language servers do.
        pinned = any(arg == "--cwd" or arg.startswith("--cwd=") for arg in argv)

        # The editor's root gets its session as any folder does (session/configuration/factory.py).
        lsp = LspDaemon(config, workspace_config=None if pinned else config.open_folder, process_tables=tables)
        anyio.run(run_daemon, functools.partial(lsp.run, warm_up), http)
    else:
        from pi_rpc.modes.jsonrpc.server import Daemon

        daemon = Daemon(config, framing=args.framing, process_tables=tables)
        anyio.run(run_daemon, functools.partial(daemon.run, warm_up), http)
    sys.stderr.flush()
    # A reader thread may still sit in read(0): leave without waiting for it.
    os._exit(0)

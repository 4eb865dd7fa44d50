"""Pi's command-line flags, which a Pi client passes to `pi-rpc --mode rpc` as it would to `pi`:
what each one means for a daemon. Those with a meaning here are honoured; those that only concern
Pi's terminal UI or its TypeScript extensions are accepted with a warning naming them; those Pi
1.6.0 refuses are refused in its words (an unknown flag, a bad `--tools` list), and those that ask
for something a daemon cannot be (Pi's print mode) with a sentence saying why.
docs/CONFIGURATION.md lists every flag and which of the three it is.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from pi_rpc.ai import THINKING_LEVELS
from pi_rpc.pi_args import PiExtras, split_pi_argv
from pi_rpc.session import (
    SessionRoot,
    SessionSummary,
    list_all_sessions,
    list_sessions,
    other_workspace,
    other_workspace_message,
)
from pi_rpc.tools import tool_list_error

PI_MODES = ("pi", "rpc")
PRINT_MODES = ("text", "json")
NO_DAEMON = "pi-rpc is a daemon only"
# Pi 1.6.0's levels (cli/args.js VALID_THINKING_LEVELS): `max` is read as the highest level the
# model supports, as Pi clamps it for a model that has no level above xhigh (pi-rpc's xhigh
# already asks Anthropic for its `max` effort).
MAX_THINKING = "max"
CLI_THINKING_LEVELS = (*THINKING_LEVELS, MAX_THINKING)


def names(value: str) -> list[str]:
    return [name.strip() for name in value.split(",") if name.strip()]


def add_pi_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of Pi's own command line that a Pi client passes (its `RpcClient` adds any list of
    `args`); Pi's unknown flags, messages and `@file`s are read by pi_args.py."""
    pi = parser.add_argument_group(
        "Pi's flags", "accepted so that clients written for `pi --mode rpc` start this daemon unchanged"
    )
    pi.add_argument(
        "--session-dir",
        help="the folder session files are kept in, every workspace's together, as Pi keeps them there "
        "(else $PI_CODING_AGENT_SESSION_DIR, else settings.json sessionDir; default: a folder per "
        "workspace in the user data folder)",
    )
    pi.add_argument(
        "--session",
        metavar="PATH|ID",
        help="continue a stored session: a file (a new one is started there when it does not exist), "
        "or a session id or the start of one",
    )
    pi.add_argument(
        "--fork",
        metavar="PATH|ID",
        help="start a new session of this workspace holding a copy of a stored one (any workspace's)",
    )
    pi.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="continue this workspace's most recent session",
    )
    pi.add_argument(
        "--session-id",
        metavar="ID",
        help="continue this workspace's session of exactly that id, else start a new session with that id",
    )
    pi.add_argument("-n", "--name", help="the session's name (recorded at start, as session/setName records it)")
    pi.add_argument("-r", "--resume", action="store_true", help="as --continue (there is no picker on a pipe)")
    pi.add_argument(
        "--api-key",
        help="API key of the chosen provider; discouraged, as any user sees a command line until the "
        "daemon has re-executed itself without it: prefer a variable (--api-key-env) or --api-key-file",
    )
    pi.add_argument(
        "--system-prompt", metavar="TEXT_OR_FILE", help="the base system prompt in place of pi-rpc's (text, or a file)"
    )
    pi.add_argument(
        "--append-system-prompt",
        action="append",
        default=[],
        metavar="TEXT_OR_FILE",
        help="text (or a file of text) appended to the system prompt; repeatable",
    )
    pi.add_argument(
        "--models",
        type=names,
        metavar="PATTERNS",
        help="the models cycle_model walks, comma-separated: ids, provider/id, parts of ids or globs, "
        "each with an optional :level (default: settings.json enabledModels)",
    )
    pi.add_argument("-nt", "--no-tools", dest="no_tools", action="store_true", help="start with no tool active")
    pi.add_argument(
        "-nbt",
        "--no-builtin-tools",
        dest="no_builtin_tools",
        action="store_true",
        help="start with no built-in tool active (MCP servers' tools stay active)",
    )
    # Pi's project trust (session/configuration/trust.py): for this run, not recorded, as Pi's help says.
    pi.add_argument(
        "-a",
        "--approve",
        dest="project_trust",
        action="store_const",
        const=True,
        default=None,
        help="trust the workspace's own .pi/settings.json for this run: its allow rules, defaultPolicy and "
        "mcpServers apply (not recorded; an editor passes it when it trusts the workspace)",
    )
    pi.add_argument(
        "-na",
        "--no-approve",
        dest="project_trust",
        action="store_const",
        const=False,
        help="treat the workspace as untrusted for this run, whatever the trust list says: its own settings "
        "may only tighten (deny rules)",
    )
    pi.add_argument(
        "--no-mcp",
        action="store_true",
        help="start no MCP server: neither settings.json mcpServers nor those an editor passes",
    )
    pi.add_argument("--offline", action="store_true", help="accepted: pi-rpc never calls home")
    pi.add_argument("--export", metavar="SESSION_FILE", help="write that session as HTML, then exit (no daemon)")
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
    pi.add_argument("-ne", "--no-extensions", action="store_true", help="accepted: pi-rpc discovers no Pi extensions")
    pi.add_argument(
        "--extension",
        "-e",
        action="append",
        default=[],
        metavar="PATH",
        help="warned about: pi-rpc does not run Pi's TypeScript extensions",
    )
    pi.add_argument(
        "--theme", action="append", default=[], metavar="PATH", help="warned about: a daemon has no terminal UI"
    )
    pi.add_argument("--no-themes", action="store_true", help="warned about: a daemon has no terminal UI")
    pi.add_argument("--verbose", action="store_true", help="warned about: use --log-level for a daemon's logs")


def option_forms(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    """Every option string of `parser`: the long form that takes its value, or None for a flag."""
    forms: dict[str, str | None] = {}
    for action in parser._actions:
        takes_value = action.nargs != 0
        long_form = next((o for o in action.option_strings if o.startswith("--")), None)
        for option in action.option_strings:
            forms[option] = (long_form or option) if takes_value else None
    return forms


def parse_command_line(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[argparse.Namespace, PiExtras]:
    """argparse for the daemon's options, Pi's own reading (pi_args.py) for the rest."""
    known, extras = split_pi_argv(argv, option_forms(parser))
    return parser.parse_args(known), extras


class Notices(msgspec.Struct):
    errors: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)


def command_line_notices(args: argparse.Namespace, extras: PiExtras) -> Notices:
    """What the command line asks for that pi-rpc refuses (errors; in Pi mode each is Pi 1.6.0's own
    refusal, in its words) or accepts without acting on (warnings, each naming its flag). An
    invalid `--thinking` is dropped from `args`, as Pi drops it."""
    notices = Notices()
    pi_mode = args.mode in PI_MODES
    if args.mode in PRINT_MODES:
        notices.errors.append(
            f"--mode {args.mode} is Pi's print mode (answer one prompt on stdout, then exit); {NO_DAEMON}: "
            "start it with --mode rpc and send the prompt as a `prompt` command, or run pi for a one-off answer"
        )
    if extras.print_mode:
        if pi_mode:
            notices.warnings.append("-p/--print ignored: with --mode rpc Pi ignores it too (prompts come on stdin)")
        elif args.mode not in PRINT_MODES:
            notices.errors.append(
                f"-p/--print is Pi's print mode (answer one prompt, then exit); {NO_DAEMON}: start it with "
                "--mode rpc and send the prompt as a `prompt` command, or run pi for a one-off answer"
            )
    if extras.file_args:
        notices.errors.append("@file arguments are not supported in RPC mode")
    flags = [f"--{name}" if value is True else f"--{name} {value}" for name, value in extras.unknown_flags.items()]
    if pi_mode:
        if extras.messages and not extras.print_mode:
            notices.warnings.append(
                f"{len(extras.messages)} message(s) on the command line ignored, as Pi ignores them in RPC mode: "
                "send them as `prompt` commands"
            )
        if args.extension:  # the flags may be those extensions' own, which Pi would take and pi-rpc cannot run
            notices.warnings += [
                f"{flag} ignored: an unknown flag, which an extension of -e may register (pi-rpc runs none)"
                for flag in flags
            ]
        elif extras.unknown_flags:  # Pi 1.6.0 refuses a flag no loaded extension registered
            unknown = [f"--{name}" for name in extras.unknown_flags]
            notices.errors.append(f"Unknown option{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}")
    elif args.mode not in PRINT_MODES and (flags or extras.messages and not extras.print_mode):
        # No Pi client starts the other modes: what Pi would pass on is a mistake here.
        stray = [*flags, *([] if extras.print_mode else extras.messages)]
        notices.errors.append(
            f"unrecognized arguments: {' '.join(stray)} (Pi's extension flags and messages are for --mode rpc)"
        )
    notices.errors += [f"Unknown option: {option}" for option in extras.unknown_short]
    if args.thinking is not None and args.thinking not in CLI_THINKING_LEVELS:
        notices.warnings.append(
            f'Invalid thinking level "{args.thinking}". Valid values: {", ".join(CLI_THINKING_LEVELS)}'
        )
        args.thinking = None
    tools_error = tool_list_error(args.tools) if args.tools is not None else None
    if tools_error is not None:
        notices.errors.append(f"--tools: {tools_error}")
    if args.name is not None and not args.name.strip():
        notices.errors.append("--name requires a non-empty value")
    if args.session_id is not None:
        notices.errors += session_id_errors(args)
    for path in args.extension:
        notices.warnings.append(f"--extension {path} ignored: pi-rpc does not run Pi's TypeScript extensions")
    for path in args.theme:
        notices.warnings.append(f"--theme {path} ignored: a daemon has no terminal UI")
    if args.no_themes:
        notices.warnings.append("--no-themes ignored: a daemon has no terminal UI")
    if args.verbose:
        notices.warnings.append("--verbose ignored: a daemon's logs follow --log-level (or $PI_RPC_LOG)")
    if args.fork:
        clashing = [
            flag
            for flag, given in (
                ("--session", args.session),
                ("--continue", args.continue_session),
                ("--resume", args.resume),
                ("--no-session", args.no_session),
            )
            if given
        ]
        if clashing:
            notices.errors.append(f"--fork cannot be combined with {', '.join(clashing)}")
    return notices


# Pi 1.6.0 (session-manager.js `assertValidSessionId`).
_SESSION_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def session_id_errors(args: argparse.Namespace) -> list[str]:
    """What Pi 1.6.0 refuses about `--session-id` (main.js `validateSessionIdFlags`)."""
    clashing = [
        flag
        for flag, given in (
            ("--session", args.session),
            ("--continue", args.continue_session),
            ("--resume", args.resume),
            ("--fork", args.fork),  # Pi gives the fork that id; pi-rpc's fork keeps a new one
        )
        if given
    ]
    if clashing:
        return [f"--session-id cannot be combined with {', '.join(clashing)}"]
    if _SESSION_ID.fullmatch(args.session_id) is None:
        return [
            "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
            "and start and end with an alphanumeric character"
        ]
    return []


class SessionArgumentError(ValueError):
    pass


def _looks_like_a_path(argument: str) -> bool:
    return "/" in argument or "\\" in argument or argument.endswith(".jsonl")


def _by_id_prefix(sessions: list[SessionSummary], prefix: str) -> SessionSummary | None:
    return next((summary for summary in sessions if summary.session_id.startswith(prefix)), None)


def session_argument(argument: str, cwd: str, root: SessionRoot | None, *, fork: bool) -> Path:
    """The file `--session` (or `--fork`) names, as Pi resolves it: a path as it is; else the
    newest session of this workspace whose id starts so, else of any workspace (which `--session`
    refuses: continuing it here would move it; `--fork` copies it)."""
    if _looks_like_a_path(argument):
        path = Path(argument).expanduser().absolute()
        other = other_workspace(path, cwd) if path.is_file() and not fork else None
        if other is not None:
            raise SessionArgumentError(f"--session {argument}: {other_workspace_message(argument, other)}")
        return path
    local = _by_id_prefix(list_sessions(cwd, root), argument)
    if local is not None:
        return Path(local.path)
    anywhere = next((found for found in list_all_sessions(root) if found[1].session_id.startswith(argument)), None)
    if anywhere is None:
        raise SessionArgumentError(f"No session found matching '{argument}'")
    other_cwd, summary = anywhere
    if not fork:
        raise SessionArgumentError(f"--session {argument}: {other_workspace_message(argument, other_cwd)}")
    return Path(summary.path)


def session_paths(args: argparse.Namespace, cwd: str, root: SessionRoot | None) -> tuple[Path | None, Path | None]:
    """(the session to continue, or to be kept at a new path; the session to fork) the command
    line names."""
    if args.fork:
        source = session_argument(args.fork, cwd, root, fork=True)
        if not source.is_file():
            raise SessionArgumentError(f"Cannot fork: source session file is empty or invalid: {source}")
        return None, source
    if args.session:
        return session_argument(args.session, cwd, root, fork=False), None
    if args.continue_session or args.resume:
        sessions = list_sessions(cwd, root)
        return (Path(sessions[0].path) if sessions else None), None
    if args.session_id and not args.no_session:  # Pi: this workspace's session of exactly that id
        same = next((found for found in list_sessions(cwd, root) if found.session_id == args.session_id), None)
        if same is not None:
            return Path(same.path), None
    return None, None


def export_session(source: str, output: str | None) -> str:
    """`--export FILE [OUTPUT]`: the stored session as an HTML page (default
    `pi-session-{file name}.html` here, as Pi names it); returns where it was written."""
    from pi_rpc.session import load_entries, session_html

    path = Path(source)
    if not path.is_file():
        raise SessionArgumentError(f"File not found: {source}")
    try:
        header, entries = load_entries(path)
    except (OSError, ValueError, IndexError) as exc:
        raise SessionArgumentError(f"{source}: not a session file ({exc})") from exc
    target = Path(output or f"pi-session-{path.stem}.html")
    page = session_html(f"pi-rpc session {header.id}", entries, session_id=header.id, started=header.timestamp)
    target.write_text(page, encoding="utf-8")
    return str(target)


def fuzzy_match(query: str, text: str) -> bool:
    """Every word of `query` appears in `text` in order, letters possibly apart (`--list-models`'s
    search, case-insensitive)."""
    haystack = text.lower()
    for word in query.lower().split():
        position = 0
        for char in word:
            position = haystack.find(char, position) + 1
            if position == 0:
                return False
    return True


def list_models_text(search: str | None) -> str:
    """`--list-models [search]`: the models whose provider has a key (Pi lists those), narrowed to
    the ones `search` fuzzily names, as `pi-rpc models` shows them."""
    from pi_rpc.ai import ModelRegistry, no_model_message
    from pi_rpc.commands.models import model_rows, render_table

    registry = ModelRegistry.load()
    rows = [row for row in model_rows(registry) if row.has_key]
    if not rows:
        return no_model_message() + "\n"
    if search:
        rows = [row for row in rows if fuzzy_match(search, f"{row.provider} {row.id}")]
        if not rows:
            return f'No models matching "{search}"\n'
    return render_table(rows, registry)

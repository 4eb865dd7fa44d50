"""`pi-rpc doctor`: one line per thing a first hour with pi-rpc depends on, and an exit status
that says whether any of them is broken (1) or all is usable (0; warnings included).

Every line starts with its status word (`ok`, `info`, `warn`, `fail`) so that editor health
checks (Neovim's `:checkhealth pi_rpc`) can map lines to their own levels. `--live` adds the
requests of a real turn, one output token each, to the model a daemon would start on, with the
same flags the daemon takes (commands/live_probe.py), and names the fix for the first refusal.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator

import anyio
import msgspec

from pi_rpc.ai import endpoint_apis
from pi_rpc.commands.checks import Check, offline_checks
from pi_rpc.commands.live_probe import probe_server
from pi_rpc.session import ModelSetupError, starting_model


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pi-rpc doctor",
        description="Check the installation, the configuration files, the folders pi-rpc writes, each "
        "provider's key (by name, never its value) and the tools' binaries. Exit status 1 "
        "when something is broken.",
    )
    parser.add_argument("--cwd", default=os.getcwd(), help="workspace whose .pi/settings.json is checked too")
    parser.add_argument(
        "--live",
        action="store_true",
        help="also send a real turn's requests (system prompt, tools, a tool-call replay; one output token "
        "each) to the model a daemon with these flags would use, and name the fix for the first refused",
    )
    parser.add_argument("--provider", help="with --live: as for the daemon")
    parser.add_argument("--model", help="with --live: as for the daemon")
    parser.add_argument(
        "--api",
        choices=endpoint_apis(),
        help="with --live and --base-url: the wire API",
    )
    parser.add_argument("--base-url", help="with --live: a compatible server, as for the daemon")
    parser.add_argument("--api-key-env", metavar="NAME", help="with --live and --base-url: the key's variable")
    parser.add_argument("--json", action="store_true", help="the checks as a JSON array")
    return parser


def live_check(args: argparse.Namespace) -> Check:
    try:
        choice = starting_model(
            provider=args.provider,
            model_id=args.model,
            api=args.api,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
        ).choice
    except ModelSetupError as exc:
        return Check("fail", "live request", str(exc))
    if choice is None:
        return Check("fail", "live request", "no model is configured, so there is nothing to ask")
    return anyio.run(probe_server, choice, os.path.abspath(os.path.expanduser(args.cwd)))


def run_checks(args: argparse.Namespace) -> Iterator[Check]:
    yield from offline_checks(os.path.abspath(os.path.expanduser(args.cwd)))
    if args.live:
        yield live_check(args)


def format_check(check: Check) -> str:
    line = f"{check.status:<4}  {check.label}: {check.detail}"
    return line + (f"\n      → {check.hint}" if check.hint else "")


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    checks: list[Check] = []
    for check in run_checks(args):
        checks.append(check)
        if not args.json:
            sys.stdout.write(format_check(check) + "\n")
            sys.stdout.flush()  # a slow check (a live request) shows the lines before it
    failures = sum(check.status == "fail" for check in checks)
    warnings = sum(check.status == "warn" for check in checks)
    if args.json:
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(checks), indent=2) + b"\n")
    else:
        verdict = "no problems found" if not failures else f"{failures} problem(s) found"
        sys.stdout.write(f"\n{verdict}, {warnings} warning(s).\n")
    sys.stdout.flush()
    return 1 if failures else 0

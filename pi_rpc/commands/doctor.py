"""`pi-rpc doctor`: one line per thing a first hour with pi-rpc depends on, and an exit status
that says whether any of them is broken (1) or all is usable (0; warnings included).

Every line starts with its status word (`ok`, `info`, `warn`, `fail`) so that editor health
checks (Neovim's `:checkhealth pi_rpc`) can map lines to their own levels. `--live` adds one
tiny request to the model a daemon would start on, with the same flags the daemon takes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator

import anyio
import msgspec

from pi_rpc.ai import AssistantBuilder, Context, StreamOptions, UserMessage, request_secrets
from pi_rpc.ai.redact import redact
from pi_rpc.commands.checks import Check, offline_checks
from pi_rpc.session import ModelChoice, ModelSetupError, starting_model

# A stuck server must not hang the doctor; this bounds the whole live request.
LIVE_TIMEOUT_SECONDS = 60.0
# The Responses API refuses max_output_tokens below 16; the others take 1.
_MIN_OUTPUT_TOKENS = {"openai-responses": 16}


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
        help="also send a one-token request to the model a daemon with these flags would use",
    )
    parser.add_argument("--provider", help="with --live: as for the daemon")
    parser.add_argument("--model", help="with --live: as for the daemon")
    parser.add_argument(
        "--api",
        choices=["anthropic-messages", "openai-completions", "openai-responses"],
        help="with --live and --base-url: the wire API",
    )
    parser.add_argument("--base-url", help="with --live: a compatible server, as for the daemon")
    parser.add_argument("--api-key-env", metavar="NAME", help="with --live and --base-url: the key's variable")
    parser.add_argument("--json", action="store_true", help="the checks as a JSON array")
    return parser


async def _one_token(choice: ModelChoice) -> Check:
    model = choice.model
    name = f"{model.provider}/{model.id}"
    builder = AssistantBuilder(model)
    builder.keep_secret(*request_secrets(choice.api_key, choice.headers))
    options = StreamOptions(
        api_key=choice.api_key,
        headers=choice.headers,
        max_retries=0,
        max_tokens=_MIN_OUTPUT_TOKENS.get(model.api, 1),
        idle_timeout=LIVE_TIMEOUT_SECONDS,
    )
    context = Context(system_prompt="", messages=[UserMessage(content="Reply with the single word: ok")])
    with anyio.move_on_after(LIVE_TIMEOUT_SECONDS) as deadline:
        message = await choice.stream_fn(model, context, options, builder)
    if deadline.cancelled_caught:
        return Check("fail", "live request", f"{name} at {model.base_url}: no answer in {LIVE_TIMEOUT_SECONDS:.0f} s")
    if message.stop_reason == "error":
        error = message.error_message if isinstance(message.error_message, str) else "unknown error"
        secrets = request_secrets(choice.api_key, choice.headers)
        return Check("fail", "live request", f"{name} at {model.base_url}: {redact(error, secrets)}")
    return Check("ok", "live request", f"{name} at {model.base_url} answered")


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
    return anyio.run(_one_token, choice)


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

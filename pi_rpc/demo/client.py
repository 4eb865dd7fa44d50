"""`pi-rpc demo`: the daemon driven by a small terminal client, on a scratch copy of a sample project.

It shows what an editor sees: assistant text and thinking streaming in, each tool call with its
arguments, live output, results (a truncated one with the path of its full log), and an abort that
stops a running command at once. With no API key the scripted model answers; with
ANTHROPIC_API_KEY or OPENAI_API_KEY set, a real model does the same tasks.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from pi_rpc.demo.rpc_client import DaemonClient
from pi_rpc.demo.sample_project import copy_sample_project
from pi_rpc.session import ModelSetupError, demo_script_path, starting_model

PROMPTS = [
    "Show me around this project.",
    "Fix the bug described in the README, then run the script to check it.",
    "Run a noisy build step that prints 5000 log lines.",
    "Run the slow job (it sleeps for 30 seconds).",
    "Write a short summary of what we did to NOTES.md.",
]
ABORT_PROMPT = 3  # index of the prompt the demo aborts
ABORT_AFTER_SECONDS = 1.5


class Style:
    def __init__(self, enabled: bool) -> None:
        on = enabled
        self.dim = "\033[2m" if on else ""
        self.bold = "\033[1m" if on else ""
        self.cyan = "\033[36m" if on else ""
        self.green = "\033[32m" if on else ""
        self.red = "\033[31m" if on else ""
        self.yellow = "\033[33m" if on else ""
        self.reset = "\033[0m" if on else ""


class Renderer:
    """Turns agent events into terminal output as they arrive (runs on the client's reader thread)."""

    def __init__(self, out: TextIO, style: Style) -> None:
        self.out = out
        self.s = style

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def __call__(self, notification: dict[str, Any]) -> None:
        if notification.get("method") != "agent/event":
            return
        event = notification["params"]
        handler = getattr(self, "on_" + event["type"], None)
        if handler is not None:
            handler(event)

    def on_message_update(self, event: dict[str, Any]) -> None:
        inner = event["assistantMessageEvent"]
        kind = inner["type"]
        if kind == "text_start":
            self.write(f"\n{self.s.bold}assistant>{self.s.reset} ")
        elif kind == "thinking_start":
            self.write(f"\n{self.s.dim}thinking> ")
        elif kind in ("text_delta", "thinking_delta"):
            self.write(inner["delta"])
        elif kind == "thinking_end":
            self.write(self.s.reset)
        elif kind == "error":
            self.write(f"\n{self.s.red}[{inner['reason']}] {inner['errorMessage']}{self.s.reset}")

    def on_tool_execution_start(self, event: dict[str, Any]) -> None:
        args = ", ".join(f"{k}={_short(v)}" for k, v in event["args"].items())
        self.write(f"\n{self.s.cyan}⚙ {event['toolName']}({args}){self.s.reset}")

    def on_tool_execution_update(self, event: dict[str, Any]) -> None:
        text = "".join(block.get("text", "") for block in event["partialResult"].get("content", []))
        last = text.rstrip("\n").rsplit("\n", 1)[-1]
        if last:
            self.write(f"\n{self.s.dim}  │ {last[:100]}{self.s.reset}")

    def on_tool_execution_end(self, event: dict[str, Any]) -> None:
        result = event["result"]
        text = "".join(block.get("text", "") for block in result.get("content", []) if block["type"] == "text")
        mark = f"{self.s.red}✗" if event["isError"] else f"{self.s.green}✓"
        lines = text.split("\n")
        shown = lines if len(lines) <= 8 else [*lines[:3], f"… ({len(lines) - 6} more lines) …", *lines[-3:]]
        body = "\n".join(f"  {line}" for line in shown)
        self.write(f"\n{mark} {event['toolName']}{self.s.reset} ({event.get('durationMs', 0)} ms)\n{body}")
        details = result.get("details") or {}
        if isinstance(details, dict) and details.get("fullOutputPath"):
            truncation = details.get("truncation", {})
            self.write(
                f"\n{self.s.yellow}  truncated: kept {truncation.get('outputLines')} of "
                f"{truncation.get('totalLines')} lines; full log at {details['fullOutputPath']}{self.s.reset}"
            )

    def on_agent_end(self, event: dict[str, Any]) -> None:
        self.write("\n")


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


class DemoFailed(Exception):
    """A prompt ended in an error: the demo stops there, the error already on screen."""


def _demo_model_args() -> list[str]:
    """The scripted model, on purpose, when no real model is configured; else nothing (the daemon
    picks the real one). The daemon itself never falls back to the script."""
    try:
        configured = starting_model().choice is not None
    except ModelSetupError:
        configured = False  # the daemon will not start on this config either; the script will
    return [] if configured else ["--script", demo_script_path()]


def _on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through the finally below, which removes the scratch copy


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="pi-rpc demo", description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep the scratch workspace afterwards")
    parser.add_argument("--no-color", action="store_true")
    args = parser.parse_args(argv)
    style = Style(enabled=sys.stdout.isatty() and not args.no_color and "NO_COLOR" not in os.environ)

    signal.signal(signal.SIGTERM, _on_sigterm)
    scratch = Path(tempfile.mkdtemp(prefix="pi-rpc-demo-"))
    renderer = Renderer(sys.stdout, style)
    code = 0
    client: DaemonClient | None = None
    try:
        copy_sample_project(scratch)
        # --no-session: the scratch workspace is thrown away, so its transcript need not be kept.
        client = DaemonClient(
            ["--cwd", str(scratch), "--no-session", *_demo_model_args()], on_notification=renderer, stderr=None
        )
        run_demo(client, renderer, style, scratch)
    except DemoFailed:
        code = 1
    except KeyboardInterrupt:
        renderer.write("\n")
        code = 130
    finally:
        if client is not None:
            closed = _close_quietly(client)
            code = code or closed
        if args.keep:
            renderer.write(f"workspace kept at {scratch}\n")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(code)


def _close_quietly(client: DaemonClient) -> int:
    """Close the daemon even while a second Ctrl-C or SIGTERM arrives: no traceback, no orphan."""
    while True:
        try:
            return client.close()
        except KeyboardInterrupt:
            continue
        except subprocess.TimeoutExpired:
            return 1


def run_demo(client: DaemonClient, renderer: Renderer, style: Style, scratch: Path) -> None:
    info = client.request("initialize", {"clientInfo": {"name": "pi-rpc demo"}})
    model = info["model"]
    who = "the built-in scripted model (no API key set)" if info["scripted"] else f"{model['provider']}/{model['id']}"
    active = [t["name"] for t in info["tools"] if t["active"]]
    renderer.write(
        f"{style.bold}pi-rpc demo{style.reset}: {who}\nworkspace: {scratch}\nactive tools: {', '.join(active)}\n"
    )
    for index, text in enumerate(PROMPTS):
        renderer.write(f"\n{style.bold}{style.green}you>{style.reset} {text}")
        if index == ABORT_PROMPT:
            run_and_abort(client, renderer, text, style)
        else:
            outcome = client.request("prompt", {"message": text}, timeout=600)
            _report(outcome, renderer, style)
            renderer.write(
                f"{style.dim}[{outcome['stopReason']}, {outcome['usage']['totalTokens']} tokens]{style.reset}\n"
            )
    renderer.write(f"\n{style.bold}Done.{style.reset} The daemon exits cleanly when its stdin closes.\n")


def _report(outcome: dict[str, Any], renderer: Renderer, style: Style) -> None:
    """Stop at the first failed run, with its error on screen: the next prompts would fail alike."""
    if outcome.get("stopReason") != "error":
        return
    renderer.write(f"\n{style.red}The model failed: {outcome.get('errorMessage', 'unknown error')}{style.reset}\n")
    raise DemoFailed


def run_and_abort(client: DaemonClient, renderer: Renderer, text: str, style: Style) -> None:
    prompt_id = client.request_nowait("prompt", {"message": text})
    # Wait for the command to start, or for the run to end without one (a model error, or a model
    # that chose not to run it): never for a fixed time in silence.
    ended = client.wait_for_message(
        lambda m: (
            m.get("id") == prompt_id
            or (m.get("method") == "agent/event" and m["params"]["type"] == "tool_execution_start")
        ),
        timeout=600,
    )
    if ended.get("id") == prompt_id:
        outcome = client.result(prompt_id)
        _report(outcome, renderer, style)
        renderer.write(f"{style.dim}[{outcome['stopReason']}: no command to abort]{style.reset}\n")
        return
    time.sleep(ABORT_AFTER_SECONDS)  # let the user see the command running before pressing "stop"
    renderer.write(f"\n{style.red}>>> abort{style.reset}")
    started = time.monotonic()
    client.request("abort")
    elapsed = (time.monotonic() - started) * 1000
    outcome = client.result(prompt_id)
    renderer.write(
        f"{style.dim}[{outcome['stopReason']}; abort returned in {elapsed:.0f} ms, "
        f"the command's process group is gone]{style.reset}\n"
    )

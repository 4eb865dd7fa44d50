"""A real local model through pi-rpc against the same server called directly: time to the first
text delta and tokens a second, i.e. what the daemon adds to a turn against llama.cpp.

Run: `make llama && .venv/bin/python bench/bench_local_model.py [--runs 5] [--server llama-server]`

The server is the test tier's build (tests/providers/local: SmolLM2-135M, 8k context, one slot;
llama-server with SmolLM2's own template, which drops the tool list), a models.json provider of
the daemon whose maxTokens caps both sides' answers. Each run times three prompts, taking turns so that a change
in load falls on all alike: a fresh daemon prompted as soon as it answered `initialize` (its
start-up is not timed, but what it readies for its first prompt in its first quarter second
is), the server called directly, and a fresh daemon prompted `--settle` seconds after
`initialize` (as an editor's daemon is by its user's first prompt). A daemon's prompt is timed
from the write of `prompt` to the first `text_delta` on stdout and to the prompt's result. The
direct call sends the body pi-rpc sends for that prompt (built by the same provider code: the
daemon's system prompt as text, its default tools, the output cap), byte for byte the same, so
the server's prompt cache serves every call alike, over one HTTP stream of a client made before
timing, and times the first content chunk and `[DONE]`. Tokens a second are the server's
reported completion tokens (where it reports none, as llama-cpp-python's stream does, the text
deltas: it sends one a token) over the time from the first delta to the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from daemons import process_cpu_seconds, source_revision  # noqa: E402 - bench/ is the script's folder

from pi_rpc.ai import Context, Model, StreamOptions, UserMessage, sections_text  # noqa: E402
from pi_rpc.ai.providers.openai_completions import build_request_body  # noqa: E402
from pi_rpc.demo.rpc_client import DaemonClient  # noqa: E402
from pi_rpc.session import build_system_prompt  # noqa: E402
from pi_rpc.tools import DEFAULT_ACTIVE_TOOLS, create_tool_definitions  # noqa: E402
from tests.e2e.conftest import daemon_env  # noqa: E402
from tests.providers.local.servers import (  # noqa: E402
    CONTEXT_TOKENS,
    MODEL_ID,
    SERVER_KINDS,
    LlamaProcess,
    ServerKind,
    installed_llama,
)

# Answered at length with the prompt cached or not: llama.cpp's answer to a prompt it has cached
# can differ from its first (SmolLM2 greedy answered "Count from 1 to 60" with 96 tokens, then 10).
PROMPT = "Write a long story about a dragon."
# Every answer is cut here (or ends before): the same length through pi-rpc and directly.
MAX_TOKENS = 96
# An editor's daemon has been up for a while by the user's first prompt: by then it has readied
# what the first prompt needs (session/warm_up.py, a quarter second after start).
SETTLE_SECONDS = 1.0


@dataclass
class Timing:
    first_delta: float  # seconds from the request to the first text
    total: float  # seconds from the request to the end
    output_tokens: int
    cpu: float = 0.0  # seconds of CPU the daemon used for the prompt (0 for the direct call)

    @property
    def tokens_per_second(self) -> float:
        generating = self.total - self.first_delta
        return self.output_tokens / generating if generating > 0 else float("nan")


def write_models_json(server: LlamaProcess, home: Path) -> None:
    """The server as a models.json provider, so the answer is capped at MAX_TOKENS for both sides."""
    folder = home / ".config" / "pi-rpc"
    folder.mkdir(parents=True, exist_ok=True)
    model = {"id": MODEL_ID, "contextWindow": CONTEXT_TOKENS, "maxTokens": MAX_TOKENS, "input": ["text"]}
    provider = {"baseUrl": server.base_url, "api": "openai-completions", "models": [model]}
    (folder / "models.json").write_text(json.dumps({"providers": {"local": provider}}))


def through_pi_rpc(server: LlamaProcess, cwd: Path, settle: float) -> Timing:
    """One prompt to a fresh daemon, `settle` seconds after its `initialize` was answered."""
    client = DaemonClient(
        ["--cwd", str(cwd), "--provider", "local", "--model", MODEL_ID],
        framing="jsonl",
        env=daemon_env(cwd / "home"),
    )
    try:
        client.request("initialize", {"clientInfo": {"name": "bench"}})
        time.sleep(settle)
        cpu_before = process_cpu_seconds(client.proc.pid)
        start = time.perf_counter()
        prompt = client.request_nowait("prompt", {"message": PROMPT})
        client.wait_for_event(
            lambda e: e.get("type") == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta",
            timeout=300,
        )
        first = time.perf_counter() - start
        result = client.result(prompt, timeout=600)
        total = time.perf_counter() - start
        cpu = process_cpu_seconds(client.proc.pid) - cpu_before
        deltas = sum(
            e.get("type") == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"
            for e in client.events()
        )
    finally:
        client.close()
    # llama-cpp-python's stream reports no usage; it sends one chunk a token, as the direct count.
    return Timing(first, total, int(result["usage"]["output"]) or deltas, cpu)


def direct_body(server: LlamaProcess, cwd: Path) -> dict[str, object]:
    """The body pi-rpc's provider builds for PROMPT in a fresh session of the daemon."""
    model = Model(
        id=MODEL_ID,
        name=MODEL_ID,
        api="openai-completions",
        provider="local",
        base_url=server.base_url,
        context_window=CONTEXT_TOKENS,
        max_tokens=MAX_TOKENS,
        input=["text"],
    )
    definitions = create_tool_definitions(DEFAULT_ACTIVE_TOOLS)
    context = Context(
        system_prompt=sections_text(build_system_prompt(list(definitions.values()), str(cwd))),
        messages=[UserMessage(content=PROMPT)],
        tools=[definition.declaration() for definition in definitions.values()],
    )
    return build_request_body(model, context, StreamOptions())


def direct(http: httpx.Client, server: LlamaProcess, body: dict[str, object]) -> Timing:
    first, usage_tokens, streamed = 0.0, 0, 0
    start = time.perf_counter()
    with http.stream("POST", server.base_url + "/chat/completions", json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices") or []:
                if (choice.get("delta") or {}).get("content"):
                    streamed += 1
                    if not first:
                        first = time.perf_counter() - start
            if chunk.get("usage"):
                usage_tokens = int(chunk["usage"].get("completion_tokens") or 0)
    return Timing(first, time.perf_counter() - start, usage_tokens or streamed)


def report(name: str, timings: list[Timing]) -> str:
    ttft = statistics.median(t.first_delta for t in timings) * 1000
    rate = statistics.median(t.tokens_per_second for t in timings)
    tokens = statistics.median(t.output_tokens for t in timings)
    cpu = statistics.median(t.cpu for t in timings) * 1000
    daemon = f", daemon CPU {cpu:5.1f} ms" if cpu else ""
    return (
        f"  {name:<8} time to first text {ttft:8.1f} ms   {rate:7.1f} tokens/s   ({tokens:.0f} tokens{daemon}, median)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--server", choices=SERVER_KINDS, action="append", help="default: both")
    parser.add_argument(
        "--settle",
        type=float,
        default=SETTLE_SECONDS,
        help=f"seconds the second daemon of a run waits after initialize (default {SETTLE_SECONDS})",
    )
    args = parser.parse_args()
    install = installed_llama()
    print(  # noqa: T201 - the report
        f"pi-rpc {source_revision(None)}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f} before"
    )
    kinds: list[ServerKind] = args.server or list(SERVER_KINDS)
    # The system prompt names the folder, so a random name would change the answer from one run of
    # the benchmark to the next (its length, and with it the tokens a second): one fixed path.
    cwd = Path(tempfile.gettempdir()) / "pi-rpc-bench-local-model"
    shutil.rmtree(cwd, ignore_errors=True)
    cwd.mkdir()
    try:
        (cwd / "home").mkdir()
        for kind in kinds:
            server = LlamaProcess(kind, install, cwd)
            try:
                server.wait_ready()
                write_models_json(server, cwd / "home")
                body = direct_body(server, cwd)
                runs: dict[str, list[Timing]] = {"direct": [], "pi-rpc": [], "settled": []}
                # The direct client is made before any timing, as the daemon's is before its prompt.
                with httpx.Client(timeout=600) as http:
                    direct(http, server, body)  # warm-up: loads the prompt cache for all
                    for _ in range(args.runs):
                        runs["pi-rpc"].append(through_pi_rpc(server, cwd, 0.0))
                        runs["direct"].append(direct(http, server, body))
                        runs["settled"].append(through_pi_rpc(server, cwd, args.settle))
            finally:
                server.stop()
            print(f"{kind} (SmolLM2-135M Q4_1, {args.runs} runs each, taking turns):")  # noqa: T201
            for name, timings in runs.items():
                print(report(name, timings))  # noqa: T201
            for name, what in (("pi-rpc", "prompted at once"), ("settled", f"prompted {args.settle:g} s later")):
                overhead = statistics.median(
                    d.first_delta - r.first_delta for d, r in zip(runs[name], runs["direct"], strict=True)
                )
                print(f"  pi-rpc {what} adds {overhead * 1000:.1f} ms to the first text (median of the pairs)")  # noqa: T201
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} after")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())

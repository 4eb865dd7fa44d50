"""Scenarios run against real Pi (`pi --mode rpc` from npm) and against pi-rpc alike, each on a
loopback OpenAI-compatible server replaying the same scripted replies; both read the same
models.json and settings.json through PI_CODING_AGENT_DIR.

`python -m tests.e2e.pi_parity record [SCENARIO ...]` runs real Pi 1.6.0 (installed in tests/pi16_client)
through every scenario, or the ones named, and writes what it printed to tests/e2e/pi_transcripts/
(and, for a scenario that names one, the session file Pi wrote); tests/e2e/test_pi_parity.py runs
pi-rpc through the same scenarios and compares, after `normalise` keeps only what must match (ids
and times dropped).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread

from tests.node_packages import PI16_CLIENT, real_pi16, runtime_of
from tests.providers.sse_server import Reply, SSEServer, json_reply, sse_event, sse_reply

Json = dict[str, Any]
HERE = Path(__file__).parent
TRANSCRIPTS = HERE / "pi_transcripts"
SAMPLE = HERE.parents[1] / "pi_rpc" / "demo" / "workspace"


def chunk(delta: Json, finish: str | None = None) -> bytes:
    return sse_event(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def turn(
    text: str = "", call: tuple[str, str, Json] | None = None, prompt_tokens: int = 10, stall: bool = False
) -> Reply:
    events = [chunk({"role": "assistant", "content": ""})]
    if text:
        events.append(chunk({"content": text}))
    if stall:
        return sse_reply(events, stall=True)
    if call is not None:
        call_id, name, arguments = call
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)},
                        }
                    ]
                }
            )
        )
    events.append(chunk({}, "tool_calls" if call else "stop"))
    events.append(
        sse_event(
            {
                "id": "chatcmpl-1",
                "choices": [],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5},
            }
        )
    )
    events.append(b"data: [DONE]\n\n")
    return sse_reply(events)


Predicate = Callable[[Json], bool]
# A server's refusal of a request larger than the model's window (OpenAI's wording).
OVERFLOW = {
    "error": {"message": "Your input exceeds the context window of this model", "type": "invalid_request_error"}
}


def event(kind: str) -> Predicate:
    return lambda line: line.get("type") == kind


def response(command: str) -> Predicate:
    return lambda line: line.get("type") == "response" and line.get("command") == command


# A server error the provider's own client does not retry (the OpenAI SDK Pi uses honours
# `x-should-retry`), so the session's auto-retry is what recovers, in both agents.
SERVER_ERROR = json_reply(500, {"error": {"message": "boom"}}, headers={"x-should-retry": "false"})


@dataclass
class Scenario:
    name: str
    replies: list[Reply]
    # (wait until a line matches, then send this command); None waits for nothing
    steps: list[tuple[Predicate | None, Json]]
    done: Predicate
    settings: Json = field(default_factory=dict)
    # Where the recorder keeps the session file Pi wrote, for the session tests (None: not kept).
    session_file: str | None = None


SCENARIOS = [
    Scenario(
        "tool_session",
        [turn(call=("call_1", "read", {"path": "README.md"})), turn("The greeting is misspelt.")],
        [(None, {"id": "1", "type": "prompt", "message": "read the readme"})],
        event("agent_settled"),
        session_file="pi_session.jsonl",
    ),
    Scenario(
        "steering",
        [turn(call=("call_1", "bash", {"command": "sleep 1; echo slept"})), turn("Both done.")],
        [
            (None, {"id": "1", "type": "prompt", "message": "wait a bit"}),
            # Sent once the command has started its output (not at tool_execution_start, whose gap to
            # the first update is how long the tool takes to start: a race with the steer).
            (event("tool_execution_update"), {"id": "2", "type": "steer", "message": "and then stop"}),
        ],
        event("agent_settled"),
    ),
    Scenario(
        "abort",
        [turn("Thinking about it", stall=True)],
        [
            (None, {"id": "1", "type": "prompt", "message": "take your time"}),
            (event("message_update"), {"id": "2", "type": "abort"}),
        ],
        response("abort"),
    ),
    Scenario(
        "compaction",
        [turn("answer one", prompt_tokens=100), turn("answer two", prompt_tokens=200), turn("## Goal\nSUMMARY")],
        [
            (None, {"id": "1", "type": "prompt", "message": "one " + "x" * 2000}),
            (event("agent_end"), {"id": "2", "type": "prompt", "message": "two " + "y" * 2000}),
            (event("agent_end"), {"id": "3", "type": "compact"}),
        ],
        response("compact"),
        settings={"compaction": {"keepRecentTokens": 400}},
    ),
    Scenario(
        "retry",
        [SERVER_ERROR, turn("Back.")],
        [(None, {"id": "1", "type": "prompt", "message": "hi"})],
        event("agent_settled"),  # after the retried run: no run settles while a retry is due
        settings={"retry": {"baseDelayMs": 1}},
    ),
    Scenario(  # the summarised turn read a file: Pi lists it in the summary and the entry's details
        "file_compaction",
        [
            turn(call=("call_1", "read", {"path": "README.md"}), prompt_tokens=100),
            turn("It says hello.", prompt_tokens=150),
            turn("answer two", prompt_tokens=300),
            turn("## Goal\nSUMMARY"),
        ],
        [
            (None, {"id": "1", "type": "prompt", "message": "read the readme"}),
            (event("agent_end"), {"id": "2", "type": "prompt", "message": "two " + "y" * 2000}),
            (event("agent_end"), {"id": "3", "type": "compact"}),
        ],
        response("compact"),
        settings={"compaction": {"keepRecentTokens": 400}},
        session_file="pi_compacted_session.jsonl",
    ),
    Scenario(  # the second reply used most of the window: the next prompt is compacted first
        "compaction_before_prompt",
        [
            turn("answer one", prompt_tokens=100),
            turn("answer two", prompt_tokens=90000),
            turn("## Goal\nSUMMARY"),
            turn("answer three", prompt_tokens=700),
        ],
        [
            (None, {"id": "1", "type": "set_auto_compaction", "enabled": False}),
            (response("set_auto_compaction"), {"id": "2", "type": "prompt", "message": "one " + "x" * 2000}),
            (event("agent_end"), {"id": "3", "type": "prompt", "message": "two " + "y" * 2000}),
            (event("agent_end"), {"id": "4", "type": "set_auto_compaction", "enabled": True}),
            (response("set_auto_compaction"), {"id": "5", "type": "prompt", "message": "three"}),
        ],
        event("agent_settled"),
        settings={"compaction": {"keepRecentTokens": 400}},
    ),
    Scenario(  # refused for its size, compacted, retried, refused again: the recovery failed
        "overflow_recovery_fails",
        [turn("answer one"), json_reply(400, OVERFLOW), turn("## Goal\nSUMMARY"), json_reply(400, OVERFLOW)],
        [
            (None, {"id": "1", "type": "prompt", "message": "one " + "x" * 2000}),
            (event("agent_end"), {"id": "2", "type": "prompt", "message": "two " + "y" * 2000}),
        ],
        lambda line: line.get("type") == "compaction_end" and "errorMessage" in line,
        settings={"compaction": {"keepRecentTokens": 400}},
    ),
]


@contextmanager
def loopback_server(replies: list[Reply]) -> Iterator[SSEServer]:
    async def serve(server: SSEServer, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            await server.start(tg)
            task_status.started()

    with anyio.from_thread.start_blocking_portal() as portal:
        server = portal.call(SSEServer)
        portal.call(lambda: server.script(*replies))
        serving, _ = portal.start_task(serve, server)
        try:
            yield server
        finally:
            serving.cancel()
            portal.call(server.aclose)


def agent_dir_for(folder: Path, server: SSEServer, settings: Json) -> Path:
    agent_dir = folder / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "loop": {
                        "baseUrl": f"{server.url}/v1",
                        "api": "openai-completions",
                        "apiKey": "none",
                        "models": [{"id": "m", "contextWindow": 100000, "maxTokens": 4000}],
                    }
                }
            }
        )
    )
    (agent_dir / "settings.json").write_text(json.dumps(settings))
    return agent_dir


def run(
    scenario: Scenario, argv: list[str], folder: Path, env: dict[str, str], session_dir: Path | None = None
) -> list[Json]:
    """Every line the agent printed while `scenario` ran (its session kept in `session_dir`)."""
    workspace = folder / "ws"
    shutil.copytree(SAMPLE, workspace)
    with loopback_server(scenario.replies) as server:
        agent_dir = agent_dir_for(folder, server, scenario.settings)
        env = env | {"PI_CODING_AGENT_DIR": str(agent_dir), "PI_RPC_RETRY_BASE_MS": "1"}
        session = ["--session-dir", str(session_dir)] if session_dir is not None else ["--no-session"]
        proc = subprocess.Popen(
            [*argv, "--provider", "loop", "--model", "m", *session],
            cwd=workspace,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        lines: queue.Queue[Json | None] = queue.Queue()

        def read() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                lines.put(json.loads(raw))
            lines.put(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        printed: list[Json] = []
        since = 0  # a step waits only for lines printed after the previous step

        def wait(predicate: Predicate) -> None:
            while not any(predicate(line) for line in printed[since:]):
                line = lines.get(timeout=60)
                assert line is not None, "the agent exited early"
                printed.append(line)

        try:
            for predicate, command in scenario.steps:
                if predicate is not None:
                    wait(predicate)
                since = len(printed)
                proc.stdin.write(json.dumps(command) + "\n")
                proc.stdin.flush()
            wait(scenario.done)
        finally:
            proc.kill()
            proc.wait()
            proc.stdin.close()
            reader.join(10)
            proc.stdout.close()
    return printed


def normalise(line: Json) -> Json:
    """What must match between Pi and pi-rpc: kinds, roles, names and outcomes, not ids or times."""
    kind = line.get("type")
    kept: Json = {"type": kind}
    if kind == "response":
        kept |= {"command": line.get("command"), "success": line.get("success")}
    elif kind in ("message_start", "message_end"):
        kept["role"] = line["message"]["role"]
        if line["message"]["role"] == "assistant" and kind == "message_end":
            kept["stopReason"] = line["message"].get("stopReason")
    elif kind == "message_update":
        kept["event"] = line["assistantMessageEvent"]["type"]
    elif kind in ("tool_execution_start", "tool_execution_end"):
        kept["toolName"] = line["toolName"]
        if kind == "tool_execution_end":
            kept["isError"] = line["isError"]
    elif kind == "compaction_end":
        kept |= {"reason": line["reason"], "aborted": line["aborted"], "willRetry": line["willRetry"]}
        if (result := line.get("result")) is not None:  # the summary with Pi's file lists, the entry's details
            kept |= {key: result[key] for key in ("summary", "tokensBefore", "details")}
    return kept


def pi_argv() -> list[str]:
    return [*real_pi16(), "--mode", "rpc", "--offline"]


def pi_env(home: Path) -> dict[str, str]:
    """Pi 1.6.0's environment: Node 24 first on PATH, no telemetry or version check (`--offline`
    covers the rest), its own HOME."""
    quiet = {"PI_TELEMETRY": "0", "PI_SKIP_VERSION_CHECK": "1", "PI_OFFLINE": "1"}
    return dict(os.environ) | quiet | {"HOME": str(home), "PATH": runtime_of(PI16_CLIENT).path}


def pi_rpc_argv() -> list[str]:
    return [sys.executable, "-m", "pi_rpc", "--mode", "rpc"]


def record(folder: Path, names: list[str]) -> None:
    """Record the scenarios named (all when none are), each into its own subfolder of `folder`."""
    TRANSCRIPTS.mkdir(exist_ok=True)
    env = pi_env(folder / "home")
    unknown = set(names) - {scenario.name for scenario in SCENARIOS}
    if unknown:
        sys.exit(f"no such scenario: {', '.join(sorted(unknown))}")
    for scenario in SCENARIOS:
        if names and scenario.name not in names:
            continue
        sessions = folder / scenario.name / "sessions"
        lines = run(scenario, pi_argv(), folder / scenario.name, env, session_dir=sessions)
        printed = "".join(json.dumps(line) + "\n" for line in lines)
        (TRANSCRIPTS / f"{scenario.name}.jsonl").write_text(without_checkout(printed))
        if scenario.session_file is not None:  # Pi's own session file, for the loader's tests
            [session_file] = sessions.rglob("*.jsonl")
            (TRANSCRIPTS / scenario.session_file).write_text(without_checkout(session_file.read_text()))


def without_checkout(text: str) -> str:
    """`text` naming this checkout's folder as `<repo>` (Pi 1.6.0's system prompt points at its
    documentation, installed in tests/pi16_client)."""
    return text.replace(str(HERE.parents[1]), "<repo>")


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:2] != ["record"]:
        sys.exit("usage: python -m tests.e2e.pi_parity record [SCENARIO ...]")
    with tempfile.TemporaryDirectory() as scratch:
        record(Path(scratch), sys.argv[2:])

"""A fresh daemon readies its first prompt while it waits for one (pi_rpc/session/warm_up.py):
what start-up leaves unloaded is loaded, and the shell tools' supervisor runs, before any prompt;
nothing reaches the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from pi_rpc.session.warm_up import AtOnce, run_warm_up

# Run in a fresh interpreter: the test process has long imported everything.
_PROBE = """
import json, os, sys
import anyio
from pi_rpc.ai.clients import HttpClients
from pi_rpc.cli import build_parser, build_session_config
from pi_rpc.session.warm_up import first_prompt_steps, run_warm_up

# What the session's start leaves to the first prompt (tests/unit/test_startup_imports.py), and
# what the daemon never uses.
FIRST_PROMPT = (
    "httpx",
    "pi_rpc.agent.loop",
    "pi_rpc.agent.tool_calls",
    "pi_rpc.ai.coercion",
    "pi_rpc.ai.plain_schema",
    "pi_rpc.ai.providers.openai_completions",
    "pi_rpc.ai.stream",
    "pi_rpc.tools.output",
    "pi_rpc.tools.supervisor",
)
# jsonschema: the built-in tools' schemas are plain ones (pi_rpc/ai/plain_schema.py).
WATCHED = (*FIRST_PROMPT, "click", "pygments", "xml.sax", "jsonschema")

def loaded():
    return sorted(name for name in WATCHED if name in sys.modules)

def supervisors():
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = cmdline.read()
        except (OSError, ValueError):
            continue
        if ppid == os.getpid() and b"import supervisor" in argv:
            found.append(int(entry))
    return found

http = HttpClients()
args = build_parser().parse_args(
    ["--cwd", sys.argv[1], "--api", "openai-completions", "--base-url", "https://127.0.0.1:9/v1", "--model", "m"]
)
config = build_session_config(args, http)
before = {"loaded": loaded(), "clients": len(http), "supervisors": len(supervisors())}
anyio.run(run_warm_up, first_prompt_steps(config), 0)
after = {"loaded": loaded(), "clients": len(http), "supervisors": len(supervisors())}
print(json.dumps({"before": before, "after": after, "first_prompt": FIRST_PROMPT}))
"""


def test_the_warm_up_loads_what_the_first_prompt_needs_and_starts_the_supervisor(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(tmp_path)], capture_output=True, text=True, check=True, timeout=120, env=env
    )
    report = json.loads(done.stdout)
    assert report["before"] == {"loaded": [], "clients": 0, "supervisors": 0}
    # Not httpx's command-line client (click, pygments) nor xml.sax: the daemon never uses them;
    # not jsonschema: no built-in tool's schema needs it.
    assert report["after"] == {
        "loaded": sorted(report["first_prompt"]),
        "clients": 1,  # made, not connected: 127.0.0.1:9 (discard) was never dialled
        "supervisors": 1,
    }


@pytest.mark.anyio
async def test_a_failing_step_is_skipped_and_the_rest_still_run() -> None:
    ran: list[str] = []

    def broken() -> None:
        ran.append("broken")
        raise RuntimeError("no such provider")

    await run_warm_up([lambda: ran.append("first"), broken, lambda: ran.append("last")], after_s=0)
    assert ran == ["first", "broken", "last"]


@pytest.mark.anyio
async def test_a_request_that_comes_in_runs_between_two_steps() -> None:
    """Each step is followed by a pass of the event loop, so a waiting request is not held up
    behind the whole warm-up."""
    order: list[str] = []

    async def request() -> None:
        await anyio.lowlevel.checkpoint()
        order.append("request")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run_warm_up, [lambda: order.append("step 1"), lambda: order.append("step 2")], 0)
        tasks.start_soon(request)
    assert order.index("request") < order.index("step 2")


@pytest.mark.anyio
async def test_a_helper_process_starts_at_once_and_the_rest_waits_for_the_delay() -> None:
    """The supervisor (an `AtOnce` step) boots beside the daemon from its first moment; loading
    modules waits, so the client's first requests are answered first."""
    ran: list[str] = []
    with anyio.move_on_after(0.2):
        await run_warm_up([lambda: ran.append("import"), AtOnce(ran.append, "supervisor")], after_s=30)
    assert ran == ["supervisor"]


@pytest.mark.anyio
async def test_a_helper_process_waits_for_the_first_answer() -> None:
    """On a machine with two cores, a Python booting beside the daemon's start delays its
    handshake: the supervisor starts once the first answer is out (or the delay has passed)."""
    ran: list[str] = []
    answered = anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run_warm_up, [AtOnce(ran.append, "supervisor")], 30, None, answered.wait)
        await anyio.sleep(0.05)
        assert ran == []
        answered.set()
        await anyio.sleep(0.05)
        assert ran == ["supervisor"]
        tasks.cancel_scope.cancel()


@pytest.mark.anyio
async def test_the_steps_wait_for_a_run_to_end() -> None:
    """A prompt that came first is not held up behind the warm-up's imports: they wait for its run."""
    ran: list[str] = []
    run_over = anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run_warm_up, [lambda: ran.append("validators")], 0, run_over.wait)
        await anyio.sleep(0.05)
        assert ran == []
        run_over.set()
    assert ran == ["validators"]

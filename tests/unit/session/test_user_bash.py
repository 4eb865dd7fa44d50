"""The user's own commands (Pi's `bash` / `abort_bash`): streamed, abortable, and shown to the
model with the next prompt as Pi shows them."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from pi_rpc.agent.types import AgentEvent, BashExecutionUpdate
from pi_rpc.ai.types import TextContent, UserMessage
from pi_rpc.session.session import AgentSession, SessionConfig
from pi_rpc.session.user_bash import BashBusyError, BashResult, UserBash, bash_execution_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_models_view_of_a_command() -> None:
    assert bash_execution_text("true", BashResult(output="", exit_code=0, cancelled=False, truncated=False)) == (
        "Ran `true`\n(no output)"
    )
    cut = BashResult(output="tail", exit_code=None, cancelled=True, truncated=True, full_output_path="/tmp/x.log")
    assert bash_execution_text("yes", cut) == (
        "Ran `yes`\n```\ntail\n```\n\n(command cancelled)\n\n[Output truncated. Full output: /tmp/x.log]"
    )


async def test_abort_kills_the_command_and_reports_it_cancelled(tmp_path: Path) -> None:
    bash = UserBash()
    deltas: list[str] = []
    pid_file = tmp_path / "pid"
    result: list[BashResult] = []

    started = anyio.Event()

    def on_delta(_: str, delta: str) -> None:
        deltas.append(delta)
        started.set()

    async def run() -> None:
        result.append(await bash.run(f"echo $$ > {pid_file}; echo started; sleep 60", str(tmp_path), on_delta))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        with anyio.fail_after(30):
            await started.wait()
        with pytest.raises(BashBusyError):
            await bash.run("true", str(tmp_path), lambda *_: None)
        bash.abort()
    [done] = result
    assert done.cancelled and done.exit_code is None and done.output == "started\n"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
    assert not bash.running


async def test_output_streams_as_events_and_joins_the_transcript(tmp_path: Path) -> None:
    async with anyio.create_task_group() as tasks:
        session = AgentSession(
            SessionConfig(cwd=str(tmp_path), model=None, tools={}, active_tools=[], persist=False), tasks
        )
        events: list[AgentEvent] = []
        session.subscribe(events.append)
        result = await session.run_bash("printf 'a\\nb'")
        hidden = await session.run_bash("echo secret", exclude_from_context=True)
    assert (result.output, result.exit_code, hidden.output) == ("a\nb", 0, "secret\n")
    streamed = "".join(e.delta for e in events if isinstance(e, BashExecutionUpdate))
    assert streamed == "a\nbsecret\n"
    assert session.messages == [
        UserMessage(
            content=[TextContent(text="Ran `printf 'a\\nb'`\n```\na\nb\n```")], timestamp=session.messages[0].timestamp
        )
    ]

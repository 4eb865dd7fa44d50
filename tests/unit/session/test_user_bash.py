"""The user's own commands (Pi's `bash` / `abort_bash`): streamed, abortable, and shown to the
model with the next prompt as Pi shows them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from msgspec import UNSET

from pi_rpc.agent.llm_messages import bash_execution_to_text, convert_to_llm
from pi_rpc.agent.types import AgentEvent, BashExecutionUpdate
from pi_rpc.ai.providers.faux import FAUX_MODEL, FauxProvider
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    BashExecutionMessage,
    Context,
    Message,
    Model,
    SystemMessage,
    TextContent,
    UserMessage,
    text_of,
)
from pi_rpc.session.configuration.config import PersistenceConfig
from pi_rpc.session.session import AgentSession, ModelChoice, SessionConfig
from pi_rpc.session.storage.store import load_session
from pi_rpc.session.user_bash import BashBusyError, BashResult, UserBash
from pi_rpc.tools.process import ProcessTable
from tests.unit.session.helpers import FOREVER, reply, script, session_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_models_view_of_a_command() -> None:
    quiet = BashExecutionMessage(command="true", output="", exit_code=0, cancelled=False, truncated=False)
    assert bash_execution_to_text(quiet) == "Ran `true`\n(no output)"
    failed = BashExecutionMessage(command="false", output="no", exit_code=2, cancelled=False, truncated=False)
    assert bash_execution_to_text(failed) == "Ran `false`\n```\nno\n```\n\nCommand exited with code 2"
    cut = BashExecutionMessage(
        command="yes", output="tail", cancelled=True, truncated=True, full_output_path="/tmp/x.log"
    )
    assert bash_execution_to_text(cut) == (
        "Ran `yes`\n```\ntail\n```\n\n(command cancelled)\n\n[Output truncated. Full output: /tmp/x.log]"
    )


def test_convert_to_llm_turns_a_command_into_user_text_and_drops_an_excluded_one() -> None:
    ran = BashExecutionMessage(command="ls", output="a", exit_code=0, cancelled=False, truncated=False, timestamp=7)
    hidden = BashExecutionMessage(
        command="env", output="KEY=1", exit_code=0, cancelled=False, truncated=False, exclude_from_context=True
    )
    question = UserMessage(content="why?")
    assert convert_to_llm([ran, hidden, question]) == [
        UserMessage(content=[TextContent(text="Ran `ls`\n```\na\n```")], timestamp=7),
        question,
    ]


async def test_abort_kills_the_command_and_reports_it_cancelled(tmp_path: Path) -> None:
    bash = UserBash(ProcessTable())
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
        session = AgentSession(SessionConfig(cwd=str(tmp_path), persistence=PersistenceConfig(persist=False)), tasks)
        events: list[AgentEvent] = []
        session.subscribe(events.append)
        result = await session.run_bash("printf 'a\\nb'")
        hidden = await session.run_bash("echo secret", exclude_from_context=True)
    assert (result.output, result.exit_code, hidden.output) == ("a\nb", 0, "secret\n")
    streamed = "".join(e.delta for e in events if isinstance(e, BashExecutionUpdate))
    assert streamed == "a\nbsecret\n"
    # Both kept as Pi keeps them, with their own role; the `!!` one marked, not dropped.
    assert [(m.command, m.exclude_from_context) for m in session.messages if isinstance(m, BashExecutionMessage)] == [
        ("printf 'a\\nb'", UNSET),
        ("echo secret", True),
    ]
    assert len(session.messages) == 2


async def test_the_model_reads_the_command_as_user_text_and_never_an_excluded_one(tmp_path: Path) -> None:
    seen: list[Context] = []
    faux = FauxProvider(script({"match": "", "turns": [[{"text": "ok"}]]}))

    async def recording(model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder) -> Any:
        seen.append(context)
        return await faux.stream(model, context, options, builder)

    choice = ModelChoice(model=FAUX_MODEL, stream_fn=recording, scripted=True)
    async with anyio.create_task_group() as tasks:
        session = AgentSession(session_config(tmp_path, None, model=choice, persist=True), tasks)
        await session.run_bash("echo visible")
        await session.run_bash("echo private", exclude_from_context=True)
        await session.prompt("what did I run?")
    [context] = seen
    # (The system message declaring the tools aside.)
    assert [text_of(m.content) for m in context.messages if not isinstance(m, SystemMessage)] == [
        "Ran `echo visible`\n```\nvisible\n\n```",
        "what did I run?",
    ]
    # The transcript, the session file and what a reload shows keep Pi's role and both commands.
    assert [type(m).__name__ for m in session.messages if not isinstance(m, SystemMessage)] == [
        "BashExecutionMessage",
        "BashExecutionMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert session.history.session_file is not None
    stored = stored_bash_executions(Path(session.history.session_file))
    assert stored == session.messages[:2]


def stored_bash_executions(path: Path) -> list[Message]:
    """The session file's bash executions, checked for Pi's shape, as a reload reads them."""
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    messages = [line["message"] for line in lines if line["type"] == "message"]
    assert [message["role"] for message in messages] == [
        "bashExecution",
        "bashExecution",
        "system",
        "user",
        "assistant",
    ]
    assert messages[1]["excludeFromContext"] is True and messages[1]["exitCode"] == 0
    _, reloaded = load_session(path)
    return reloaded[:2]


async def test_a_command_run_during_a_run_joins_the_transcript_when_the_run_ends(tmp_path: Path) -> None:
    async with anyio.create_task_group() as tasks:
        session = AgentSession(session_config(tmp_path, script(reply("", FOREVER)), persist=False), tasks)
        session.runs.start("think")
        await session.run_bash("echo meanwhile")
        # Deferred while the run streams, so a tool call and its result stay adjacent (Pi).
        assert not any(isinstance(m, BashExecutionMessage) for m in session.messages)
        await session.abort()
    # Flushed once the run settled, without waiting for another prompt (Pi flushes at agent_end).
    assert isinstance(last := session.messages[-1], BashExecutionMessage) and last.command == "echo meanwhile"

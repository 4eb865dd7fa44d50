"""What a session's commands leave running belongs to that session: closing one session kills its
own leftovers and nothing of another's; the daemon's way out kills every one of its sessions'
(through its `ProcessTables`, where each session's table is made) and nothing of another daemon's.

Two sessions in one process, as ACP serves them, each with its tools made for its own table.
"""

from __future__ import annotations

import gc
import os
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from pi_rpc.agent.types import ToolCallContext
from pi_rpc.modes.acp.agent import AcpAgent
from pi_rpc.modes.daemon import serve
from pi_rpc.session.configuration.config import PersistenceConfig, ToolsConfig
from pi_rpc.session.session import AgentSession, SessionConfig
from pi_rpc.tools.bash import BashParams, create_bash_tool
from pi_rpc.tools.process import ProcessTable, ProcessTables
from pi_rpc.tools.registry import create_tool_definitions
from tests.unit.modes.acp_editor import Editor, text
from tests.unit.modes.recorder import Recorder
from tests.unit.session import helpers

from .leftovers import kill_leftovers
from .procs import KINDS, marked, poll_async, tree_command

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")]


def session_config(cwd: Path, processes: ProcessTable | None = None) -> SessionConfig:
    processes = processes if processes is not None else ProcessTable()
    tools = create_tool_definitions(["bash"], processes=processes)
    return SessionConfig(
        cwd=str(cwd),
        tools=ToolsConfig(definitions=tools, active=["bash"], processes=processes),
        persistence=PersistenceConfig(persist=False),
    )


async def leave_jobs(session: AgentSession, marker: str) -> None:
    """Run a command that leaves one job of each kind behind, as the model's bash call would."""
    bash = session.config.tools.definitions["bash"]
    await bash.execute(BashParams(command=tree_command(marker, foreground=False)), ToolCallContext(cwd=session.cwd))
    assert await poll_async(lambda: len(marked(marker)) == len(KINDS))


async def leave_jobs_in(processes: ProcessTable, cwd: str, marker: str) -> None:
    """The same, by a bash tool whose leftovers belong to `processes`."""
    bash = create_bash_tool(processes=processes)
    await bash.execute(BashParams(command=tree_command(marker, foreground=False)), ToolCallContext(cwd=cwd))
    assert await poll_async(lambda: len(marked(marker)) == len(KINDS))


def new_marker() -> str:
    return f"pi-procs-{uuid.uuid4().hex[:12]}"


async def test_closing_a_session_kills_its_leftovers_only(tmp_path: Path) -> None:
    """Before, one table per daemon: a session could only kill everyone's leftovers or none."""
    closing, staying = new_marker(), new_marker()
    tables = ProcessTables()  # the daemon's
    try:
        async with anyio.create_task_group() as tasks:
            first = AgentSession(session_config(tmp_path, tables.new_table()), tasks)
            second = AgentSession(session_config(tmp_path, tables.new_table()), tasks)
            await leave_jobs(first, closing)
            await leave_jobs(second, staying)

            await first.close()
            assert await poll_async(lambda: not marked(closing))
            assert len(marked(staying)) == len(KINDS)

            tables.kill_all()  # what every way out of the daemon calls
            assert await poll_async(lambda: not marked(staying))
    finally:
        kill_leftovers(closing)
        kill_leftovers(staying)


async def test_closing_a_session_kills_what_the_users_commands_left(tmp_path: Path) -> None:
    """A user's `cmd &` (the `bash` command, not the model's tool) is the session's too. Before,
    the user's commands ran with no table, so their leftovers lived on until the daemon exited."""
    marker = f"pi-procs-{uuid.uuid4().hex[:12]}"
    try:
        async with anyio.create_task_group() as tasks:
            session = AgentSession(session_config(tmp_path), tasks)
            await session.run_bash(tree_command(marker, foreground=False))
            assert await poll_async(lambda: len(marked(marker)) == len(KINDS))

            await session.close()
            assert await poll_async(lambda: not marked(marker))
    finally:
        kill_leftovers(marker)


async def test_a_session_dropped_without_close_takes_its_leftovers_with_it(tmp_path: Path) -> None:
    """The daemon's exit reaches only live tables (a weak set): a session a front end dropped without
    closing would leave its leftovers to no one, and their keepers' lifelines open."""
    marker = f"pi-procs-{uuid.uuid4().hex[:12]}"
    try:
        async with anyio.create_task_group() as tasks:
            session = AgentSession(session_config(tmp_path), tasks)
            await session.run_bash(tree_command(marker, foreground=False))
            assert await poll_async(lambda: len(marked(marker)) == len(KINDS))
            del session
            gc.collect()
            assert await poll_async(lambda: not marked(marker))
    finally:
        kill_leftovers(marker)


async def test_acp_sessions_tables_are_the_daemons_each_closed_alone(tmp_path: Path) -> None:
    """ACP makes a table per ACP session in the daemon's tables: closing one session kills its
    leftovers only, and the daemon's way out kills the other's."""
    closing, staying = new_marker(), new_marker()
    replies = [
        helpers.reply(f"^{word}", [helpers.tool_call("bash", command=tree_command(marker, foreground=False))], [])
        for word, marker in (("first", closing), ("second", staying))
    ]
    tables = ProcessTables()
    try:
        async with anyio.create_task_group() as tasks:
            config = helpers.session_config(tmp_path, helpers.script(*replies))
            agent = AcpAgent(config, tasks, Editor().send, process_tables=tables)
            first = (await agent.new_session(cwd=str(tmp_path))).session_id
            second = (await agent.new_session(cwd=str(tmp_path))).session_id
            await agent.prompt(session_id=first, prompt=text("first"))
            await agent.prompt(session_id=second, prompt=text("second"))
            assert await poll_async(lambda: len(marked(closing)) == len(marked(staying)) == len(KINDS))

            await agent.close_session(first)
            assert await poll_async(lambda: not marked(closing))
            assert len(marked(staying)) == len(KINDS)

            tables.kill_all()  # what every way out of the daemon calls
            assert await poll_async(lambda: not marked(staying))
            tasks.cancel_scope.cancel()
    finally:
        kill_leftovers(closing)
        kill_leftovers(staying)


async def test_the_daemons_way_out_kills_its_sessions_leftovers_and_nothing_of_another_daemons(
    tmp_path: Path,
) -> None:
    """`serve` kills through its daemon's tables, even those of sessions nobody closed (the front
    end here closes none). Before, the way out killed every table of the process: another daemon's
    in the same process (a test's, an embedder's) too."""
    ours, others = [new_marker(), new_marker()], new_marker()
    tables = ProcessTables()
    sessions = [tables.new_table(), tables.new_table()]  # held as its sessions hold theirs
    stranger = ProcessTable()  # another daemon's session
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    try:
        for table, marker in zip(sessions, ours, strict=True):
            await leave_jobs_in(table, str(tmp_path), marker)
        await leave_jobs_in(stranger, str(tmp_path), others)
        os.close(stdin_w)  # end of input: the way out
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            await serve(Recorder(stdin_r), tables, stdout_w)
        assert await poll_async(lambda: not marked(ours[0]) and not marked(ours[1]))
        assert len(marked(others)) == len(KINDS)
    finally:
        for fd in (stdin_r, stdout_r, stdout_w):
            os.close(fd)
        stranger.kill_all()
        for marker in [*ours, others]:
            kill_leftovers(marker)

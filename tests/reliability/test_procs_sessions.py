"""What a session's commands leave running belongs to that session: closing one session kills its
own leftovers and nothing of another's; the daemon's exit kills everyone's.

Two sessions in one process, as ACP serves them, each with its tools made for its own table.
"""

from __future__ import annotations

import gc
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from pi_rpc.agent.types import ToolCallContext
from pi_rpc.session.session import AgentSession, SessionConfig
from pi_rpc.tools.bash import BashParams
from pi_rpc.tools.process import ProcessTable, kill_all_process_groups
from pi_rpc.tools.registry import create_tool_definitions

from .procs import KINDS, marked, poll_async, tree_command
from .test_procs_supervisor import kill_leftovers

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")]


def session_config(cwd: Path) -> SessionConfig:
    processes = ProcessTable()
    tools = create_tool_definitions(["bash"], processes=processes)
    return SessionConfig(
        cwd=str(cwd), model=None, tools=tools, active_tools=["bash"], persist=False, processes=processes
    )


async def leave_jobs(session: AgentSession, marker: str) -> None:
    """Run a command that leaves one job of each kind behind, as the model's bash call would."""
    bash = session.config.tools["bash"]
    await bash.execute(BashParams(command=tree_command(marker, foreground=False)), ToolCallContext(cwd=session.cwd))
    assert await poll_async(lambda: len(marked(marker)) == len(KINDS))


async def test_closing_a_session_kills_its_leftovers_only(tmp_path: Path) -> None:
    """Before, one table per daemon: a session could only kill everyone's leftovers or none."""
    closing, staying = f"pi-procs-{uuid.uuid4().hex[:12]}", f"pi-procs-{uuid.uuid4().hex[:12]}"
    try:
        async with anyio.create_task_group() as tasks:
            first = AgentSession(session_config(tmp_path), tasks)
            second = AgentSession(session_config(tmp_path), tasks)
            await leave_jobs(first, closing)
            await leave_jobs(second, staying)

            await first.close()
            assert await poll_async(lambda: not marked(closing))
            assert len(marked(staying)) == len(KINDS)

            kill_all_process_groups()  # what every way out of the daemon calls
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

"""What a daemon that seems stuck is doing, without stopping it: `kill -USR1 <pid>` writes every
thread's Python stack to the log (stderr), and `kill -USR2 <pid>` every asyncio task's.

The thread dump is faulthandler's, written by its C handler, so it answers even while the event
loop is blocked inside a call that never returns. The task dump runs on the loop, so it answers
only while the loop turns, and then says which await each task waits at: what an idle-looking
daemon is waiting for. Both go to stderr, which editors keep as the server's log.
"""

from __future__ import annotations

import asyncio
import faulthandler
import io
import logging
import signal
import sys

import anyio

_log = logging.getLogger(__name__)


def dump_threads_on_sigusr1() -> None:
    """Install the thread dump (once, at start: faulthandler keeps the stderr fd it is given)."""
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)


def task_stacks() -> str:
    """Every task of the running loop with the stack of the await it waits at."""
    out = io.StringIO()
    tasks = asyncio.all_tasks()
    out.write(f"{len(tasks)} asyncio tasks:\n")
    for task in sorted(tasks, key=lambda task: task.get_name()):
        task.print_stack(limit=12, file=out)
    return out.getvalue()


async def dump_tasks_on_sigusr2() -> None:
    """Until cancelled: the task dump, to the log, each time SIGUSR2 comes."""
    with anyio.open_signal_receiver(signal.SIGUSR2) as signals:
        async for _ in signals:
            _log.warning("SIGUSR2: %s", task_stacks())

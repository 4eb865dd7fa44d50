"""The LSP mode in-process: commands, the sleepers a run leaves, and what the client was told."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import anyio
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from pi_rpc.ai.providers.faux import load_script
from pi_rpc.session.session import SessionConfig
from tests.e2e.conftest import descendants, still_running
from tests.lsp.editor import (
    SCRIPT,
    Progress,
    is_sleep,
)

from ..session.helpers import session_config

# Initialization options: tool calls approved without asking, answers shown as messages.
AS_MESSAGES = {"approvalPolicy": "auto", "answer": "message"}


def scripted(workspace: Path) -> SessionConfig:
    return session_config(workspace, load_script(SCRIPT))


async def command(client: LanguageClient, name: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=name, arguments=list(arguments))
    )


def sleepers() -> list[int]:
    """The script's `sleep 30` below this process: the daemon runs in it."""
    return [pid for pid in descendants(os.getpid()) if is_sleep(pid)]


async def gone(watched: list[int]) -> int:
    """How many of the watched processes still run (waited for off the event loop)."""
    return await anyio.to_thread.run_sync(still_running, watched)


def messages(client: LanguageClient) -> list[tuple[lsp.MessageType, str]]:
    return [(m.type, m.message) for m in client.messages]


def ends(client: LanguageClient) -> list[str | None]:
    """The end message of each run's progress, in order."""
    reports = cast(list[list[Progress]], list(client.progress_reports.values()))
    return [p.message for r in reports for p in r if isinstance(p, lsp.WorkDoneProgressEnd)]

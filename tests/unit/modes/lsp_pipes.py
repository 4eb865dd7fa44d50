"""The LSP front end in-process: LspDaemon.run in the test's event loop over two os.pipe()s, with
the test editor of tests/lsp/editor.py (pytest-lsp's client) on the other ends.

No subprocess and no interpreter start-up, yet pygls' reader and dispatch, our sink and `serve`'s
way out all run; what the daemon sends is what an editor would read on its stdout.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from pygls.io_ import StdinAsyncReader, run_async
from pytest_lsp import LanguageClient

from pi_rpc.modes.editor_requests import DEFAULT_DEADLINES, EditorDeadlines
from pi_rpc.modes.lsp.server import LspDaemon, WorkspaceConfig
from pi_rpc.session.session import SessionConfig
from tests.lsp.editor import Editor, new_client


class PipeWriter:
    """pygls' writer interface on the daemon's stdin pipe (pygls frames the messages itself)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        pass  # the harness closes the pipe: it is the daemon's end of input


@asynccontextmanager
async def lsp_in_process(
    config: SessionConfig,
    workspace_config: WorkspaceConfig | None = None,
    deadlines: EditorDeadlines = DEFAULT_DEADLINES,
) -> AsyncIterator[tuple[LanguageClient, Editor]]:
    """The daemon serving `config`, and the connected editor; at the end the editor goes away
    (end of the daemon's input), and the daemon winds down. (`shutdown` and `exit` over real
    stdio are the subprocess tests' business, tests/lsp.)"""
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    client, editor = new_client()
    client.protocol.set_writer(PipeWriter(stdin_w))
    daemon = LspDaemon(config, workspace_config, stdin_fd=stdin_r, stdout_fd=stdout_w, deadlines=deadlines)
    from_daemon = os.fdopen(stdout_r, "rb", closefd=False)

    async def serve() -> None:
        try:
            with anyio.fail_after(60):  # a guard against a hang at shutdown
                await daemon.run()
        finally:
            os.close(stdout_w)  # the editor's reader sees end of output

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(serve)
            tasks.start_soon(run_async, client._stop_event, StdinAsyncReader(from_daemon), client.protocol)
            try:
                yield client, editor
            finally:
                os.close(stdin_w)  # end of input: the daemon winds down
    finally:
        from_daemon.close()
        for fd in (stdin_r, stdout_r):
            os.close(fd)

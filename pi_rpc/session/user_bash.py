"""Commands the user runs (Pi's `bash` RPC command, `!cmd` in Pi's editor), not the model.

The command runs in the workspace like the bash tool's (its own process group, killed on abort;
provider keys withheld), its output streams as `bash_execution_update` events, and the result is
bounded like a tool's (tail kept, the whole output in a temporary file when truncated). It joins
the transcript as Pi's `bashExecution` message; the model reads it as the text Pi gives it
(`agent/llm_messages.py`).
"""

from __future__ import annotations

import codecs
import uuid
from collections.abc import Callable

import anyio
from msgspec import UNSET, UnsetType

from pi_rpc.agent import ToolError
from pi_rpc.ai import BashExecutionMessage, Wire
from pi_rpc.session.refusals import SessionBusy
from pi_rpc.tools import LocalShellOperations, ProcessTable, session_environment


class UserBashError(RuntimeError):
    """The command could not be run (one is running already, the workspace is gone)."""


class BashBusyError(SessionBusy, UserBashError):
    """Another user bash command is running: a refusal. A bare UserBashError (the workspace gone,
    no shell) is an I/O failure, answered as any failure is."""


class BashResult(Wire, kw_only=True):
    """Pi's `BashResult`: the (tail of the) output, and how the command ended."""

    output: str
    exit_code: int | None  # null when cancelled or killed by a signal
    cancelled: bool
    truncated: bool
    full_output_path: str | UnsetType = UNSET


def bash_execution_message(command: str, result: BashResult, exclude_from_context: bool) -> BashExecutionMessage:
    """The transcript's record of a finished command (Pi's `recordBashResult`)."""
    return BashExecutionMessage(
        command=command,
        output=result.output,
        exit_code=UNSET if result.exit_code is None else result.exit_code,
        cancelled=result.cancelled,
        truncated=result.truncated,
        full_output_path=result.full_output_path,
        exclude_from_context=True if exclude_from_context else UNSET,
    )


class UserBash:
    """One user command at a time; `abort` cancels the running one. What a command leaves
    running (`cmd &`) joins `processes`, the session's table, so it dies when the session closes."""

    def __init__(self, processes: ProcessTable) -> None:
        self._scope: anyio.CancelScope | None = None
        self._shell = LocalShellOperations(processes=processes)

    @property
    def running(self) -> bool:
        return self._scope is not None

    async def run(self, command: str, cwd: str, on_delta: Callable[[str, str], None]) -> BashResult:
        """`on_delta(run id, text)` receives the output as it arrives."""
        if self._scope is not None:
            raise BashBusyError("A bash command is already running")
        from pi_rpc.tools import OutputAccumulator  # with the first command, not the session

        run_id = uuid.uuid4().hex
        output = OutputAccumulator(temp_file_prefix="pi-bash")
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def on_data(chunk: bytes) -> None:
            output.append(chunk)
            text = decoder.decode(chunk)
            if text:
                on_delta(run_id, text)

        code: int | None = None
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                code = await self._shell.exec(command, cwd, on_data, None, session_environment(None, False))
            except ToolError as exc:
                raise UserBashError(str(exc)) from exc
            finally:
                self._scope = None
        output.finish()
        snapshot = output.snapshot(persist_if_truncated=True)
        output.close_temp_file()
        return BashResult(
            output=snapshot.content,
            exit_code=None if scope.cancelled_caught else code,
            cancelled=scope.cancelled_caught,
            truncated=snapshot.truncation.truncated,
            full_output_path=snapshot.full_output_path or UNSET,
        )

    def abort(self) -> None:
        if self._scope is not None:
            self._scope.cancel("bash aborted")

"""Commands the user runs (Pi's `bash` RPC command, `!cmd` in Pi's editor), not the model.

The command runs in the workspace like the bash tool's (its own process group, killed on abort;
provider keys withheld), its output streams as `bash_execution_update` events, and the result is
bounded like a tool's (tail kept, the whole output in a temporary file when truncated). What it
printed joins the conversation as Pi's `bashExecution` message does, in the text Pi gives the model.
"""

from __future__ import annotations

import codecs
import uuid
from collections.abc import Callable

import anyio
from msgspec import UNSET, UnsetType

from pi_rpc.agent.types import ToolError
from pi_rpc.ai.types import Wire
from pi_rpc.tools.bash import LocalShellOperations, session_environment
from pi_rpc.tools.output import OutputAccumulator


class UserBashError(RuntimeError):
    """The command could not be run (one is running already, the workspace is gone)."""


class BashBusyError(UserBashError):
    pass


class BashResult(Wire, kw_only=True):
    """Pi's `BashResult`: the (tail of the) output, and how the command ended."""

    output: str
    exit_code: int | None  # null when cancelled or killed by a signal
    cancelled: bool
    truncated: bool
    full_output_path: str | UnsetType = UNSET


def bash_execution_text(command: str, result: BashResult) -> str:
    """What the model is shown of a user's command (Pi's `bashExecutionToText`)."""
    text = f"Ran `{command}`\n" + (f"```\n{result.output}\n```" if result.output else "(no output)")
    if result.cancelled:
        text += "\n\n(command cancelled)"
    elif result.exit_code not in (None, 0):
        text += f"\n\nCommand exited with code {result.exit_code}"
    if result.truncated and result.full_output_path:
        text += f"\n\n[Output truncated. Full output: {result.full_output_path}]"
    return text


class UserBash:
    """One user command at a time; `abort` cancels the running one."""

    def __init__(self) -> None:
        self._scope: anyio.CancelScope | None = None

    @property
    def running(self) -> bool:
        return self._scope is not None

    async def run(self, command: str, cwd: str, on_delta: Callable[[str, str], None]) -> BashResult:
        """`on_delta(run id, text)` receives the output as it arrives."""
        if self._scope is not None:
            raise BashBusyError("A bash command is already running")
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
                code = await LocalShellOperations().exec(command, cwd, on_data, None, session_environment(None, False))
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

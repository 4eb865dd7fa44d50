"""The Pi commands beyond prompting and state: model and thinking cycling, the retry and
compaction toggles, user bash, export, switching, forking, naming, slash commands, and pi-rpc's own
checkpoints and rewind.

Each arm maps one command onto the session; a command whose feature this daemon lacks fails with a
sentence saying so, which Pi's `RpcClient` surfaces as the rejected call's error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from pi_rpc.modes.pi import commands as c
from pi_rpc.modes.pi.entries import entries_after, tree
from pi_rpc.session import (
    AgentSession,
    CompactionRefused,
    InvalidArgument,
    NoModelConfigured,
    PromptWhileRunning,
    ResourceCommand,
    SessionBusy,
    SessionRefusal,
    UnknownModel,
    UnknownSessionOrEntry,
    refusal_kind,
)


class CommandFailed(Exception):
    """A command that cannot be carried out: its message is the response's `error`."""


# What a Pi client reads for each kind of session refusal: `success: false` with this `error` (Pi's
# responses carry no error codes), like a CommandFailed; the one table, used where the response is
# written (server.py). Any other failure answers with its text too, but is logged as a fault.
REFUSAL_TEXT: dict[type[SessionRefusal], Callable[[Exception], str]] = {
    PromptWhileRunning: str,  # the session's words name streamingBehavior, which Pi clients send
    SessionBusy: str,  # another user bash command is running; rewind while a run is going
    CompactionRefused: str,
    NoModelConfigured: str,
    UnknownModel: str,
    UnknownSessionOrEntry: str,  # switch_session to a missing file, fork at an unknown entry, get_entries
    InvalidArgument: str,  # set_session_name with an empty name
}


def refusal_text(exc: Exception) -> str:
    """The response's `error`: a session refusal's from `REFUSAL_TEXT`, anything else's own text."""
    kind = refusal_kind(exc)
    return str(exc) if kind is None else REFUSAL_TEXT[kind](exc)


async def execute_session_command(session: AgentSession, command: c.Command) -> Any:
    match command:
        case c.CycleModel():
            model = session.current_model.cycle_model()
            if model is None:
                return None
            return c.CycleModelResult(
                model=model,
                thinking_level=session.current_model.thinking_level,
                is_scoped=session.current_model.scope_active,
            )
        case c.CycleThinkingLevel():
            level = session.current_model.cycle_thinking_level()
            return None if level is None else {"level": level}
        case c.SetAutoCompaction(enabled=enabled):
            session.toggles.compaction = enabled
            return UNSET
        case c.SetAutoRetry(enabled=enabled):
            session.toggles.retry = enabled
            return UNSET
        case c.AbortRetry():
            # The wait for the next attempt is the run's (session/auto_retry.py): aborting it ends
            # the retries with "Retry cancelled", and the run settles.
            if session.retrying:
                await session.abort()
            return UNSET
        case c.SwitchSession(session_path=path):
            await session.switch_session(path)
            return {"cancelled": False}
        case c.Fork(entry_id=entry_id):
            return c.ForkResult(text=await session.fork(entry_id))
        case c.Clone():
            await session.clone()
            return {"cancelled": False}
        case c.GetForkMessages():
            return {
                "messages": [c.ForkMessage(entry_id=entry, text=text) for entry, text in session.history.fork_points()]
            }
        case c.SetSessionName(name=name):
            session.history.set_name(name)  # an empty one is refused (REFUSAL_TEXT)
            return UNSET
        case c.GetCommands():
            return {"commands": [_slash_command(command) for command in session.resources.commands()]}
        case c.Compact(custom_instructions=instructions):
            return await session.compaction.compact(None if instructions is UNSET else instructions)
        case c.Bash(command=shell_command, exclude_from_context=exclude):
            return await session.run_bash(shell_command, exclude)
        case c.AbortBash():
            session.user_bash.abort()
            return UNSET
        case c.GetEntries(since=since):
            return entries_after(session.history.entries, None if since is UNSET else since)
        case c.GetTree():
            return tree(session.history.entries)
        case c.GetCheckpoints():  # pi-rpc's own, as the JSON-RPC session/checkpoints
            return {"checkpoints": session.checkpoints.listing()}
        case c.Rewind(entry_id=entry_id, restore=restore, force=force, preview=preview):  # and session/rewind
            return await session.checkpoints.rewind(entry_id, restore, force, preview)
        case c.ExportHtml(output_path=output_path):
            try:
                return {"path": session.export_html(None if output_path is UNSET else output_path)}
            except OSError as exc:
                raise CommandFailed(f"Cannot write the HTML export: {exc}") from exc
    raise CommandFailed(f"Unknown command: {command.__struct_config__.tag}")


def _slash_command(command: ResourceCommand) -> c.SlashCommandInfo:
    origin = command.origin
    return c.SlashCommandInfo(
        name=command.name,
        description=command.description or UNSET,
        source=command.kind,
        source_info=c.SourceInfo(
            path=command.path,
            source=origin.source,
            scope=origin.scope,
            base_dir=UNSET if origin.base_dir is None else origin.base_dir,
        ),
    )

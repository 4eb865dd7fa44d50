"""Slash commands for ACP editors: the list (`available_commands_update`) and their handling.

A prompt that starts with `/<name>` of a command here is answered by the daemon itself, as an
agent message, and never reaches the model; any other text (an unknown `/word` included) is an
ordinary prompt. The session's own commands (prompt templates and skills) are listed too and left
to the session's prompt, which expands them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec
from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from pi_rpc.modes.acp.config_options import THINKING_OPTION, model_value, set_config_option, set_model
from pi_rpc.modes.acp.rewind import Pick, rewind_command
from pi_rpc.session import SESSION_REFUSALS, AgentSession


class Command(msgspec.Struct, frozen=True):
    name: str
    description: str
    hint: str | None
    run: Callable[[AgentSession, str], Awaitable[str]]  # (session, argument text) -> what the user reads


async def _model(session: AgentSession, argument: str) -> str:
    if argument:
        set_model(session, argument)
    current = session.current_model.model
    listed = "\n".join(f"- {model_value(m)}" for m in session.current_model.available_models())
    return f"Model: {model_value(current) if current else 'none configured'}\n\nAvailable:\n{listed}"


async def _thinking(session: AgentSession, argument: str) -> str:
    if argument:
        set_config_option(session, THINKING_OPTION, argument)
    model = session.current_model
    return f"Thinking: {model.thinking_level} (supported: {', '.join(model.thinking_levels())})"


async def _tools(session: AgentSession, argument: str) -> str:
    lines = [
        f"- {t.name}{'' if t.active else ' (inactive)'}{f' [{t.source}]' if t.source else ''}"
        for t in session.tool_infos()
    ]
    servers = session.mcp.statuses() if session.mcp is not None else []
    lines += [f"MCP server {s.name}: {s.status}{f' ({s.error})' if s.error else ''}" for s in servers]
    return "Tools:\n" + "\n".join(lines)


async def _stats(session: AgentSession, argument: str) -> str:
    stats = session.stats()
    return (
        f"Session {stats.session_id}: {stats.user_messages} prompts, {stats.tool_calls} tool calls, "
        f"{stats.tokens.total} tokens ({stats.tokens.input} in, {stats.tokens.output} out), "
        f"${stats.cost:.4f}"
    )


async def _compact(session: AgentSession, argument: str) -> str:
    try:
        result = await session.compaction.compact(argument or None)
    except SESSION_REFUSALS as exc:  # nothing to compact, no model, the summary failed: said in the chat
        return f"Not compacted: {exc}"
    return (
        f"Compacted {result.tokens_before} tokens of context: the older turns are now this summary, "
        f"the recent ones are kept as they were.\n\n{result.summary}"
    )


async def _name(session: AgentSession, argument: str) -> str:
    if argument:
        session.history.set_name(argument)  # kept in the session file, as Pi's `/name` keeps it
    current = session.history.session_name
    return f"Session name: {current}" if current else "This session has no name. `/name <name>` gives it one."


BUILT_IN: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "compact",
            "Summarise the older turns to free context (the session file keeps them all)",
            "optional instructions for the summary",
            _compact,
        ),
        Command("model", "Show or switch the model", "provider/model-id", _model),
        Command("thinking", "Show or set the thinking level", "off | minimal | low | medium | high | xhigh", _thinking),
        Command("tools", "List the tools, with their MCP servers", None, _tools),
        Command("stats", "Tokens and cost of this session", None, _stats),
        Command("name", "Show or set the session's name (its title in the session list)", "the new name", _name),
    )
}


# The one command that asks the user (through the client: modes/acp/rewind.py).
REWIND = AvailableCommand(
    name="rewind",
    description="Put the files (or the conversation, or both) back to before one of your messages",
    input=AvailableCommandInput(root=UnstructuredCommandInput(hint="[n] [files|conversation|both] [force]")),
)


def available_commands(session: AgentSession) -> list[AvailableCommand]:
    listed = [
        AvailableCommand(
            name=c.name,
            description=c.description,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=c.hint)) if c.hint else None,
        )
        for c in BUILT_IN.values()
    ]
    return [*listed, REWIND, *session_commands(session)]


def session_commands(session: AgentSession) -> list[AvailableCommand]:
    """The session's own commands: its prompt templates and skills (`/name args` in a prompt)."""
    return [
        AvailableCommand(
            name=c.name,
            description=c.description,
            input=AvailableCommandInput(root=UnstructuredCommandInput(hint=c.argument_hint))
            if isinstance(c.argument_hint, str)
            else None,
        )
        for c in session.slash_commands()
        if c.name not in BUILT_IN and c.name != REWIND.name
    ]


async def run_command(session: AgentSession, text: str, pick: Pick | None = None) -> str | None:
    """The answer to a built-in slash command, or None when `text` is not one; `pick`: how to
    ask the user to choose (None: the client cannot be asked)."""
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    if name.strip() == REWIND.name:
        return await rewind_command(session, argument.strip(), pick)
    command = BUILT_IN.get(name.strip())
    return await command.run(session, argument.strip()) if command is not None else None

"""What a session refuses to do: one family, `SessionRefusal`, with one class per kind of refusal.

A refusal is not a fault. The request cannot be done now, or not as asked, and `str(refusal)` says
why in words the user can read. Each front end maps every kind once, in one table:
`modes/jsonrpc/errors.py` and `modes/acp/errors.py` to wire errors, `modes/pi/session_commands.py`
and `modes/lsp/runs.py` to the text the user reads. `tests/unit/test_session_refusals.py` fails
while a kind is missing from any of them, so a new kind cannot be added without every front end
saying how it answers it.

The refusals that are raised stay beside the code that raises them, and subclass their kind (e.g.
`SessionNotFoundError(UnknownSessionOrEntry, LookupError)`), so each answers as its kind does. Only
this module may subclass `SessionRefusal` directly (`__init_subclass__` refuses any other); that
keeps the kinds the front ends map complete. Whatever else a session call raises (I/O, a provider,
a bug) is not a refusal, and each front end answers it with its generic error.

The agent's `AgentBusyError` is raised a layer below, so it cannot subclass a kind:
`refusal_kind` counts it as `PromptWhileRunning`. A front end catches `SESSION_REFUSALS`:

    try:
        await session.prompt(text)
    except SESSION_REFUSALS as exc:
        raise TABLE[refusal_kind(exc)](str(exc)) from exc
"""

from __future__ import annotations

from typing import Any

from pi_rpc.agent import AgentBusyError


class SessionRefusal(Exception):
    """The family: never raised itself, and never in a front end's table (its kinds are)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if SessionRefusal in cls.__bases__ and cls.__module__ != __name__:
            raise TypeError(f"{cls.__qualname__}: subclass a kind of refusal (pi_rpc/session/refusals.py), or add one")


class PromptWhileRunning(SessionRefusal):
    """A prompt while the session's run is going, with no word on queueing it. The text is Pi's
    and names `streamingBehavior`, which a front end with no way to send it replaces."""


class SessionBusy(SessionRefusal):
    """Something running must end first: another user bash command, a run (for a rewind)."""


class CompactionRefused(SessionRefusal):
    """A compaction not done: one is running, there is nothing to compact, it was cancelled, or
    its summary request failed."""


class NoModelConfigured(SessionRefusal):
    """A request that needs a model while none is configured; the text says how to configure one."""


class UnknownModel(SessionRefusal):
    """A model the request names that the session does not know."""


class UnknownSessionOrEntry(SessionRefusal):
    """A session, or an entry of one, that the request names and the session does not have (or a
    session file it cannot read, or one of another workspace)."""


class InvalidArgument(SessionRefusal):
    """A value the session cannot take (an empty session name)."""


# What a front end catches to answer with its table: the family, and the agent's busy error.
SESSION_REFUSALS: tuple[type[Exception], ...] = (SessionRefusal, AgentBusyError)


def refusal_kind(exc: BaseException) -> type[SessionRefusal] | None:
    """The kind of refusal `exc` is; None: it is not one (the family's base itself included)."""
    if isinstance(exc, SessionRefusal):
        return next((cls for cls in type(exc).__mro__ if SessionRefusal in cls.__bases__), None)
    return PromptWhileRunning if isinstance(exc, AgentBusyError) else None


__all__ = [
    "SESSION_REFUSALS",
    "CompactionRefused",
    "InvalidArgument",
    "NoModelConfigured",
    "PromptWhileRunning",
    "SessionBusy",
    "SessionRefusal",
    "UnknownModel",
    "UnknownSessionOrEntry",
    "refusal_kind",
]

"""`session_info_update` (title, last activity) and `usage_update` (context use, cost) of a session."""

from __future__ import annotations

import datetime

from acp.schema import Cost, SessionInfoUpdate, UsageUpdate

from pi_rpc.ai.types import AssistantMessage, UserMessage, text_of
from pi_rpc.session.session import AgentSession

TITLE_MAX_CHARS = 200  # the length session/list gives a title too (session/store.py)


def session_title(session: AgentSession) -> str | None:
    """The session's name, else its first user message, as `session/list` titles a stored session."""
    if session.session_name is not None:
        return session.session_name
    first = next((m for m in session.messages if isinstance(m, UserMessage)), None)
    return text_of(first.content)[:TITLE_MAX_CHARS] or None if first is not None else None


def info_update(session: AgentSession) -> SessionInfoUpdate:
    now = datetime.datetime.now(datetime.UTC).isoformat()
    return SessionInfoUpdate(session_update="session_info_update", title=session_title(session), updated_at=now)


def usage_update(session: AgentSession) -> UsageUpdate | None:
    """Tokens in the context after the last model request, of the model's window; the session's cost."""
    model = session.model
    if model is None:
        return None
    last = next((m for m in reversed(session.messages) if isinstance(m, AssistantMessage)), None)
    usage = last.usage if last is not None else None
    used = usage.input + usage.cache_read + usage.cache_write + usage.output if usage is not None else 0
    return UsageUpdate(
        session_update="usage_update",
        used=used,
        size=model.context_window,
        cost=Cost(amount=session.stats().cost, currency="USD"),
    )

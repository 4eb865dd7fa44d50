"""`session_info_update` (title, last activity) and `usage_update` (context use, cost) of a session."""

from __future__ import annotations

import datetime

from acp.schema import Cost, SessionInfoUpdate, UsageUpdate

from pi_rpc.ai import UserMessage, text_of
from pi_rpc.session import AgentSession, estimated_tokens

TITLE_MAX_CHARS = 200  # the length session/list gives a title too (session/storage/store.py)


def session_title(session: AgentSession) -> str | None:
    """The session's name, else its first user message, as `session/list` titles a stored session."""
    if session.history.session_name is not None:
        return session.history.session_name
    first = next((m for m in session.messages if isinstance(m, UserMessage)), None)
    return text_of(first.content)[:TITLE_MAX_CHARS] or None if first is not None else None


def info_update(session: AgentSession) -> SessionInfoUpdate:
    now = datetime.datetime.now(datetime.UTC).isoformat()
    return SessionInfoUpdate(session_update="session_info_update", title=session_title(session), updated_at=now)


def usage_update(session: AgentSession) -> UsageUpdate | None:
    """The context's size of the model's window, as the session's stats count it (the last reply's
    reported context, estimates for what followed), and the session's cost. Right after a
    compaction the stats know no size until a reply reports one; ACP's `used` is a count that
    cannot be null, and the last reply's would be the size before the compaction, so it is the
    estimate of the compacted context then (the one Pi's compaction reports as its result's size)."""
    context = session.compaction.context_usage()
    if context is None:
        return None
    used = context.tokens if context.tokens is not None else estimated_tokens(session.messages)
    return UsageUpdate(
        session_update="usage_update",
        used=used,
        size=context.context_window,
        cost=Cost(amount=session.stats().cost, currency="USD"),
    )

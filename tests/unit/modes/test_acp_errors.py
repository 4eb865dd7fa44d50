"""acp/errors.py: the one table of how a session refusal reaches an ACP client."""

from __future__ import annotations

import pytest
from acp import RequestError

from pi_rpc.agent.agent import AgentBusyError
from pi_rpc.modes.acp.errors import AUTH_REQUIRED, BUSY_TEXT, RESOURCE_NOT_FOUND, SESSION_REFUSALS, session_error
from pi_rpc.session.session import ModelNotFoundError, NoModelError, SessionNotFoundError


class StaleSessionError(SessionNotFoundError):
    """A refusal the table does not name: it answers as its base class does."""


@pytest.mark.parametrize(
    ("refusal", "code", "data"),
    [
        # ACP has no streamingBehavior: the busy text says what an ACP client can do instead.
        (AgentBusyError("send it with streamingBehavior"), -32600, {"details": BUSY_TEXT}),
        (NoModelError(), AUTH_REQUIRED, {"details": str(NoModelError())}),
        (SessionNotFoundError("Session not found: s1"), RESOURCE_NOT_FOUND, {"details": "Session not found: s1"}),
        (StaleSessionError("Session s1 cannot be read"), RESOURCE_NOT_FOUND, {"details": "Session s1 cannot be read"}),
        (ModelNotFoundError("Model not found: x/y"), -32602, {"details": "Model not found: x/y"}),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_each_session_refusal_has_one_acp_error(refusal: Exception, code: int, data: dict[str, str]) -> None:
    assert isinstance(refusal, SESSION_REFUSALS)
    reply = session_error(refusal)
    assert isinstance(reply, RequestError)
    assert reply.code == code and reply.data == data


def test_anything_else_is_not_a_refusal() -> None:
    with pytest.raises(TypeError, match="RuntimeError is not a session refusal"):
        session_error(RuntimeError("the handler broke"))

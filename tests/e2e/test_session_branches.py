"""JSON-RPC session/forkPoints, session/fork, session/clone, session/setName: the session operations
behind Pi mode's get_fork_messages, fork, clone and set_session_name."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.e2e


def test_json_rpc_fork_clone_and_name(spawn: Any) -> None:
    """The JSON-RPC methods over the same session operations as Pi's fork/clone/set_session_name."""
    client = spawn("--no-session")
    client.request("prompt", {"message": "list files"})
    points = client.request("session/forkPoints")["forkPoints"]
    assert [p["text"] for p in points] == ["list files"]
    first = client.request("state")["sessionId"]
    forked = client.request("session/fork", {"entryId": points[0]["entryId"]})
    assert forked["text"] == "list files" and forked["sessionId"] != first
    assert [m["role"] for m in client.request("messages")["messages"]] == ["system"]
    assert client.request("session/clone")["sessionId"] != forked["sessionId"]
    assert client.request("session/setName", {"name": "  mine "}) == {"name": "mine"}
    client.close()

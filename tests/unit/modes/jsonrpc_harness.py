"""The JSON-RPC mode in-process, started by an editor that answers approvals."""

from __future__ import annotations

from typing import Any

from pi_rpc.ai.json_text import encode_json
from pi_rpc.modes.jsonrpc.protocol import AgentEventNotification

from .jsonrpc_client import Editor

Json = dict[str, Any]


async def start(editor: Editor, **initialize: Any) -> Editor:
    """The session's events go to the editor as the daemon writes them; then `initialize`."""
    editor.session.subscribe(lambda event: editor.send(encode_json(AgentEventNotification(params=event))))
    await editor.request("initialize", {"clientInfo": {"name": "test"}, **initialize})
    return editor


def events(editor: Editor, start: int = 0) -> list[Json]:
    return [m["params"] for m in editor.received[start:] if m.get("method") == "agent/event"]


def asked(editor: Editor, start: int = 0) -> list[Json]:
    return [m for m in editor.received[start:] if m.get("method") == "approval/request"]


async def event(editor: Editor, kind: str) -> Json:
    found = await editor.wait_for(lambda m: m.get("method") == "agent/event" and m["params"]["type"] == kind)
    return dict(found["params"])

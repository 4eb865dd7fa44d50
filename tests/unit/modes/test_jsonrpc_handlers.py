"""The JSON-RPC front end in-process: each method's handler over a real session, the daemon's
dispatch checks, and the method table against the registrations (no subprocess, no pipes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.modes.jsonrpc import handlers
from pi_rpc.modes.jsonrpc.protocol import BUSY, CLIENT_NOTIFICATIONS, METHODS, NO_MODEL, NOT_FOUND, Empty
from pi_rpc.session.storage.store import SessionDir

from ..session.helpers import FOREVER, TOOLS, open_session, reply, script, session_config, tool_call
from .jsonrpc_client import RpcError, jsonrpc_editor

pytestmark = pytest.mark.anyio

HELLO = reply("^hello", [{"text": "Hello there."}])
STREAM = reply("^stream", FOREVER)
WRITE = reply("^write", [tool_call("write", path="notes.txt", content="hello\n")], [{"text": "done"}])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


# --- the method table ------------------------------------------------------------------------------


class RecordingRpc:
    """Stands in for Rpc: records what `handlers.register` declares."""

    def __init__(self) -> None:
        self.methods: dict[str, type[Any]] = {}
        self.notifications: dict[str, type[Any]] = {}

    def method(self, name: str, params_type: type[Any]) -> Callable[[Any], Any]:
        assert name not in self.methods, f"{name} registered twice"
        self.methods[name] = params_type
        return lambda fn: fn

    def notification(self, name: str, params_type: type[Any]) -> Callable[[Any], Any]:
        assert name not in self.notifications, f"{name} registered twice"
        self.notifications[name] = params_type
        return lambda fn: fn


async def test_the_method_table_and_the_handlers_are_the_same_set(workspace: Path) -> None:
    """protocol.METHODS (the schema's and PROTOCOL.md's source) and what is served, both ways."""
    recorded = RecordingRpc()
    async with open_session(session_config(workspace, None)) as (session, _):
        handlers.register(recorded, session, None, on_shutdown=lambda: None, on_exit=lambda: None)  # type: ignore[arg-type]
    assert set(recorded.methods) - set(METHODS) == set(), "served but missing from METHODS"
    assert set(METHODS) - set(recorded.methods) == set(), "in METHODS but not served"
    assert recorded.methods == {name: params for name, (params, _) in METHODS.items()}
    assert recorded.notifications == CLIENT_NOTIFICATIONS


async def test_a_method_the_table_lacks_cannot_be_registered() -> None:
    """protocol.METHODS is the one list (the schema's source): a handler cannot add to it."""
    served = handlers.Registrations(RecordingRpc())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'session/rename' is not in protocol.METHODS"):
        served.method("session/rename")
    with pytest.raises(ValueError, match="'cancel' is not in protocol.CLIENT_NOTIFICATIONS"):
        served.notification("cancel")


async def test_start_up_refuses_a_table_entry_that_no_handler_serves(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(METHODS, "session/rename", (Empty, None))
    async with open_session(session_config(workspace, None)) as (session, _):
        with pytest.raises(ValueError, match="declares session/rename, but no handler serves it"):
            handlers.register(RecordingRpc(), session, None, on_shutdown=lambda: None, on_exit=lambda: None)  # type: ignore[arg-type]


# --- methods ---------------------------------------------------------------------------------------


async def test_initialize_reports_the_session_and_the_client_capabilities_set_the_policy(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        init = await editor.request(
            "initialize", {"clientInfo": {"name": "pytest"}, "capabilities": {"approvals": True}}
        )
        assert init["serverInfo"]["name"] == "pi-rpc" and init["protocolVersion"] == 1
        assert init["cwd"] == str(workspace) and init["scripted"] is True and init["model"]["api"] == "faux"
        assert [t["name"] for t in init["tools"]] == TOOLS and init["approvalPolicy"] == "ask"
        again = await editor.request("initialize", {"approvalPolicy": "readOnly"})
        assert again["approvalPolicy"] == "readOnly"
        assert (await editor.request("state"))["approvalPolicy"] == "readOnly"
        assert await editor.request("approval/setPolicy", {"policy": "auto"}) == {"policy": "auto"}


async def test_a_prompt_resolves_at_the_end_of_its_run(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(WRITE))) as editor:
        outcome = await editor.request("prompt", {"message": "write notes"})
        assert outcome["stopReason"] == "stop" and outcome["usage"]["totalTokens"] > 0
        roles = [m["role"] for m in (await editor.request("messages"))["messages"]]
        assert roles[-4:] == ["user", "assistant", "toolResult", "assistant"]
    assert (workspace / "notes.txt").read_text() == "hello\n"


async def test_a_prompt_while_running_needs_a_streaming_behaviour(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(STREAM))) as editor:
        first = editor.request_nowait("prompt", {"message": "stream forever"})
        with pytest.raises(RpcError) as refused:
            await editor.request("prompt", {"message": "second"})
        assert refused.value.code == BUSY and "streamingBehavior" in refused.value.message
        queued = await editor.request("prompt", {"message": "later", "streamingBehavior": "followUp"})
        assert queued == {"queued": "followUp"}
        assert await editor.request("steer", {"message": "steer me"}) is None
        assert await editor.request("followUp", {"message": "and then"}) is None
        assert await editor.request("clearQueue") == {"steering": ["steer me"], "followUp": ["later", "and then"]}
        assert (await editor.request("state"))["isStreaming"] is True
        assert await editor.request("abort") is None
        assert (await editor.result(first))["stopReason"] == "aborted"
        assert (await editor.request("state"))["isStreaming"] is False


async def test_cancelling_the_prompt_request_aborts_the_run(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(STREAM))) as editor:
        first = editor.request_nowait("prompt", {"message": "stream forever"})
        await editor.request("state")  # the prompt's handler has started
        editor.notify("$/cancelRequest", {"id": first})
        assert (await editor.response(first))["error"]["code"] == -32800
        assert (await editor.request("state"))["isStreaming"] is False


async def test_without_a_model_a_prompt_is_a_no_model_error(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, None)) as editor:
        init = await editor.request("initialize")
        assert init["model"] is None and init["scripted"] is False
        assert await editor.request("models/list") == {"models": []}
        with pytest.raises(RpcError) as failed:
            await editor.request("prompt", {"message": "hello"})
        assert failed.value.code == NO_MODEL and "model" in failed.value.message
        assert (await editor.request("state"))["messageCount"] == 0


async def test_tools_set_active_changes_the_list(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        assert await editor.request("tools/setActive", {"names": ["read", "grep", "nope"]}) == {
            "active": ["read", "grep"]
        }
        tools = (await editor.request("tools/list"))["tools"]
        assert {t["name"] for t in tools if t["active"]} == {"read", "grep"}
        read = next(t for t in tools if t["name"] == "read")
        assert read["parameters"]["required"] == ["path"] and read["label"] == "read"
        assert (await editor.request("state"))["activeTools"] == ["read", "grep"]


async def test_models_list_set_and_thinking(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        models = (await editor.request("models/list"))["models"]
        assert [(m["provider"], m["id"]) for m in models] == [("faux", "scripted")]
        assert (await editor.request("model/set", {"provider": "faux", "modelId": "scripted"}))["id"] == "scripted"
        with pytest.raises(RpcError) as missing:
            await editor.request("model/set", {"provider": "nope", "modelId": "x"})
        assert missing.value.code == NOT_FOUND and missing.value.message.startswith("Model not found: nope/x")
        assert await editor.request("thinking/set", {"level": "high"}) == {"level": "off", "available": ["off"]}
        with pytest.raises(RpcError) as bad:
            await editor.request("thinking/set", {"level": "extreme"})
        assert bad.value.code == -32602 and "$.level" in bad.value.message


@pytest.mark.parametrize("chosen_folder", [False, True], ids=["workspace-folders", "session-dir"])
async def test_sessions_new_list_load_and_stats(workspace: Path, chosen_folder: bool) -> None:
    """In a root of workspace folders and in a folder chosen as Pi's `--session-dir`."""
    chosen = SessionDir(workspace.parent / "chosen") if chosen_folder else None
    config = session_config(workspace, script(HELLO, reply("^again", [{"text": "Yes."}])), session_root=chosen)
    async with jsonrpc_editor(config) as editor:
        first_id = (await editor.request("state"))["sessionId"]
        await editor.request("prompt", {"message": "hello"})
        stats = await editor.request("session/stats")
        assert stats["sessionId"] == first_id and stats["userMessages"] == 1 and stats["assistantMessages"] == 1
        assert stats["tokens"]["total"] > 0 and stats["sessionFile"] is not None
        if chosen_folder:
            assert Path(stats["sessionFile"]).parent == workspace.parent / "chosen"
        count = (await editor.request("state"))["messageCount"]
        new_id = (await editor.request("session/new"))["sessionId"]
        assert new_id != first_id and await editor.request("messages") == {"messages": []}
        listed = (await editor.request("session/list"))["sessions"]
        assert [s["sessionId"] for s in listed] == [first_id] and listed[0]["firstMessage"] == "hello"
        assert listed[0]["name"] is None
        assert await editor.request("session/load", {"sessionId": first_id}) == {
            "sessionId": first_id,
            "messageCount": count,
        }
        assert (await editor.request("messages"))["messages"][-1]["content"][0]["text"] == "Hello there."
        with pytest.raises(RpcError) as missing:
            await editor.request("session/load", {"sessionId": "nope"})
        assert missing.value.code == NOT_FOUND and missing.value.message == "Session not found: nope"


async def test_a_session_with_no_prompt_is_not_listed(workspace: Path) -> None:
    """A resume picker shows no empty entries: neither the open session nor one left before its
    first prompt is listed; a session is once it holds a prompt."""
    async with jsonrpc_editor(session_config(workspace, script(HELLO))) as editor:
        await editor.request("session/new")  # the first session, left before its first prompt
        opened = (await editor.request("session/new"))["sessionId"]
        assert await editor.request("session/list") == {"sessions": []}
        await editor.request("prompt", {"message": "hello"})
        assert [s["sessionId"] for s in (await editor.request("session/list"))["sessions"]] == [opened]


async def test_a_named_session_is_listed_by_its_name(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(HELLO))) as editor:
        named = (await editor.request("state"))["sessionId"]
        await editor.request("prompt", {"message": "hello"})
        assert await editor.request("session/setName", {"name": "  release notes "}) == {"name": "release notes"}
        await editor.request("session/new")
        listed = {s["sessionId"]: s for s in (await editor.request("session/list"))["sessions"]}
        assert (listed[named]["name"], listed[named]["firstMessage"]) == ("release notes", "hello")


async def test_an_approval_is_asked_of_the_editor_and_its_answer_decides(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(WRITE))) as editor:
        await editor.request("initialize", {"capabilities": {"approvals": True}})
        prompt = editor.request_nowait("prompt", {"message": "write notes"})
        request = await editor.server_request("approval/request")
        params = request["params"]
        assert params["toolName"] == "write" and params["preview"]["path"] == str(workspace / "notes.txt")
        assert (await editor.request("state"))["pendingApprovals"] == [params["toolCallId"]]
        assert not (workspace / "notes.txt").exists()  # nothing is written while the user decides
        editor.answer(request, {"outcome": "allow"})
        assert (await editor.result(prompt))["stopReason"] == "stop"
    assert (workspace / "notes.txt").read_text() == "hello\n"


async def test_shutdown_aborts_and_exit_is_a_notification(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(STREAM))) as editor:
        first = editor.request_nowait("prompt", {"message": "stream forever"})
        assert await editor.request("shutdown") is None
        assert (await editor.result(first))["stopReason"] == "aborted" and editor.shutdowns == 1
        editor.notify("exit")
        assert editor.exits == 1


async def test_wrong_params_name_the_field(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        with pytest.raises(RpcError) as bad:
            await editor.request("tools/setActive", {"names": "read"})
        assert bad.value.code == -32602 and "$.names" in bad.value.message
        with pytest.raises(RpcError) as unknown:
            await editor.request("tools/remove", {})
        assert unknown.value.code == -32601


# --- the daemon's dispatch: what it checks before a handler runs ------------------------------------


async def test_bad_frames_get_a_precise_error_and_the_next_request_is_served(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        cases = [
            (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),
            (b"[]", -32600),
            (b'{"jsonrpc": "1.0", "id": 2, "method": "state"}', -32600),
            (b'{"jsonrpc": "2.0", "id": true, "method": "state"}', -32600),
            (b'{"jsonrpc": "2.0", "id": 3, "method": "state", "params": 7}', -32600),
        ]
        for frame, code in cases:
            before = len(editor.received)
            editor.send_raw(frame)
            (error,) = editor.received[before:]
            assert error["error"]["code"] == code, frame
        editor.send_raw(b'{"jsonrpc": "2.0", "id": "ok", "method": "state", "extra": 1}')
        assert (await editor.result("ok"))["isStreaming"] is False


async def test_dispatch_answers_a_cancel_sent_as_a_request_and_drops_client_responses(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(STREAM))) as editor:
        editor.send_raw(b'{"jsonrpc": "2.0", "id": 7, "method": "prompt", "params": {"message": "stream forever"}}')
        await editor.request("state")
        editor.send_raw(b'{"jsonrpc": "2.0", "id": 7, "result": null}')  # not ours: ignored, never answered
        editor.send_raw(b'{"jsonrpc": "2.0", "id": "c1", "method": "$/cancelRequest", "params": {"id": 7}}')
        assert await editor.result("c1") is None
        assert (await editor.response(7))["error"]["code"] == -32800
        editor.send_raw(b'{"jsonrpc": "2.0", "id": "c2", "method": "$/cancelRequest", "params": {}}')
        assert (await editor.response("c2"))["error"]["code"] == -32602


async def test_requests_behind_shutdown_are_refused(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        editor.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}')
        editor.send_raw(b'{"jsonrpc": "2.0", "id": 2, "method": "state"}')
        refused = await editor.response(2)
        assert refused["error"]["code"] == -32600 and "shutting down" in refused["error"]["message"]
        assert await editor.result(1) is None


async def test_session_entries_pages_forward_from_a_cursor(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(HELLO), persist=False)) as editor:
        # A new session records the model and the thinking level it starts on, as Pi's does.
        fresh = await editor.request("session/entries")
        assert [(e["type"], e.get("provider"), e.get("thinkingLevel")) for e in fresh["entries"]] == [
            ("model_change", "faux", None),
            ("thinking_level_change", None, "off"),
        ]
        assert fresh["leafId"] == fresh["entries"][-1]["id"]
        await editor.request("prompt", {"message": "hello"})
        listed = await editor.request("session/entries")
        ids = [entry["id"] for entry in listed["entries"]]
        assert listed["leafId"] == ids[-1] and [e["type"] for e in listed["entries"]][-2:] == ["message", "message"]
        page = await editor.request("session/entries", {"since": ids[0], "limit": 1})
        assert [e["id"] for e in page["entries"]] == [ids[1]] and page["leafId"] == ids[-1]
        with pytest.raises(RpcError) as refused:
            await editor.request("session/entries", {"limit": 0})
        assert refused.value.code == -32602 and refused.value.message == "limit must be at least 1, not 0"
        with pytest.raises(RpcError) as missing:
            await editor.request("session/entries", {"since": "m1"})
        assert missing.value.code == NOT_FOUND


async def test_cloning_a_session_with_no_message_is_refused(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(HELLO))) as editor:
        with pytest.raises(RpcError) as refused:
            await editor.request("session/clone")
        assert refused.value.code == NOT_FOUND
        assert refused.value.message == "Cannot clone session: no current entry selected"

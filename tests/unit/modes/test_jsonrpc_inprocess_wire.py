"""The JSON-RPC front end's checks on what an editor sends, in-process. Each case ran as a daemon
subprocess test in tests/e2e or tests/reliability before, though none depends on pipes or a
process: frames enter at the daemon's dispatch, as its reader hands them on. What stays a
subprocess test is framing, signals, exit and process cleanup."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from pi_rpc.agent.types import MessageEnd, ToolExecutionStart
from pi_rpc.ai.types import AssistantMessage, text_of

from ..session.helpers import FOREVER, Events, reply, script, session_config, tool_call
from .jsonrpc_client import RpcError, jsonrpc_editor

pytestmark = pytest.mark.anyio

STREAM = reply("^stream", FOREVER)
ANY = reply(".", [{"text": "ok"}])
SLOW = reply("^slow", [tool_call("bash", command="sleep 60")], [{"text": "never asked"}])
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def message_lines(session_file: str) -> list[str]:
    """The file's lines holding messages (after the header and the model and level entries)."""
    settings = ('"type":"model_change"', '"type":"thinking_level_change"')
    return [line for line in Path(session_file).read_text().splitlines()[1:] if not line.startswith(settings, 1)]


async def test_unknown_methods_and_bad_params_are_named(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        with pytest.raises(RpcError) as unknown:
            await editor.request("tools/explode")
        assert unknown.value.code == -32601
        with pytest.raises(RpcError) as bad:
            await editor.request("prompt", {"message": 12})
        assert bad.value.code == -32602
        assert "`$.message`" in bad.value.message and "Expected `str`" in bad.value.message
        with pytest.raises(RpcError) as missing:
            await editor.request("tools/setActive", {})
        assert missing.value.code == -32602 and "names" in missing.value.message
        with pytest.raises(RpcError) as invalid:
            await editor.request("prompt", {"message": "x", "streamingBehavior": "later"})
        assert invalid.value.code == -32602 and "streamingBehavior" in invalid.value.message
        assert (await editor.request("state"))["messageCount"] == 0


async def test_frames_that_are_no_request_are_refused_and_the_next_is_served(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        cases = [
            (b'"just a string"', -32600),
            (b'{"id": 3, "method": "state"}', -32600),  # no "jsonrpc"
            (b'{"jsonrpc": "2.0", "id": 4}', -32600),  # no method
            (b'{"jsonrpc": "2.0", "id": 7, "method": "state", "params": {"x": "\xff\xfe"}}', -32700),
            (b'{"jsonrpc":"2.0","id":5,"method":"state","params":{"a":' + b"[" * 5000 + b"]" * 5000 + b"}}", -32700),
        ]
        for frame, code in cases:
            before = len(editor.received)
            editor.send_raw(frame)
            (error,) = editor.received[before:]
            assert error["error"]["code"] == code, frame[:60]
        assert (await editor.request("state"))["isStreaming"] is False


async def test_a_cancel_notification_without_an_id_is_ignored_silently(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script())) as editor:
        editor.send_raw(b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":[1]}')
        editor.send_raw(b'{"jsonrpc":"2.0","method":"$/cancelRequest"}')
        assert (await editor.request("state"))["isStreaming"] is False
        assert [m for m in editor.received if "error" in m] == []


async def test_responses_from_the_client_are_logged_and_never_answered(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with jsonrpc_editor(session_config(workspace, None)) as editor:
        with caplog.at_level(logging.WARNING):
            for frame in (
                b'{"jsonrpc": "2.0", "id": 7, "result": null}',
                b'{"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "no such method"}}',
                b'{"jsonrpc": "2.0", "id": 9, "result": 1, "extra": true}',
                b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}',
            ):
                editor.send_raw(frame)
        assert editor.received == []
        assert sum("ignored a response from the client" in r.getMessage() for r in caplog.records) == 4


async def test_a_prompt_pipelined_behind_shutdown_never_starts_a_run(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(STREAM))) as editor:
        events = Events(editor.session)
        editor.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}')
        editor.send_raw(b'{"jsonrpc": "2.0", "id": 2, "method": "prompt", "params": {"message": "stream forever"}}')
        assert (await editor.response(2))["error"]["code"] == -32600
        assert await editor.result(1) is None
        assert events.all == [] and editor.session.messages == []


async def test_cancelling_a_prompt_keeps_the_streamed_part_and_ends_the_run_once(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(STREAM))) as editor:
        events = Events(editor.session)
        first = editor.request_nowait("prompt", {"message": "stream forever"})
        await events.wait_for_type("message_update")
        editor.notify("$/cancelRequest", {"id": first})
        assert (await editor.response(first))["error"]["code"] == -32800
        await events.wait_for_type("agent_settled")
        assert events.types().count("agent_end") == 1
        (assistant,) = [
            e.message for e in events.all if isinstance(e, MessageEnd) and isinstance(e.message, AssistantMessage)
        ]
        streamed = text_of(assistant.content)
        assert assistant.stop_reason == "aborted" and streamed and "thinking about it".startswith(streamed)


async def test_an_abort_pipelined_right_after_the_prompt_is_not_lost(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(SLOW))) as editor:
        events = Events(editor.session)
        editor.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"message":"slow"}}')
        editor.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"abort"}')
        assert await editor.result(2) is None
        assert (await editor.result(1))["stopReason"] == "aborted"
        assert not any(isinstance(e, ToolExecutionStart) for e in events.all)


async def test_a_lone_surrogate_escape_from_a_javascript_client_is_replaced(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(ANY))) as editor:
        editor.send_raw(b'{"jsonrpc":"2.0","id":42,"method":"prompt","params":{"message":"odd \\ud800 text"}}')
        assert (await editor.result(42))["stopReason"] == "stop"
        users = [m for m in (await editor.request("messages"))["messages"] if m["role"] == "user"]
        assert users[0]["content"] == [{"type": "text", "text": "odd \ufffd text"}]


async def test_a_prompt_with_an_image_keeps_it_in_the_transcript(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(ANY))) as editor:
        await editor.request("prompt", {"message": "what is this?", "images": [{"data": PNG, "mimeType": "image/png"}]})
        user = next(m for m in (await editor.request("messages"))["messages"] if m["role"] == "user")
        assert user["content"] == [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
        ]


async def test_a_broken_image_is_refused_before_the_session_sees_it(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(ANY))) as editor:
        with pytest.raises(RpcError) as bad:
            await editor.request(
                "prompt", {"message": "x", "images": [{"data": "!!!not base64", "mimeType": "image/png"}]}
            )
        assert bad.value.code == -32602 and "$.images[0].data" in bad.value.message
        with pytest.raises(RpcError) as html:
            await editor.request("prompt", {"message": "x", "images": [{"data": "AAAA", "mimeType": "text/html"}]})
        assert html.value.code == -32602 and "$.images[0].mimeType" in html.value.message
        assert (await editor.request("state"))["messageCount"] == 0


async def test_without_persistence_the_wire_shows_no_session_file(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(ANY), persist=False)) as editor:
        await editor.request("prompt", {"message": "hello"})
        assert (await editor.request("state"))["sessionFile"] is None
        assert await editor.request("session/list") == {"sessions": []}


async def test_loading_the_current_session_during_a_run_keeps_every_message(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, script(SLOW))) as editor:
        events = Events(editor.session)
        prompt = editor.request_nowait("prompt", {"message": "slow"})
        await events.wait_for(lambda e: isinstance(e, ToolExecutionStart))
        state = await editor.request("state")
        loaded = await editor.request("session/load", {"sessionId": state["sessionId"]})
        assert (await editor.result(prompt))["stopReason"] == "aborted"
        on_disk = message_lines(state["sessionFile"])
        assert loaded["messageCount"] == len(on_disk) == len((await editor.request("messages"))["messages"])
        with pytest.raises(RpcError):
            await editor.request("session/load", {"sessionId": "*"})

"""Pi mode's `get_checkpoints` and `rewind`, pi-rpc's own commands (no Pi has them): the JSON-RPC
`session/checkpoints` and `session/rewind` in Pi's command and response shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..session.helpers import reply, script, session_config, tool_call
from .pi_harness import Pi, pi_mode

pytestmark = pytest.mark.anyio

EDIT = reply(
    "^edit",
    [tool_call("write", path="new.txt", content="new\n")],
    [tool_call("bash", command="rm old.txt")],
    [{"text": "done"}],
)


async def settled(pi: Pi, command_id: str, text: str) -> None:
    start = len(pi.peer.lines)
    await pi.data({"id": command_id, "type": "prompt", "message": text})
    await pi.peer.wait_for(lambda line: line.get("type") == "agent_settled", start)


async def test_get_checkpoints_and_rewind_put_the_files_back(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "old.txt").write_text("old\n")
    workspace = workspace.resolve()
    async with pi_mode(session_config(workspace, script(EDIT))) as pi:
        await settled(pi, "1", "edit")
        assert not (workspace / "old.txt").exists() and (workspace / "new.txt").exists()
        [checkpoint] = (await pi.data({"id": "2", "type": "get_checkpoints"}))["checkpoints"]
        assert checkpoint["text"] == "edit"
        assert {(Path(f["path"]).name, f["change"]) for f in checkpoint["files"]} == {
            ("new.txt", "created"),
            ("old.txt", "deleted"),
        }
        rewound = await pi.data({"id": "3", "type": "rewind", "entryId": checkpoint["entryId"], "restore": "both"})
        assert rewound["conflicts"] == [] and rewound["text"] == "edit"
        assert (workspace / "old.txt").read_text() == "old\n" and not (workspace / "new.txt").exists()
        assert (await pi.data({"id": "4", "type": "get_state"}))["messageCount"] <= 1  # forked before it

        refused = await pi.call({"id": "5", "type": "rewind", "entryId": "none", "restore": "files"})
        assert refused["success"] is False and "none" in refused["error"]

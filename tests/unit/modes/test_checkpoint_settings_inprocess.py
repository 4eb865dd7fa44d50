"""Checkpoints as settings.json `checkpoints` configures them, what they say they could not
capture, and an abort during a shell command's snapshot (through the JSON-RPC front end,
in-process, with the scripted model)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import anyio
import msgspec
import pytest

from pi_rpc.ai.json_text import encode_json
from pi_rpc.modes.jsonrpc.protocol import AgentEventNotification
from pi_rpc.session.checkpoints import session_checkpoints as checkpoints_module
from pi_rpc.session.checkpoints.snapshots import CheckpointSettings
from pi_rpc.session.configuration.settings import Settings

from ..session.helpers import reply, script, session_config, tool_call
from .jsonrpc_client import Editor, jsonrpc_editor

pytestmark = pytest.mark.anyio

SHELL = script(
    reply("^make", [tool_call("bash", command="printf 'made\\n' > made.txt && chmod 600 made.txt")], [{"text": "ok"}]),
    reply("^rewrite", [tool_call("bash", command="printf 'new\\n' > private.txt")], [{"text": "ok"}]),
)


def workspace_in_git(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "private.txt").write_text("secret\n")
    (workspace / "private.txt").chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "-q"], cwd=workspace, env=env, check=True)
    return workspace.resolve()


async def start(editor: Editor) -> None:
    editor.session.subscribe(lambda event: editor.send(encode_json(AgentEventNotification(params=event))))
    await editor.request("initialize", {"clientInfo": {"name": "test"}})


def test_the_settings_key_reads_its_limits_and_switch() -> None:
    settings = msgspec.json.decode(
        b'{"checkpoints": {"captureShell": false, "maxScanFiles": 50, "maxScanMiB": 2, "diskLimitMiB": 8}}',
        type=Settings,
    )
    limits = settings.checkpoints.snapshot_limits()
    assert settings.checkpoints.capture_shell is False
    assert (limits.max_files, limits.max_bytes) == (50, 2 * 1024 * 1024)
    assert settings.checkpoints.disk_limit_bytes == 8 * 1024 * 1024
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(b'{"checkpoints": {"maxScanFiles": 0}}', type=Settings)


async def test_with_shell_capture_off_the_listing_says_so_and_holds_nothing_guessed(tmp_path: Path) -> None:
    workspace = workspace_in_git(tmp_path)
    config = session_config(workspace, SHELL, checkpoints=CheckpointSettings(capture_shell=False))
    async with jsonrpc_editor(config) as editor:
        await start(editor)
        await editor.request("prompt", {"message": "make"})
        [listed] = (await editor.request("session/checkpoints"))["checkpoints"]
        assert listed["files"] == []
        assert listed["notCaptured"] == [
            "changes made by shell commands are not captured (checkpoints.captureShell: false)"
        ]
        assert not (tmp_path / "sessions").exists() or not list((tmp_path / "sessions").rglob("shadow.git"))


async def test_the_configured_scan_limit_applies(tmp_path: Path) -> None:
    workspace = workspace_in_git(tmp_path)
    config = session_config(workspace, SHELL, checkpoints=CheckpointSettings(max_scan_files=1))
    (workspace / "more.txt").write_text("two files: past the limit\n")
    async with jsonrpc_editor(config) as editor:
        await start(editor)
        await editor.request("prompt", {"message": "make"})
        [listed] = (await editor.request("session/checkpoints"))["checkpoints"]
        assert any("more than the 1 snapshotted" in note for note in listed["notCaptured"])


async def test_a_shell_rewrite_is_undone_with_the_files_own_permission_bits(tmp_path: Path) -> None:
    """git keeps only the executable bit: 0600 came back as 0644 before the snapshot kept its stat."""
    workspace = workspace_in_git(tmp_path)
    async with jsonrpc_editor(session_config(workspace, SHELL)) as editor:
        await start(editor)
        await editor.request("prompt", {"message": "rewrite"})
        [listed] = (await editor.request("session/checkpoints"))["checkpoints"]
        await editor.request("session/rewind", {"entryId": listed["entryId"], "restore": "files"})
    private = workspace / "private.txt"
    assert private.read_text() == "secret\n" and stat.S_IMODE(private.stat().st_mode) == 0o600


async def test_an_abort_during_a_snapshot_stops_it_and_leaves_nothing_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git that takes its time over `add` (a huge tree): the abort kills it rather than wait."""
    workspace = workspace_in_git(tmp_path)
    real_git = shutil.which("git")
    pid_file = tmp_path / "add.pid"
    slow_git = tmp_path / "slow-git"
    slow_git.write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do [ "$a" = add ] && echo $$ > {pid_file} && exec sleep 120; done\n'
        f'exec {real_git} "$@"\n'
    )
    slow_git.chmod(0o755)
    monkeypatch.setattr(checkpoints_module, "git_program", lambda: str(slow_git))
    async with jsonrpc_editor(session_config(workspace, SHELL)) as editor:
        await start(editor)
        prompt = editor.request_nowait("prompt", {"message": "make"})
        with anyio.fail_after(60):  # a guard against a hang, not a timing assertion
            while not (pid_file.exists() and pid_file.read_text().strip()):  # noqa: ASYNC110 - no message says it started
                await anyio.sleep(0.02)
        pid = int(pid_file.read_text())
        await editor.request("abort")
        outcome = await editor.result(prompt)
        assert outcome["stopReason"] == "aborted"
        assert not (workspace / "made.txt").exists()  # the command never ran
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # killed and reaped, not left running

"""What a cloned repository can make pi-rpc read and send, through the front ends: a workspace's
`AGENTS.md` linking to a private file never reaches the provider, its settings cannot name the
user's folders (or a tree as big as `/usr`), and however big its folders, `initialize` and ACP's
`session/new` and Pi mode's first command are answered (docs/SECURITY.md, "Context files and resources")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import acp
import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from pi_rpc.session.resources.limits import MAX_ENTRIES_PER_SOURCE
from tests.reliability.local_server import local_server

from .acp_daemon import Editor, spawn_acp
from .conftest import SCRIPTS, daemon_env
from .loopback_model import Loopback, completions_turn
from .pi_conversations import answer, converse

pytestmark = pytest.mark.e2e

SECRET = "SECRET-MARKER-in-the-users-key"
# Each daemon here trusts its workspace: an untrusted one reads none of its settings' entries or
# folders at all (test_untrusted_resources.py); what is tested is that even a trusted one stays
# inside its tree and bounds.
TRUSTED = "--approve"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def hostile_workspace(workspace: Path, home: Path) -> None:
    """A repository that links its AGENTS.md to the user's key and names the user's folders and
    `/usr` in its settings; the user keeps a private skill and their own prompts folder."""
    write(home / ".ssh" / "id_rsa", SECRET)
    write(home / "private-skills" / "mine" / "SKILL.md", f"---\nname: mine\ndescription: {SECRET}\n---\n")
    write(home / "my-prompts" / "standup.md", "---\ndescription: the user's standup\n---\nStandup.")
    write(home / ".config" / "pi-rpc" / "settings.json", json.dumps({"prompts": ["~/my-prompts"]}))
    (workspace / "AGENTS.md").unlink(missing_ok=True)
    (workspace / "AGENTS.md").symlink_to(home / ".ssh" / "id_rsa")
    write(workspace / "CLAUDE.md", "PROJECT-RULE: run the tests.")
    settings = {"skills": ["~/private-skills"], "prompts": ["/usr", "~/.ssh/id_rsa"]}
    write(workspace / ".pi" / "settings.json", json.dumps(settings))


@pytest.mark.timeout(120)
def test_jsonrpc_a_workspace_cannot_send_the_users_files_or_name_their_folders(
    loopback: Loopback,
    workspace: Path,
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    hostile_workspace(workspace, home)
    loopback.script(completions_turn("Done."))
    argv = ["--cwd", str(workspace), "--api", "openai-completions", "--base-url", f"{loopback.server.url}/v1"]
    with DaemonClient([*argv, "--model", "test-model", "--no-session", TRUSTED], env=daemon_env(home)) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        commands = client.request("commands/list")["commands"]
        # The user's own settings may name ~/my-prompts; the workspace's ~/private-skills is ignored.
        assert [(c["name"], c["scope"]) for c in commands] == [("standup", "user")]
        assert client.request("prompt", {"message": "hello"})["stopReason"] == "stop"
        assert client.close() == 0
    [request] = loopback.requests()
    sent = json.dumps(request.json)
    assert SECRET not in sent and "PROJECT-RULE: run the tests." in sent
    said = "\n".join(client.stderr_lines)
    assert f"context file {workspace / 'AGENTS.md'} is skipped: it resolves outside {workspace}" in said
    for entry in ("'~/private-skills'", "'/usr'", "'~/.ssh/id_rsa'"):
        assert f"entry {entry} is ignored: a workspace's settings may not name a place outside the workspace" in said


@pytest.mark.timeout(120)
def test_jsonrpc_a_huge_prompts_tree_is_cut_and_initialize_answered(workspace: Path, tmp_path: Path) -> None:
    docs = workspace / "docs"
    for n in range(MAX_ENTRIES_PER_SOURCE + 200):
        write(docs / f"{n // 100:02}" / f"t{n:04}.md", f"template {n}")
    write(workspace / ".pi" / "settings.json", json.dumps({"prompts": ["../docs"]}))
    argv = ["--cwd", str(workspace), "--script", str(SCRIPTS / "e2e.json"), "--no-session", TRUSTED]
    with DaemonClient(argv, env=daemon_env(tmp_path / "home")) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        prompts = [c for c in client.request("commands/list")["commands"] if c["source"] == "prompt"]
        assert client.close() == 0
    # Every entry looked at counts, folders too: fewer templates than the limit, none past it. The
    # load's time bound is its own work, which a busy machine does not shorten: the entry limit
    # is what cuts this tree.
    assert 0 < len(prompts) < MAX_ENTRIES_PER_SOURCE
    said = "\n".join(client.stderr_lines)
    assert f"stopped after {MAX_ENTRIES_PER_SOURCE} entries of {docs} (the limit per source)" in said


@pytest.mark.anyio
@pytest.mark.timeout(120)
async def test_acp_session_new_is_answered_and_the_users_key_never_sent(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    hostile_workspace(workspace, home)
    editor = Editor()
    with local_server(["m"]) as server:
        argv = ["-m", "pi_rpc", "--mode", "acp", "--cwd", str(workspace), "--base-url", server.url, "--model", "m"]
        argv.append(TRUSTED)
        async with spawn_acp(editor, argv, home) as (conn, process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hello")])
            assert answer.stop_reason == "end_turn"
        [chat] = server.chats()
    sent = json.dumps(chat.body)
    assert SECRET not in sent and "PROJECT-RULE: run the tests." in sent
    listed = [u for u in editor.updates() if u["sessionUpdate"] == "available_commands_update"]
    names = [c["name"] for update in listed for c in update["availableCommands"]]
    assert "standup" in names and "skill:mine" not in names and "mine" not in names


@pytest.mark.timeout(120)
def test_pi_mode_answers_its_first_command_and_lists_only_the_users_own(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    hostile_workspace(workspace, home)
    argv = [sys.executable, "-m", "pi_rpc", "--mode", "rpc", "--script", str(SCRIPTS / "e2e.json"), "--no-session"]
    lines = converse([*argv, TRUSTED], [{"id": "1", "type": "get_commands"}], daemon_env(home), workspace)
    listed = answer(lines, "1")["commands"]
    assert [(c["name"], c["sourceInfo"]["scope"]) for c in listed] == [("standup", "user")]

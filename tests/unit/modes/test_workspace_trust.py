"""Workspace trust through the JSON-RPC front end, where a cloned repository's
`.pi/settings.json` `{"permissions": {"allow": ["bash"]}}` made bash run unasked under every
policy: until the user trusts the folder, its own allow rules do nothing (its deny rules still
apply); `--approve`, the trust list and `defaultProjectTrust: "always"` trust it, `--no-approve`
overrides the list. "Allow always" with save goes into the user's own config for the folder, so it
applies to the next session however the folder is trusted. In-process, from the command line's
config (`build_session_config`), the user's config folders the test's own."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_rpc.session import record_trust, saved_allow_rules, trust_file

from .jsonrpc_client import Editor, jsonrpc_editor
from .jsonrpc_harness import asked, start
from .workspace_folders import daemon_config, folder

pytestmark = pytest.mark.anyio

ALLOWS_BASH: dict[str, object] = {"permissions": {"allow": ["bash"]}}


@pytest.fixture(autouse=True)
def own_config_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-agent"))
    yield tmp_path / "pi-agent"  # agent_config_paths: PI_CODING_AGENT_DIR's folder comes first


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return folder(tmp_path, "repo", ALLOWS_BASH)


async def run_it(editor: Editor, answer: str | None) -> None:
    """Prompt; answer the approval request, if one is expected, with `answer`."""
    await start(editor, capabilities={"approvals": True})
    prompt = editor.request_nowait("prompt", {"message": "run it"})
    if answer is not None:
        request = await editor.server_request("approval/request")
        editor.answer(request, {"outcome": answer})
    await editor.result(prompt)


@pytest.mark.parametrize("policy", ["ask", "acceptEdits", "readOnly"])
async def test_an_untrusted_repositorys_allow_rule_does_not_run_bash_unasked(
    tmp_path: Path, repo: Path, policy: str
) -> None:
    config = daemon_config(tmp_path, repo, "--approval-policy", policy)
    async with jsonrpc_editor(config) as editor:
        await run_it(editor, None if policy == "readOnly" else "reject")
        assert len(asked(editor)) == (0 if policy == "readOnly" else 1)
    assert not (repo / "ran.txt").exists()


def trusted_by(how: str, tmp_path: Path, config_folder: Path) -> list[str]:
    """Trust the repository `how`; the command line's flags for it."""
    if how == "trust list":
        record_trust(str(tmp_path), True)  # a parent folder's decision holds for the folders in it
        assert trust_file().parent == config_folder
    if how == "defaultProjectTrust":
        config_folder.mkdir(parents=True, exist_ok=True)
        (config_folder / "settings.json").write_text(json.dumps({"defaultProjectTrust": "always"}))
    return ["--approve"] if how == "--approve" else []


@pytest.mark.parametrize("how", ["--approve", "trust list", "defaultProjectTrust"])
async def test_a_trusted_repositorys_allow_rule_applies(
    tmp_path: Path, repo: Path, own_config_folders: Path, how: str
) -> None:
    flags = trusted_by(how, tmp_path, own_config_folders)
    async with jsonrpc_editor(daemon_config(tmp_path, repo, "--approval-policy", "ask", *flags)) as editor:
        await run_it(editor, None)
        assert asked(editor) == []
    assert (repo / "ran.txt").read_text() == "ran\n"


async def test_no_approve_overrides_the_trust_list(tmp_path: Path, repo: Path) -> None:
    record_trust(str(repo), True)
    async with jsonrpc_editor(daemon_config(tmp_path, repo, "--approval-policy", "ask", "-na")) as editor:
        await run_it(editor, "reject")
        assert len(asked(editor)) == 1
    assert not (repo / "ran.txt").exists()


def test_an_untrusted_folders_ignored_settings_are_named_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = folder(tmp_path, "repo", {**ALLOWS_BASH, "mcpServers": {"x": {"command": "x"}}})
    config = daemon_config(tmp_path, repo)
    assert config.open_folder is not None
    config.open_folder(str(repo))  # a second session of the same folder
    warnings = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "not trusted" in r.getMessage()
    ]
    assert len(warnings) == 1
    assert "permissions.allow, mcpServers ignored" in warnings[0] and str(repo) in warnings[0]
    assert config.tools.mcp_servers == []  # nor are its servers started


def test_allow_always_with_save_is_the_users_own_rule_for_that_folder(tmp_path: Path) -> None:
    repo = folder(tmp_path, "repo", {"permissions": {"deny": ["write"]}})
    before = (repo / ".pi" / "settings.json").read_text()
    config = daemon_config(tmp_path, repo)
    assert config.approvals.save_allow_rule is not None
    config.approvals.save_allow_rule("bash(npm test:*)")
    assert (repo / ".pi" / "settings.json").read_text() == before  # the repository's file is left alone
    assert saved_allow_rules(str(repo)) == ["bash(npm test:*)"]
    assert saved_allow_rules(str(tmp_path)) == []  # that folder's alone
    assert config.open_folder is not None
    again = config.open_folder(str(repo))  # the next session of that folder, untrusted still
    assert [rule.text for rule in again.approvals.rules.allow] == ["bash(npm test:*)"]
    assert [rule.text for rule in again.approvals.rules.deny] == ["write"]

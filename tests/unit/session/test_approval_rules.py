"""The approval gate against rules that match parsed commands and resolved paths: the decision order,
commands a prefix rule must not cover, deny rules and their aliases, protected control files,
symlinks inside the workspace, and reads outside it under readOnly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_rpc.agent.types import BlockCall, ToolCallContext
from pi_rpc.session.approvals.gate import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRules,
    PermissionRule,
    parse_rules,
    suggested_rule,
)
from pi_rpc.tools.registry import create_tool_definitions

from .approval_user import FakeUser, call

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


REJECT = ApprovalDecision(outcome="reject")


def gate(
    workspace: Path,
    policy: ApprovalPolicy,
    user: FakeUser | None = None,
    *,
    allow: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    config_folder: Path | None = None,
) -> ApprovalGate:
    tools = create_tool_definitions(["read", "bash", "edit", "write"])
    result = ApprovalGate(
        lambda: str(workspace),
        tools.get,
        lambda: ToolCallContext(cwd=str(workspace)),
        policy=policy,
        rules=ApprovalRules(allow=parse_rules(allow), deny=parse_rules(deny)),
        config_folders=lambda: [str(config_folder)] if config_folder is not None else [],
    )
    result.approver = user
    return result


def refused(outcome: BlockCall | None, *words: str) -> bool:
    return isinstance(outcome, BlockCall) and all(word in (outcome.reason or "") for word in words)


# --- the order: deny, the policy, then allow ------------------------------------------------------


@pytest.mark.parametrize("rule", ["write", "write(**)", "bash", "bash(rm:*)"])
async def test_an_allow_rule_never_loosens_read_only(rule: str, tmp_path: Path) -> None:
    g = gate(tmp_path, "readOnly", FakeUser(), allow=(rule,))
    assert refused(await g.check(call("write", path="a.txt", content="x")), "read-only")
    assert refused(await g.check(call("bash", command="rm -rf build")), "read-only")
    assert not (tmp_path / "a.txt").exists()


async def test_deny_still_comes_first_and_allow_still_skips_the_question(tmp_path: Path) -> None:
    user = FakeUser()
    g = gate(tmp_path, "ask", user, allow=("bash(make:*)",), deny=("bash(make install:*)",))
    assert await g.check(call("bash", command="make test")) is None
    assert refused(await g.check(call("bash", command="make install")), "bash(make install:*)")
    assert user.asked == []


# --- allow rules cover only literal simple commands ------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("bash(npm test:*)", r"npm test ${x:=\$\(touch\ C\)} ${x@P}"),
        ("bash(npm test:*)", "npm test $[$(touch C)]"),
        ("bash(npm test:*)", "npm test $((1+2))"),
        ("bash(git status:*)", "git status arr[$(touch C)]"),
        ("bash(git status:*)", "git status `touch C`"),
        ("bash(git status:*)", "git status <(touch C)"),
        ("bash(git status:*)", "git status *"),
        ("bash(git status:*)", "git status {a,b}"),
        ("bash(git status:*)", "git status ~"),
        ("bash(git status:*)", 'git status "$HOME"'),
        ("bash(git status:*)", "X=1 git status"),
        ("bash(git status:*)", "git status <<EOF\nx\nEOF"),
        ("bash(git status:*)", "git status\ntouch C"),
        ("bash(git status:*)", "git status &"),
        ("bash(npm test:*)", "npm test --script-shell=./src/evil.sh"),
        ("bash(npm test:*)", "npm test --script-shell ./src/evil.sh"),
        ("bash(git:*)", "git -c core.pager=./evil.sh log"),
        ("bash(git rebase:*)", "git rebase -x ./evil.sh main"),
        ("bash(git config:*)", "git config core.fsmonitor ./evil.sh"),
        ("bash(find:*)", "find . -exec ./evil.sh {} ;"),
        ("bash(make:*)", "make SHELL=./evil.sh test"),
        ("bash(python -m pytest:*)", "python -m pytest -p evil_plugin"),
        ("bash(cp:*)", "cp evil.json .pi/settings.json"),
    ],
)
async def test_a_prefix_rule_asks_for_what_it_cannot_read(rule: str, command: str, tmp_path: Path) -> None:
    user = FakeUser(REJECT)
    g = gate(tmp_path, "ask", user, allow=(rule,))
    assert refused(await g.check(call("bash", command=command)), "rejected")
    assert [request.tool_name for request in user.asked] == ["bash"]


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("bash(npm test:*)", "npm test"),
        ("bash(npm test:*)", "npm test -- -k 'a b'"),
        ("bash(git status)", "git status"),
        ("bash(git status)", "  git   status  "),
        ("bash(git commit:*)", "git commit -m 'fix: the a b \"c\" case'"),
        ("bash(git log:*)", "git log --oneline -n 5"),
        ("bash(python -m pytest:*)", "python -m pytest tests/unit -q -x"),
        ("bash(git config:*)", "git config user.name"),
    ],
)
async def test_ordinary_commands_under_their_rule_run_unasked(rule: str, command: str, tmp_path: Path) -> None:
    user = FakeUser()
    assert await gate(tmp_path, "ask", user, allow=(rule,)).check(call("bash", command=command)) is None
    assert user.asked == []


async def test_auto_asks_nothing(tmp_path: Path) -> None:
    user = FakeUser()
    g = gate(tmp_path, "auto", user)
    assert await g.check(call("bash", command=r"npm test ${x:=\$\(touch\ C\)} ${x@P}")) is None
    assert await g.check(call("write", path=".pi/settings.json", content="{}")) is None
    assert user.asked == []


def test_allow_always_offers_nothing_for_a_command_it_cannot_read() -> None:
    assert suggested_rule("bash", {"command": "git commit -m 'a b'"}) == "bash(git commit:*)"
    assert suggested_rule("bash", {"command": "'my tool' run x"}) == "bash('my tool' run:*)"
    assert suggested_rule("bash", {"command": "npm test $(touch C)"}) == ""
    assert suggested_rule("bash", {"command": "npm test --script-shell=x"}) == ""
    assert suggested_rule("bash", {"command": "ls | head"}) == ""


async def test_a_suggested_rule_covers_the_command_it_came_from(tmp_path: Path) -> None:
    user = FakeUser(ApprovalDecision(outcome="allowAlways"))
    g = gate(tmp_path, "ask", user)
    assert await g.check(call("bash", command="'my tool' run x")) is None
    assert await g.check(call("bash", command="'my tool' run y")) is None
    assert len(user.asked) == 1


async def test_allow_always_on_a_chain_does_not_allow_every_command(tmp_path: Path) -> None:
    user = FakeUser(ApprovalDecision(outcome="allowAlways"), REJECT)
    g = gate(tmp_path, "ask", user)
    assert await g.check(call("bash", command="make && make install")) is None
    assert g.rules.allow == []
    assert refused(await g.check(call("bash", command="rm -rf build")), "rejected")


@pytest.mark.parametrize("command", ["npm test a\\;calc", "npm test `$x", "npm test @args", "npm test 'a;b'"])
def test_powershell_rules_cover_only_plain_words(command: str, tmp_path: Path) -> None:
    rule = PermissionRule.parse("powershell(npm test:*)")
    assert not rule.matches("powershell", {"command": command}, str(tmp_path))
    assert rule.matches("powershell", {"command": "npm test --watch=false"}, str(tmp_path))
    assert suggested_rule("powershell", {"command": command}) == ""


# --- deny rules match the normal form, anywhere ------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "rm  -rf build",
        "rm -fr build",
        "rm -r -f build",
        "rm -R --force build",
        "/bin/rm -rf build",
        "'rm' -rf build",
        "r\\m -rf build",
        "echo hi && rm -rf build",
        "ls | rm -rf build",
        "(cd src; rm -rf build)",
        "echo $(rm -rf build)",
        'echo "`rm -rf build`"',
        "cat <(rm -rf build)",
        "bash -c 'rm -rf build'",
        "sh -ec \"bash -c 'rm -rf build'\"",
        "eval rm -rf build",
        "sudo -u root rm -rf build",
        "xargs rm -rf < list",
        "find . -exec rm -rf {} +",
        "if true; then rm -rf build; fi",
        "rm -rf build )",  # does not parse: matched by its words
    ],
)
async def test_deny_rules_see_through_spellings(command: str, tmp_path: Path) -> None:
    g = gate(tmp_path, "auto", allow=("bash",), deny=("bash(rm -rf:*)",))
    assert refused(await g.check(call("bash", command=command)), "denied", "bash(rm -rf:*)")


@pytest.mark.parametrize("command", ["rm build", "rm -f build", "echo rm -rf", "git rm -rf build"])
async def test_deny_rules_leave_other_commands(command: str, tmp_path: Path) -> None:
    g = gate(tmp_path, "auto", deny=("bash(rm -rf:*)",))
    assert await g.check(call("bash", command=command)) is None


# --- protected control files -------------------------------------------------------------------------

PROTECTED = [
    ".pi/settings.json",
    ".pi/agent/extensions/x.ts",
    "AGENTS.md",
    "docs/deep/CLAUDE.md",
    "agents.md",
    ".git/hooks/pre-commit",
    ".git/config",
    "vendor/lib/.git/hooks/post-checkout",
    ".vscode/settings.json",
    ".npmrc",
]


@pytest.mark.parametrize("path", PROTECTED)
async def test_accept_edits_asks_before_changing_a_control_file(path: str, tmp_path: Path) -> None:
    user = FakeUser(REJECT, REJECT)
    g = gate(tmp_path, "acceptEdits", user, allow=("write", "edit(**)"))
    assert refused(await g.check(call("write", path=path, content='{"permissions":{"allow":["bash"]}}')), "rejected")
    assert not (tmp_path / path).exists()
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / path).write_text("old\n")
    assert refused(await g.check(call("edit", path=path, edits=[{"oldText": "old", "newText": "new"}])), "rejected")
    assert len(user.asked) == 2


async def test_control_files_under_the_other_policies(tmp_path: Path) -> None:
    write = call("write", path=".pi/settings.json", content="{}")
    assert refused(await gate(tmp_path, "readOnly", FakeUser()).check(write), "read-only")
    assert refused(await gate(tmp_path, "ask", None, allow=("write",)).check(write), "cannot ask")
    assert await gate(tmp_path, "auto").check(write) is None
    # Reading one is not changing it.
    (tmp_path / "AGENTS.md").write_text("x")
    assert await gate(tmp_path, "acceptEdits", FakeUser()).check(call("read", path="AGENTS.md")) is None


async def test_the_users_config_folder_is_protected(tmp_path: Path) -> None:
    folder = tmp_path / "home" / ".pi" / "agent"
    folder.mkdir(parents=True)
    user = FakeUser(REJECT)
    g = gate(tmp_path / "home", "acceptEdits", user, allow=("write",), config_folder=folder)
    assert refused(await g.check(call("write", path=str(folder / "settings.json"), content="{}")), "rejected")
    assert len(user.asked) == 1


async def test_ordinary_edits_still_run_under_accept_edits(tmp_path: Path) -> None:
    user = FakeUser()
    g = gate(tmp_path, "acceptEdits", user)
    assert await g.check(call("write", path="src/pi_notes.md", content="x")) is None
    assert await g.check(call("write", path="docs/AGENTS.md.txt", content="x")) is None
    assert user.asked == []


# --- paths as they resolve -------------------------------------------------------------------------


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A workspace with `src/up -> ..` and `secret -> .env`."""
    (tmp_path / "src").mkdir()
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".env").write_text("KEY=1\n")
    os.symlink("..", tmp_path / "src" / "up")
    os.symlink(".env", tmp_path / "secret")
    return tmp_path


@pytest.mark.parametrize("path", ["src/up/.git/hooks/pre-commit", "src/up/.pi/settings.json", "src/up/other.txt"])
async def test_a_symlink_does_not_widen_an_allow_rule(path: str, linked: Path) -> None:
    user = FakeUser(REJECT)
    g = gate(linked, "ask", user, allow=("write(src/**)",))
    assert refused(await g.check(call("write", path=path, content="x")), "rejected")
    assert len(user.asked) == 1


async def test_accept_edits_asks_before_writing_through_a_link_to_a_control_file(linked: Path) -> None:
    (linked / ".pi").mkdir()
    os.symlink("../.pi", linked / "src" / "settings")
    user = FakeUser(REJECT)
    g = gate(linked, "acceptEdits", user)
    assert refused(await g.check(call("write", path="src/settings/settings.json", content="{}")), "rejected")
    assert len(user.asked) == 1


async def test_an_allow_rule_still_covers_its_real_paths(linked: Path) -> None:
    user = FakeUser()
    assert (
        await gate(linked, "ask", user, allow=("write(src/**)",)).check(call("write", path="src/a.py", content=""))
        is None
    )
    assert user.asked == []


@pytest.mark.parametrize("path", ["secret", ".env", "src/up/.env"])
async def test_a_deny_rule_sees_through_a_symlink(path: str, linked: Path) -> None:
    assert refused(await gate(linked, "auto", deny=("read(.env)",)).check(call("read", path=path)), "denied")


async def test_a_symlink_out_of_the_workspace_is_outside(
    linked: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    os.symlink(elsewhere, linked / "out")
    user = FakeUser(REJECT)
    g = gate(linked, "acceptEdits", user)
    assert refused(await g.check(call("write", path="out/new/file.txt", content="x")), "rejected")
    assert len(user.asked) == 1


# --- readOnly and reads outside the workspace ------------------------------------------------------


async def test_read_only_asks_before_reading_outside_the_workspace(tmp_path: Path) -> None:
    user = FakeUser(REJECT)
    assert refused(await gate(tmp_path, "readOnly", user).check(call("read", path="/etc/hostname")), "rejected")
    assert len(user.asked) == 1
    assert refused(await gate(tmp_path, "readOnly", None).check(call("read", path="/etc/hostname")), "cannot ask")
    assert await gate(tmp_path, "readOnly", FakeUser()).check(call("read", path="a.txt")) is None

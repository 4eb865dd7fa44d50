"""The approval gate in-process: rules, policies and decisions, with a fake approver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from msgspec import UNSET

from pi_rpc.agent.types import ApprovalRequest, BlockCall, ToolCallContext
from pi_rpc.session.approvals.gate import (
    ApprovalDecision,
    ApprovalGate,
    ApprovalPolicy,
    ApprovalRules,
    PermissionRule,
    RuleError,
    parse_rules,
    suggested_rule,
)
from pi_rpc.tools.editor_files import EditorRequestError, FileRouter
from pi_rpc.tools.registry import create_tool_definitions

from .approval_user import FakeUser, call

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def gate(
    tmp_path: Path,
    policy: ApprovalPolicy,
    user: FakeUser | None = None,
    *,
    allow: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    saved: list[str] | None = None,
    timeout: float | None = None,
) -> ApprovalGate:
    tools = create_tool_definitions(["read", "bash", "edit", "write"])
    result = ApprovalGate(
        lambda: str(tmp_path),
        tools.get,
        lambda: ToolCallContext(cwd=str(tmp_path)),
        policy=policy,
        rules=ApprovalRules(allow=parse_rules(allow), deny=parse_rules(deny)),
        timeout=timeout,
        save_rule=saved.append if saved is not None else None,
    )
    result.approver = user
    return result


# --- rules ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "command", "matches"),
    [
        ("bash(npm test:*)", "npm test", True),
        ("bash(npm test:*)", "npm test -- -k foo", True),
        ("bash(npm test:*)", "npm tester", False),
        ("bash(npm test:*)", "npm test && rm -rf ~", False),  # an allow rule never covers a chain
        ("bash(npm test:*)", "npm test; curl evil", False),
        ("bash(npm test:*)", "npm test > /etc/passwd", False),
        ("bash(npm test:*)", "npm test $(rm -rf ~)", False),
        ("bash(git status)", "git status", True),
        ("bash(git status)", "git status -s", False),
        ("bash", "anything at all", True),
        ("edit", "x", False),
    ],
)
def test_allow_rules_for_commands(rule: str, command: str, matches: bool, tmp_path: Path) -> None:
    assert PermissionRule.parse(rule).matches("bash", {"command": command}, str(tmp_path)) is matches


def test_a_deny_rule_matches_any_part_of_a_chain(tmp_path: Path) -> None:
    rule = PermissionRule.parse("bash(rm:*)")
    assert rule.matches("bash", {"command": "echo hi && rm -rf build"}, str(tmp_path), for_deny=True)
    assert not rule.matches("bash", {"command": "echo rm"}, str(tmp_path), for_deny=True)


@pytest.mark.parametrize(
    ("rule", "path", "matches"),
    [
        ("edit(src/**)", "src/a.py", True),
        ("edit(src/**)", "src/deep/er/a.py", True),
        ("edit(src/**)", "tests/a.py", False),
        ("edit(src/*.py)", "src/a.py", True),
        ("edit(src/*.py)", "src/deep/a.py", False),
        ("edit(**/*.md)", "README.md", True),
        ("edit(**/*.md)", "docs/x/README.md", True),
        ("edit(/etc/**)", "/etc/hosts", True),
    ],
)
def test_path_rules(rule: str, path: str, matches: bool, tmp_path: Path) -> None:
    assert PermissionRule.parse(rule).matches("edit", {"path": path}, str(tmp_path)) is matches


@pytest.mark.parametrize("text", ["", "bash(", "not a rule!", "(x)"])
def test_invalid_rules_are_refused(text: str) -> None:
    with pytest.raises(RuleError):
        PermissionRule.parse(text)


def test_suggested_rules() -> None:
    assert suggested_rule("bash", {"command": "npm test -- -x"}) == "bash(npm test:*)"
    assert suggested_rule("bash", {"command": "make"}) == "bash(make:*)"
    assert suggested_rule("bash", {"command": "make && make install"}) == ""  # "bash" would allow every command
    assert suggested_rule("edit", {"path": "a.py"}) == "edit"


# --- policies -------------------------------------------------------------------------------------


async def test_auto_runs_everything_without_asking(tmp_path: Path) -> None:
    user = FakeUser()
    g = gate(tmp_path, "auto", user)
    assert await g.check(call("bash", command="rm -rf build")) is None
    assert await g.check(call("read", path="/etc/hostname")) is None
    assert user.asked == []


async def test_read_only_refuses_mutating_tools_and_lets_reads_run(tmp_path: Path) -> None:
    g = gate(tmp_path, "readOnly", FakeUser())
    blocked = await g.check(call("write", path="a.txt", content="x"))
    assert isinstance(blocked, BlockCall) and "read-only" in (blocked.reason or "")
    assert await g.check(call("read", path="a.txt")) is None


async def test_ask_shows_the_write_diff_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    user = FakeUser(ApprovalDecision(outcome="allow"))
    g = gate(tmp_path, "ask", user)
    assert await g.check(call("write", path="a.txt", content="new\n")) is None
    preview = user.asked[0].preview
    assert preview.title == "Overwrite a.txt"
    assert (preview.old_text, preview.new_text) == ("old\n", "new\n")
    assert preview.patch == "--- a.txt\n+++ a.txt\n@@ -1,1 +1,1 @@\n-old\n+new\n"
    assert (tmp_path / "a.txt").read_text() == "old\n"


async def test_an_edit_that_would_fail_is_not_asked_about(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    user = FakeUser()
    g = gate(tmp_path, "ask", user)
    assert await g.check(call("edit", path="a.txt", edits=[{"oldText": "absent", "newText": "x"}])) is None
    assert user.asked == []  # the edit itself reports "Could not find ..." without changing anything


async def test_deny_wins_over_allow_and_policy(tmp_path: Path) -> None:
    g = gate(tmp_path, "auto", allow=("bash",), deny=("bash(rm:*)",))
    blocked = await g.check(call("bash", command="rm -rf /"))
    assert isinstance(blocked, BlockCall) and "bash(rm:*)" in (blocked.reason or "")


async def test_allow_rules_skip_the_question(tmp_path: Path) -> None:
    user = FakeUser()
    g = gate(tmp_path, "ask", user, allow=("bash(make:*)",))
    assert await g.check(call("bash", command="make test")) is None
    assert user.asked == []


async def test_allow_always_adds_the_rule_and_saves_it_when_asked(tmp_path: Path) -> None:
    saved: list[str] = []
    user = FakeUser(ApprovalDecision(outcome="allowAlways", save=True))
    g = gate(tmp_path, "ask", user, saved=saved)
    assert await g.check(call("bash", command="npm test")) is None
    assert await g.check(call("bash", command="npm test -- -x")) is None
    assert len(user.asked) == 1 and saved == ["bash(npm test:*)"]


async def test_without_an_approver_a_question_becomes_a_clear_refusal(tmp_path: Path) -> None:
    blocked = await gate(tmp_path, "ask", None).check(call("bash", command="ls"))
    assert isinstance(blocked, BlockCall) and "cannot ask" in (blocked.reason or "")


async def test_an_unanswered_request_times_out_as_a_rejection(tmp_path: Path) -> None:
    class NeverAnswers:
        async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
            await anyio.sleep_forever()
            raise AssertionError

    g = gate(tmp_path, "ask", timeout=0.01)
    g.approver = NeverAnswers()
    blocked = await g.check(call("bash", command="ls"))
    assert isinstance(blocked, BlockCall) and "no answer" in (blocked.reason or "")
    assert g.pending == {}


async def test_a_preview_that_breaks_unexpectedly_still_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = FakeUser(ApprovalDecision(outcome="reject"))
    g = gate(tmp_path, "ask", user)
    definition = g._definitions("write")
    assert definition is not None

    async def broken(params: Any, call: ToolCallContext) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(definition, "preview", broken)
    blocked = await g.check(call("write", path="a.txt", content="x"))
    assert isinstance(blocked, BlockCall)
    assert user.asked[0].title == "write a.txt" and user.asked[0].preview.patch is UNSET


async def test_an_editor_read_failing_during_the_preview_is_one_log_line_and_the_question_still_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class FailingEditor:
        async def read_text_file(self, path: str) -> str:
            raise EditorRequestError("the editor did not answer fs/read_text_file within 60 s")

        async def write_text_file(self, path: str, content: str) -> None:
            raise AssertionError("nothing is written before the answer")

    (tmp_path / "a.txt").write_text("hello\n")
    router = FileRouter()
    router.editor = FailingEditor()
    tools = create_tool_definitions(["edit"], router)
    user = FakeUser(ApprovalDecision(outcome="reject"))
    g = ApprovalGate(lambda: str(tmp_path), tools.get, lambda: ToolCallContext(cwd=str(tmp_path)), policy="ask")
    g.approver = user
    with caplog.at_level("DEBUG", logger="pi_rpc.session.approvals.gate"):
        blocked = await g.check(call("edit", path="a.txt", edits=[{"oldText": "hello", "newText": "bye"}]))
    assert isinstance(blocked, BlockCall)
    [asked] = user.asked
    assert asked.preview.patch is UNSET  # asked without a diff
    [record] = [r for r in caplog.records if r.name == "pi_rpc.session.approvals.gate"]
    assert record.levelname == "WARNING" and record.exc_info is None
    assert record.getMessage() == "preview of edit has no diff: the editor did not answer fs/read_text_file within 60 s"

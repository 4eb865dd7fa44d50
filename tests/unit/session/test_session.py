"""The session core in-process: runs, queues, abort, new/load session, stats, model and tools, and
the approval gate's wiring, driven with the scripted model and real tools (no daemon, no pipes)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from pi_rpc.agent.agent import BUSY_TEXT, AgentBusyError
from pi_rpc.agent.types import (
    AgentEnd,
    AgentEvent,
    ApprovalRequest,
    MessageUpdate,
    ToolApprovalEnd,
    ToolApprovalRequest,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.types import AssistantMessage, TextDeltaEvent, ToolResultMessage, UserMessage, text_of
from pi_rpc.session.approvals.gate import ApprovalDecision
from pi_rpc.session.configuration.config import ApprovalConfig
from pi_rpc.session.session import (
    ModelNotFoundError,
    NoModelError,
    SessionNotFoundError,
)
from pi_rpc.session.types import PromptOutcome

from .helpers import FOREVER, Events, FakeUser, open_session, reply, script, session_config, tool_call

pytestmark = pytest.mark.anyio

WRITE_THEN_DONE = reply("^write", [tool_call("write", path="notes.txt", content="hello\n")], [{"text": "done"}])
HELLO = reply("^hello", [{"text": "Hello there."}])
STREAM = reply("^stream", FOREVER)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def lines_of(path: str) -> list[str]:
    return Path(path).read_text().splitlines()


def results(events: Events) -> list[ToolExecutionEnd]:
    return [e for e in events.all if isinstance(e, ToolExecutionEnd)]


async def test_a_run_uses_real_tools_and_resolves_with_its_outcome(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(WRITE_THEN_DONE))) as (session, events):
        outcome = await session.prompt("write notes")
        assert outcome.stop_reason == "stop" and not session.runs.is_streaming
    assert (workspace / "notes.txt").read_text() == "hello\n"
    types = events.types()
    assert types[0] == "agent_start" and types[-2:] == ["agent_end", "agent_settled"]
    assert types.index("tool_execution_start") < types.index("tool_execution_end") < types.index("agent_end")
    assert [r.is_error for r in results(events)] == [False]
    roles = [type(m) for m in session.messages if isinstance(m, UserMessage | AssistantMessage | ToolResultMessage)]
    assert roles == [UserMessage, AssistantMessage, ToolResultMessage, AssistantMessage]
    assert isinstance(last := session.messages[-1], AssistantMessage) and text_of(last.content) == "done"


async def test_a_second_prompt_needs_a_streaming_behaviour_and_is_queued_with_one(workspace: Path) -> None:
    """spec 15.13: refused while busy without streamingBehavior; steer/followUp queue."""
    async with open_session(session_config(workspace, script(STREAM))) as (session, events):
        started = session.runs.start("stream forever")
        assert session.runs.is_streaming and session.state().is_streaming
        await events.wait_for_type("message_update")
        with pytest.raises(AgentBusyError, match="streamingBehavior") as refused:
            await session.prompt("second")
        assert str(refused.value) == BUSY_TEXT
        assert await session.prompt("later", streaming_behavior="followUp") == PromptOutcome(queued="followUp")
        assert await session.prompt("steer me", streaming_behavior="steer") == PromptOutcome(queued="steer")
        assert session.state().pending_message_count == 2
        assert "queue_update" in events.types()
        assert session.clear_queue() == (["steer me"], ["later"])
        await session.abort()
        assert started.outcome is not None and started.outcome.stop_reason == "aborted"
    assert events.types().count("agent_end") == 1


async def test_abort_during_a_tool_gives_the_call_a_result_and_settles(workspace: Path) -> None:
    """spec 15.14: the running bash is aborted, its call gets an error result, one agent_end."""
    sleepy = reply("^sleep", [tool_call("bash", command="sleep 60")], [{"text": "never asked"}])
    async with open_session(session_config(workspace, script(sleepy))) as (session, events):
        session.runs.start("sleep a while")
        await events.wait_for(lambda e: isinstance(e, ToolExecutionStart))
        await session.abort()
        assert not session.runs.is_streaming
        assert [r.is_error for r in results(events)] == [True]
        assert events.types().count("agent_end") == 1 and events.types()[-1] == "agent_settled"
        last = session.messages[-1]
        assert isinstance(last, ToolResultMessage | AssistantMessage)
        await session.abort()  # a second abort while idle returns at once


async def test_an_abort_right_after_the_start_is_not_lost(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(STREAM))) as (session, events):
        started = session.runs.start("stream forever")
        await session.abort()
        assert started.outcome is not None and started.outcome.stop_reason == "aborted"
        assert not any(
            isinstance(e, MessageUpdate) and isinstance(e.assistant_message_event, TextDeltaEvent) for e in events.all
        )


async def test_a_failing_model_ends_the_run_with_an_error_outcome(workspace: Path) -> None:
    broken = reply("^break", [{"text": "par"}, {"error": "the stream broke"}])
    async with open_session(session_config(workspace, script(broken))) as (session, _):
        outcome = await session.prompt("break it")
    assert outcome.stop_reason == "error" and outcome.error_message == "the stream broke"


async def test_new_session_forgets_the_transcript_and_keeps_tools_and_model(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(HELLO, reply("^hello", [{"text": "Again."}])))) as (
        session,
        _,
    ):
        first_id = session.history.session_id
        await session.prompt("hello")
        assert session.history.session_file is not None
        session.set_active_tools(["read"])
        new_id = await session.new_session()
        state = session.state()
        assert new_id != first_id and state.session_id == new_id
        assert state.message_count == 0 and session.messages == [] and state.session_file is None
        assert state.active_tools == ["read"] and state.model == FAUX_MODEL
        assert (await session.prompt("hello again")).stop_reason == "stop"


async def test_new_session_during_a_run_aborts_it(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(STREAM))) as (session, events):
        started = session.runs.start("stream forever")
        await events.wait_for_type("message_update")
        await session.new_session()
        assert not session.runs.is_streaming and session.messages == []
        assert started.outcome is not None and started.outcome.stop_reason == "aborted"


async def test_sessions_persist_and_a_new_session_object_resumes_one(workspace: Path) -> None:
    config = session_config(workspace, script(HELLO, reply("^and again", [{"text": "Yes."}])))
    async with open_session(config) as (first, _):
        await first.prompt("hello")
        path = first.history.session_file
        assert path is not None
        stored = lines_of(path)
        # A header, the model and the thinking level it started on (Pi's settings entries), then
        # one line a message.
        kinds = [json.loads(line)["type"] for line in stored]
        assert kinds[:3] == ["session", "model_change", "thinking_level_change"]
        assert len(kinds) == 3 + first.state().message_count
        session_id, messages = first.history.session_id, list(first.messages)
    async with open_session(config) as (second, _):
        listed = second.history.list_sessions()
        assert [s.session_id for s in listed] == [session_id] and listed[0].first_message == "hello"
        assert await second.load_session(session_id) == len(messages)
        assert second.history.session_id == session_id and second.messages == messages
        await second.prompt("and again")
        assert second.history.session_file == path and len(lines_of(path)) > len(stored)
        with pytest.raises(SessionNotFoundError, match="^Session not found: nope$"):
            await second.load_session("nope")


async def test_without_persistence_nothing_reaches_the_disk(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(HELLO), persist=False)) as (session, _):
        await session.prompt("hello")
        assert session.history.session_file is None and session.history.list_sessions() == []
    assert not (workspace.parent / "sessions").exists()


async def test_stats_count_the_transcript(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(WRITE_THEN_DONE))) as (session, _):
        await session.prompt("write notes")
        stats = session.stats()
    assert (stats.user_messages, stats.assistant_messages, stats.tool_calls, stats.tool_results) == (1, 2, 1, 1)
    assert stats.total_messages == len(session.messages) and stats.session_id == session.history.session_id
    assert stats.tokens.total > 0 and stats.tokens.total == stats.tokens.input + stats.tokens.output


async def test_model_set_and_thinking_levels(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(), thinking_level="high")) as (session, _):
        assert session.current_model.available_models() == [FAUX_MODEL]
        with pytest.raises(ModelNotFoundError, match="^Model not found: nope/x"):
            session.current_model.set_model("nope", "x")
        assert session.current_model.set_model("faux", "scripted") == FAUX_MODEL
        # The scripted model has no reasoning: every level clamps to "off".
        assert session.current_model.thinking_level == "off" and session.current_model.thinking_levels() == ["off"]
        assert session.current_model.set_thinking_level("high") == "off"


async def test_without_a_model_a_prompt_fails_and_a_thinking_level_waits(workspace: Path) -> None:
    async with open_session(session_config(workspace, None)) as (session, _):
        with pytest.raises(NoModelError):
            await session.prompt("hello")
        assert not session.runs.is_streaming and session.state().model is None and not session.current_model.scripted
        assert (
            session.current_model.thinking_levels() == ["off"]
            and session.current_model.set_thinking_level("high") == "high"
        )
        assert session.current_model.available_models() == []


async def test_only_registered_tools_activate_and_an_inactive_one_cannot_run(workspace: Path) -> None:
    """spec 5.5: unknown names are ignored; the next turn sees the new set."""
    async with open_session(session_config(workspace, script(WRITE_THEN_DONE))) as (session, events):
        assert session.set_active_tools(["read", "grep", "nope", "read"]) == ["read", "grep"]
        assert {t.name for t in session.tool_infos() if t.active} == {"read", "grep"}
        assert {t.name for t in session.tool_infos()} == set(session_config(workspace, None).tools.definitions)
        await session.prompt("write notes")
    assert not (workspace / "notes.txt").exists()
    assert [r.is_error for r in results(events)] == [True]


# --- the approval gate's wiring -------------------------------------------------------------------


async def test_a_client_that_can_ask_is_asked_and_its_answer_decides(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(WRITE_THEN_DONE))) as (session, events):
        user = FakeUser(ApprovalDecision(outcome="allow"))
        session.set_approver(user)
        assert session.state().approval_policy == "ask"  # nobody configured one: a client that asks gets "ask"
        await session.prompt("write notes")
    assert [r.tool_name for r in user.asked] == ["write"] and user.asked[0].cwd == str(workspace)
    assert (workspace / "notes.txt").read_text() == "hello\n"
    asked = [e for e in events.all if isinstance(e, ToolApprovalRequest | ToolApprovalEnd)]
    assert [type(e) for e in asked] == [ToolApprovalRequest, ToolApprovalEnd]
    end = asked[1]
    assert isinstance(end, ToolApprovalEnd) and end.outcome == "allow"


async def test_a_rejection_leaves_the_file_and_the_model_reads_why(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(WRITE_THEN_DONE))) as (session, events):
        session.set_approver(FakeUser(ApprovalDecision(outcome="reject", reason="not now")))
        await session.prompt("write notes")
    assert not (workspace / "notes.txt").exists()
    (result,) = results(events)
    assert result.is_error and "The user rejected this write call: not now" in str(result.result)


async def test_read_only_blocks_without_asking_and_a_policy_change_applies_to_the_next_call(workspace: Path) -> None:
    twice = reply(
        "^write",
        [tool_call("write", path="notes.txt", content="hello\n")],
        [tool_call("write", path="notes.txt", content="again\n")],
        [{"text": "done"}],
    )
    async with open_session(session_config(workspace, script(twice))) as (session, events):
        user = FakeUser(ApprovalDecision(outcome="allow"))
        session.set_approver(user)
        assert session.set_approval_policy("readOnly") == "readOnly"

        def relax_after_the_first_call(event: AgentEvent) -> None:
            if isinstance(event, ToolExecutionEnd):
                session.set_approval_policy("auto")

        session.subscribe(relax_after_the_first_call)
        await session.prompt("write notes")
    assert user.asked == []
    assert [r.is_error for r in results(events)] == [True, False]
    assert (workspace / "notes.txt").read_text() == "again\n"


async def test_a_client_that_cannot_ask_gets_the_configured_default(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(WRITE_THEN_DONE))) as (session, _):
        session.set_approver(FakeUser(ApprovalDecision(outcome="allow")))
        session.set_approver(None)
        assert session.approvals.policy == "auto"
        await session.prompt("write notes")
    assert (workspace / "notes.txt").exists()
    async with open_session(
        session_config(workspace, script(), approvals=ApprovalConfig(policy="readOnly", configured=True))
    ) as (session, _):
        session.set_approver(FakeUser(ApprovalDecision(outcome="allow")))
        assert session.approvals.policy == "readOnly"  # the user's choice wins over the client's ability


async def test_abort_while_waiting_for_approval_ends_the_run_once(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(WRITE_THEN_DONE))) as (session, events):
        answered = anyio.Event()

        async def never(request: ApprovalRequest) -> ApprovalDecision:
            await answered.wait()
            return ApprovalDecision(outcome="allow")

        session.set_approver(never)
        started = session.runs.start("write notes")
        await events.wait_for(lambda e: isinstance(e, ToolApprovalRequest))
        assert [r.tool_name for r in session.approvals.pending.values()] == ["write"]
        assert session.state().pending_approvals == [r.tool_call_id for r in session.approvals.pending.values()]
        await session.abort()
        assert started.outcome is not None and started.outcome.stop_reason == "aborted"
        assert session.approvals.pending == {} and session.state().pending_approvals == []
    assert not (workspace / "notes.txt").exists()
    assert len([e for e in events.all if isinstance(e, AgentEnd)]) == 1


async def test_loading_a_session_that_holds_no_message_adds_nothing_to_it(workspace: Path) -> None:
    """An editor's session made and never prompted (ACP `session/new` writes its file at once)
    keeps its two settings entries however often it is loaded."""
    config = session_config(workspace, script(HELLO))
    async with open_session(config) as (first, _):
        first.history.save()
        path, session_id = first.history.session_file, first.history.session_id
    assert path is not None
    for _ in range(2):
        async with open_session(config) as (again, _):
            assert await again.load_session(session_id) == 0
    assert [json.loads(line)["type"] for line in lines_of(path)] == ["session", "model_change", "thinking_level_change"]

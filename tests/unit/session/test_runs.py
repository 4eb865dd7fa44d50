"""The run API in-process (pi_rpc/session/runs.py): a prompt's Run handle, started or queued, its
outcome after an abort or a failure, and the one busy flag and error as a client sees them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_rpc.agent.agent import AgentBusyError
from pi_rpc.agent.types import (
    AgentEnd,
    AgentEvent,
    AgentSettled,
    CompactionEnd,
    CompactionStart,
    MessageEnd,
    MessageStart,
)
from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AssistantMessage, Context, Model, text_of
from pi_rpc.session.compaction.planning import CompactionSettings
from pi_rpc.session.session import ModelChoice
from pi_rpc.session.types import PromptOutcome

from .helpers import FOREVER, open_session, reply, script, session_config

pytestmark = pytest.mark.anyio

# What clients read, byte for byte: the JSON-RPC -32002 message and pi mode's `error` (Pi's text).
PI_BUSY_TEXT = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_a_started_run_settles_with_its_outcome_and_a_queued_one_at_once(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(reply("^stream", FOREVER)))) as (session, events):
        started = session.runs.start("stream forever")
        assert started.queued is None and started.outcome is None and session.runs.is_streaming
        await events.wait_for_type("message_update")
        for behaviour in ("steer", "followUp"):
            queued = session.runs.start("more", streaming_behavior=behaviour)
            assert queued.queued == behaviour
            assert queued.outcome == PromptOutcome(queued=behaviour)
            assert await queued.wait() == PromptOutcome(queued=behaviour)
        assert started.outcome is None  # queueing leaves the running run alone
        await session.abort()
        assert started.outcome is not None and started.outcome.stop_reason == "aborted"
        assert await started.wait() is started.outcome
    assert events.types().count("agent_end") == 1 and events.types()[-1] == "agent_settled"


async def test_an_abort_settles_the_run_as_aborted_once(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(reply("^stream", FOREVER)))) as (session, events):
        run = session.runs.start("stream forever")
        await events.wait_for_type("message_update")
        await session.abort()
        assert not session.runs.is_streaming
        outcome = run.outcome
        assert outcome is not None and outcome.stop_reason == "aborted"
        await session.abort()  # idle: returns at once, the outcome stays
        assert run.outcome is outcome
    assert [t for t in events.types() if t in ("agent_end", "agent_settled")] == ["agent_end", "agent_settled"]


async def test_the_busy_error_is_pis_text_and_lasts_until_agent_settled(workspace: Path) -> None:
    """The one busy flag covers the run as a client sees it, the compactions before and after it
    included."""
    seen: list[tuple[str, bool, str]] = []
    config = session_config(
        workspace,
        script(reply("^first", [{"text": "one"}]), reply("^second", [{"text": "two"}])),
        compaction=CompactionSettings(reserve_tokens=FAUX_MODEL.context_window, keep_recent_tokens=1),
    )
    async with open_session(config) as (session, events):
        session.toggles.compaction = False
        await session.prompt("first")
        session.toggles.compaction = True

        def probe(event: AgentEvent) -> None:
            if isinstance(event, AgentEnd | CompactionStart | AgentSettled):
                busy = session.runs.is_streaming
                try:
                    session.runs.start("meanwhile")
                    refused = ""
                except AgentBusyError as exc:
                    refused = str(exc)
                    if isinstance(event, AgentSettled):
                        raise AssertionError("still busy at agent_settled") from exc
                else:
                    unsubscribe()  # the run it started is the probe's own: abort it, look no further
                    session.agent.abort()
                seen.append((type(event).__name__, busy, refused))

        unsubscribe = session.subscribe(probe)
        await session.prompt("second")
        await session.abort()
    assert seen == [
        ("CompactionStart", True, PI_BUSY_TEXT),  # before the prompt is sent: the first reply is near the window
        ("AgentEnd", True, PI_BUSY_TEXT),
        ("CompactionStart", True, PI_BUSY_TEXT),
        ("AgentSettled", False, ""),
    ]


def _choice(stream_fn: object) -> ModelChoice:
    return ModelChoice(model=FAUX_MODEL, stream_fn=stream_fn, api_key="sk-secret-key-123")  # type: ignore[arg-type]


@pytest.mark.parametrize("midway", [False, True], ids=["before-any-event", "mid-message"])
async def test_a_stream_function_that_raises_ends_the_run_with_one_error_message(workspace: Path, midway: bool) -> None:
    """spec 15.14/15.15: one catch at the run boundary: one error message, one agent_end, the
    outcome says error, and the request's key shows nowhere."""

    async def breaks(
        model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        if midway:
            builder.text_delta(0, "half an answer")
        raise RuntimeError(f"provider bug near {options.api_key}")

    async with open_session(session_config(workspace, None, model=_choice(breaks))) as (session, events):
        outcome = await session.prompt("hello")
    assert outcome.stop_reason == "error"
    assert outcome.error_message == "RuntimeError: provider bug near [redacted]"
    ends = [e.message for e in events.all if isinstance(e, MessageEnd) and isinstance(e.message, AssistantMessage)]
    assert [(m.stop_reason, m.error_message) for m in ends] == [("error", outcome.error_message)]
    assert text_of(ends[0].content) == ("half an answer" if midway else "")  # what streamed stays
    starts = [e for e in events.all if isinstance(e, MessageStart)]
    assert len(starts) == len([e for e in events.all if isinstance(e, MessageEnd)])  # every message ended
    assert events.types()[-3:] == ["turn_end", "agent_end", "agent_settled"]
    assert events.types().count("agent_end") == 1
    assert session.messages[-1] is ends[0] and not session.runs.is_streaming


async def test_a_compaction_that_breaks_after_a_run_is_reported_and_the_session_serves_on(workspace: Path) -> None:
    """The summary request is a run of its own: a stream function that raises there (a provider
    bug) fails the compaction, told in compaction_end, and never ends the session's tasks."""
    requests = 0

    async def answers_then_breaks(
        model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        nonlocal requests
        requests += 1
        if requests == 2:  # the summary asked for after the first run
            raise RuntimeError(f"summary bug near {options.api_key}")
        builder.text_delta(0, f"answer {requests}")
        return builder.finish()

    config = session_config(
        workspace,
        None,
        model=_choice(answers_then_breaks),
        compaction=CompactionSettings(reserve_tokens=FAUX_MODEL.context_window, keep_recent_tokens=1),
    )
    async with open_session(config) as (session, events):
        first = await session.prompt("first")
        second = await session.prompt("second")  # the session still serves
    assert (first.stop_reason, second.stop_reason) == ("stop", "stop")
    [failed, *_] = [e for e in events.all if isinstance(e, CompactionEnd)]
    assert failed.error_message == "Auto-compaction failed: RuntimeError: summary bug near [redacted]"  # Pi's words
    assert not session.runs.is_streaming and not session.compaction.running


async def test_a_follow_up_sent_as_the_answer_ends_gets_the_scripted_reply_it_matches(workspace: Path) -> None:
    """An editor that sends its next prompt while the run is still settling queues it as a
    follow-up; the scripted model answers it as the prompt it is (it said "no reply" before)."""
    config = session_config(
        workspace,
        script(
            reply("^hello$", [{"text": "Hello there.", "chunk": 4, "delayMs": 5}]),
            reply("^tour$", [{"text": "The tour."}]),
        ),
    )
    async with open_session(config) as (session, _events):
        run = session.runs.start("hello")
        session.runs.start("tour", streaming_behavior="followUp")
        await run.wait()
        said = [text_of(m.content) for m in session.messages if isinstance(m, AssistantMessage)]
    assert said == ["Hello there.", "The tour."]

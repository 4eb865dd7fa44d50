"""Compaction as a session does it, against Pi 0.73.1's behaviour (spec 16): the
summary is Pi's `compactionSummary` message, compaction is checked before a prompt too, the
context's size is unknown right after a compaction, a failed recovery is reported, the summary
request runs at the session's thinking level, and the file lists carry over (in-process)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from msgspec import UNSET

from pi_rpc.agent.types import (
    CompactionEnd,
    CompactionStart,
    EntryAppended,
    MessageStart,
    SummarizationRetryAttemptStart,
    SummarizationRetryFinished,
    SummarizationRetryScheduled,
)
from pi_rpc.ai.providers.faux import FAUX_MODEL, FauxProvider
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    AssistantMessage,
    CompactionSummaryMessage,
    Context,
    Model,
    SystemMessage,
    UserMessage,
    text_of,
)
from pi_rpc.session.compaction.planning import CompactionError, CompactionSettings, estimated_tokens
from pi_rpc.session.compaction.session_compaction import ALREADY_COMPACTED, NOTHING_TO_COMPACT
from pi_rpc.session.configuration.config import ModelStart, RetryConfig
from pi_rpc.session.runs import OVERFLOW_RECOVERY_FAILED
from pi_rpc.session.session import AgentSession, ModelChoice
from pi_rpc.session.storage.store import load_session

from .compaction_sizes import FILLER, NEAR, SUMMARY, used
from .helpers import FOREVER, open_session, reply, script, session_config, tool_call

pytestmark = pytest.mark.anyio

PI_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
OVERFLOW = "prompt is too long: 250000 tokens > 200000 maximum"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


class Recorder:
    """The scripted model, remembering every request it was sent."""

    def __init__(self, replies: list[dict[str, Any]], model: Model = FAUX_MODEL) -> None:
        self.provider = FauxProvider(script(*replies))
        self.model = model
        self.requests: list[tuple[Context, StreamOptions]] = []
        self._asked = anyio.Event()

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        self.requests.append((context, options))
        self._asked.set()
        return await self.provider.stream(model, context, options, builder)

    async def wait_for_requests(self, count: int) -> None:
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            while len(self.requests) < count:
                self._asked = anyio.Event()
                await self._asked.wait()

    def choice(self) -> ModelChoice:
        return ModelChoice(model=self.model, stream_fn=self.stream, scripted=True)

    def prompts(self) -> list[str]:
        """The last user text of each request (a summary request's is its whole prompt)."""
        return [
            text_of(next(m for m in reversed(c.messages) if isinstance(m, UserMessage)).content)
            for c, _ in self.requests
        ]


def usage_tokens(session: AgentSession) -> int | None:
    usage = session.stats().context_usage
    assert usage is not UNSET
    return usage.tokens


def of_type(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def test_the_compacted_transcript_starts_with_pis_summary_message(workspace: Path) -> None:
    model = Recorder(
        [SUMMARY, reply("^one", [{"text": "r1"}]), reply("^two", [{"text": "r2"}]), reply("^three", [{"text": "r3"}])]
    )
    config = session_config(workspace, None, model=model.choice(), compaction=NEAR)
    async with open_session(config) as (session, _):
        session.toggles.compaction = False
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        result = await session.compaction.compact()
        # Pi 1.6.0's compacted context: the system message the compaction kept (the prompt's
        # sections and the tools), then the summary.
        system, first = session.messages[:2]
        assert isinstance(system, SystemMessage) and system.sections and system.tools_added
        assert first == CompactionSummaryMessage(
            summary="THE SUMMARY", tokens_before=result.tokens_before, timestamp=first.timestamp
        )
        wire = json.loads(msgspec.json.encode(first))
        assert wire == {
            "role": "compactionSummary",
            "summary": "THE SUMMARY",
            "tokensBefore": result.tokens_before,
            "timestamp": first.timestamp,
        }
        # Pi counts only the user's own messages; the state counts every message, the summary too.
        assert session.stats().user_messages == 1 and session.state().message_count == len(session.messages) == 4
        assert session.history.fork_points()[0][1].startswith("one ")
        await session.prompt(f"three {FILLER}")
    sent, _ = model.requests[-1]
    # The request declares nothing again: the compaction's system message said it all.
    assert [type(m).__name__ for m in sent.messages].count("SystemMessage") == 1
    assert text_of(sent.messages[1].content) == PI_PREFIX + "THE SUMMARY\n</summary>"


async def test_the_context_size_is_unknown_after_a_compaction_until_the_next_reply(workspace: Path) -> None:
    model = Recorder(
        [
            SUMMARY,
            reply("^one", [used(400), {"text": "r1"}]),
            reply("^two", [used(600), {"text": "r2"}]),
            reply("^three", [used(300), {"text": "r3"}]),
        ]
    )
    config = session_config(workspace, None, model=model.choice(), compaction=NEAR)
    async with open_session(config) as (session, _):
        session.toggles.compaction = False
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        assert usage_tokens(session) == 601
        await session.compaction.compact()
        usage = session.stats().context_usage
        assert usage is not UNSET and (usage.tokens, usage.percent) == (None, None)
        assert usage.context_window == FAUX_MODEL.context_window
        assert json.loads(msgspec.json.encode(usage))["tokens"] is None
        await session.prompt(f"three {FILLER}")
        assert usage_tokens(session) == 301


async def test_a_loaded_session_near_the_window_is_compacted_before_the_next_prompt(workspace: Path) -> None:
    first = Recorder([reply("^one", [used(200), {"text": "r1"}]), reply("^two", [used(1500), {"text": "r2"}])])
    async with open_session(session_config(workspace, None, model=first.choice())) as (session, _):
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        stored = session.history.session_file
    assert stored is not None
    model = Recorder([SUMMARY, reply("^three", [{"text": "r3"}])])
    config = session_config(workspace, None, model=model.choice(), compaction=NEAR, resume_from=Path(stored))
    async with open_session(config) as (session, events):
        await session.prompt("three")
        kinds = [type(e).__name__ for e in events.all if isinstance(e, CompactionStart | CompactionEnd | MessageStart)]
    # Compacted first, then the prompt was sent, to a context starting from the summary.
    assert kinds[:3] == ["CompactionStart", "CompactionEnd", "MessageStart"]
    assert of_type(events.all, CompactionStart)[0].reason == "threshold"
    assert model.prompts()[0].startswith("<conversation>") and model.prompts()[1] == "three"
    assert text_of(model.requests[1][0].messages[1].content).startswith(PI_PREFIX)


async def test_an_aborted_run_near_the_window_is_compacted_before_the_next_prompt(workspace: Path) -> None:
    model = Recorder(
        [SUMMARY, reply("^one", [used(500), {"text": "r1"}]), reply("^two", FOREVER), reply("^three", [{"text": "r3"}])]
    )
    config = session_config(workspace, None, model=model.choice(), compaction=NEAR)
    async with open_session(config) as (session, events):
        await session.prompt(f"one {FILLER}")
        started = session.runs.start("two " + "x" * 3000)  # with the first reply's 500: past 1000
        await events.wait_for_type("message_update")
        await session.abort()
        assert (await started.wait()).stop_reason == "aborted" and not of_type(events.all, CompactionStart)
        await session.prompt("three")
    [start] = of_type(events.all, CompactionStart)
    assert start.reason == "threshold" and model.prompts()[-2].startswith("<conversation>")


async def test_switching_to_a_model_with_a_smaller_window_compacts_before_the_next_prompt(workspace: Path) -> None:
    model = Recorder(
        [
            SUMMARY,
            reply("^one", [used(2000), {"text": "r1"}]),
            reply("^two", [used(3000), {"text": "r2"}]),
            reply("^three", [{"text": "r3"}]),
        ]
    )
    small = msgspec.structs.replace(FAUX_MODEL, id="small", context_window=4000)
    small_choice = ModelChoice(model=small, stream_fn=model.stream, scripted=True)

    def resolve(provider: str, model_id: str) -> ModelChoice | None:
        return small_choice if model_id == "small" else None

    settings = CompactionSettings(reserve_tokens=2000, keep_recent_tokens=10)
    config = session_config(
        workspace, None, models=ModelStart(choice=model.choice(), resolve=resolve), compaction=settings
    )
    async with open_session(config) as (session, events):
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        assert not of_type(events.all, CompactionStart)  # 3000 of 200000: far from the window
        session.current_model.set_model("faux", "small")
        await session.prompt(f"three {FILLER}")
    [start] = of_type(events.all, CompactionStart)
    assert start.reason == "threshold" and model.prompts()[2].startswith("<conversation>")
    assert model.prompts()[3].startswith("three")


async def test_an_overflow_after_the_compacted_retry_is_reported_as_the_recovery_failing(workspace: Path) -> None:
    # The retry sends the compacted context, which ends with the summary (the refused prompt is
    # summarised too: the next test).
    refused = {"match": "^(two|The conversation history before)", "repeat": True, "turns": [[{"error": OVERFLOW}]]}
    model = Recorder([SUMMARY, SUMMARY, reply("^one", [{"text": "r1"}]), refused])
    config = session_config(workspace, None, model=model.choice(), compaction=CompactionSettings(keep_recent_tokens=10))
    async with open_session(config) as (session, events):
        await session.prompt(f"one {FILLER}")
        outcome = await session.prompt(f"two {FILLER}")
    assert outcome.stop_reason == "error"
    ends = of_type(events.all, CompactionEnd)
    assert [(e.reason, e.result is not UNSET, e.will_retry, e.error_message) for e in ends] == [
        ("overflow", True, True, UNSET),  # compacted, then retried
        ("overflow", False, False, OVERFLOW_RECOVERY_FAILED),  # the retry overflowed too
    ]
    assert not ends[1].aborted and len(of_type(events.all, CompactionStart)) == 1


async def test_an_overflowing_prompt_is_summarised_as_a_split_turn_and_the_retry_sends_only_summaries(
    workspace: Path,
) -> None:
    """Pi 1.6.0's recovery: when only the refused attempt would follow the last message kept, the
    cut passes the prompt too, whose turn is summarised on its own (a split turn), so the retry
    does not send what overflowed again; the compaction keeps from the omitted attempt's entry.
    Before, pi-rpc kept the prompt and the retry was refused again."""
    refused = {"match": "^two", "turns": [[{"error": OVERFLOW}]]}
    prefix = reply("start of a turn that is still going on", [{"text": "THE TURN'S START"}])
    answer = reply("^The conversation history before", [{"text": "r2"}])
    model = Recorder([prefix, SUMMARY, reply("^one", [{"text": "r1"}]), refused, answer])
    config = session_config(workspace, None, model=model.choice(), compaction=CompactionSettings(keep_recent_tokens=10))
    async with open_session(config) as (session, events):
        await session.prompt(f"one {FILLER}")
        outcome = await session.prompt(f"two {FILLER}")
        path = session.history.session_file
    assert outcome.stop_reason == "stop"
    [end] = of_type(events.all, CompactionEnd)
    assert end.result is not UNSET and end.will_retry
    assert "THE SUMMARY" in end.result.summary and "THE TURN'S START" in end.result.summary
    retried, _ = model.requests[-1]
    assert [type(m).__name__ for m in retried.messages] == ["SystemMessage", "UserMessage"]  # the summary alone
    assert not any(f"two {FILLER}" in text_of(m.content) for m in retried.messages if isinstance(m, UserMessage))
    assert path is not None
    entries = [json.loads(line) for line in (await anyio.Path(path).read_text()).splitlines()]
    [failed] = [e for e in entries if e.get("message", {}).get("stopReason") == "error"]
    [compaction] = [e for e in entries if e["type"] == "compaction"]
    assert compaction["firstKeptEntryId"] == failed["id"]


@pytest.mark.parametrize("reasoning", [True, False], ids=["reasoning-model", "plain-model"])
async def test_the_summary_is_asked_for_at_the_sessions_thinking_level(workspace: Path, reasoning: bool) -> None:
    model = Recorder(
        [SUMMARY, reply("^one", [{"text": "r1"}]), reply("^two", [{"text": "r2"}])],
        msgspec.structs.replace(FAUX_MODEL, reasoning=reasoning),
    )
    config = session_config(workspace, None, model=model.choice(), compaction=CompactionSettings(keep_recent_tokens=10))
    async with open_session(config) as (session, _):
        session.current_model.set_thinking_level("high")
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        await session.compaction.compact()
    [(_, options)] = [(c, o) for c, o in model.requests if text_of(c.messages[-1].content).startswith("<conversation>")]
    assert options.thinking_level == ("high" if reasoning else "off")


async def test_a_failed_or_cancelled_compaction_ends_as_pis_does(workspace: Path) -> None:
    broken = reply("^<conversation>", [{"error": "boom"}])
    stalled = reply("^<conversation>", FOREVER)
    model = Recorder([broken, stalled, reply("^one", [{"text": "r1"}]), reply("^two", [{"text": "r2"}])])
    config = session_config(workspace, None, model=model.choice(), compaction=CompactionSettings(keep_recent_tokens=10))
    async with open_session(config) as (session, events):
        with pytest.raises(CompactionError, match=f"^{re.escape(NOTHING_TO_COMPACT)}$"):
            await session.compaction.compact()
        session.toggles.compaction = False
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        with pytest.raises(CompactionError, match="^Summarization failed: boom$"):
            await session.compaction.compact()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(expect_cancelled, session.compaction.compact)
            await model.wait_for_requests(4)  # the stalled summary request is under way
            await session.abort()
    # Pi's compaction_end: a manual failure says why, in Pi's words; a cancelled one says nothing.
    ends = of_type(events.all, CompactionEnd)
    assert [(e.aborted, e.error_message, e.result) for e in ends] == [
        (False, f"Compaction failed: {NOTHING_TO_COMPACT}", UNSET),
        (False, "Compaction failed: Summarization failed: boom", UNSET),
        (True, UNSET, UNSET),
    ]
    # On the wire as Pi writes it: no `result` at all.
    assert json.loads(msgspec.json.encode(ends[2])) == {
        "type": "compaction_end",
        "reason": "manual",
        "aborted": True,
        "willRetry": False,
    }
    assert len(of_type(events.all, CompactionStart)) == 3


async def expect_cancelled(compact: Callable[[], Awaitable[object]]) -> None:
    with pytest.raises(CompactionError, match="^Compaction cancelled$"):
        await compact()


async def test_compacting_right_after_a_compaction_is_refused(workspace: Path) -> None:
    model = Recorder([SUMMARY, reply("^one", [{"text": "r1"}]), reply("^two", [{"text": "r2"}])])
    config = session_config(workspace, None, model=model.choice(), compaction=CompactionSettings(keep_recent_tokens=10))
    async with open_session(config) as (session, _):
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        await session.compaction.compact()
        with pytest.raises(CompactionError, match=f"^{ALREADY_COMPACTED}$"):
            await session.compaction.compact()


async def test_the_file_lists_of_a_pi_compaction_carry_over_into_the_next(workspace: Path) -> None:
    (workspace / "c.md").write_text("see\n")
    header = {
        "type": "session",
        "version": 3,
        "id": "pi-1",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": str(workspace),
    }

    def message(entry_id: str, parent: str | None, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": body,
        }

    entries = [
        message("u1", None, {"role": "user", "content": [{"type": "text", "text": "old"}], "timestamp": 1}),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "u1",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "summary": "PI SUMMARY",
            "firstKeptEntryId": "u1",
            "tokensBefore": 12345,
            "details": {"readFiles": ["a.md"], "modifiedFiles": ["b.py"]},
        },
    ]
    path = workspace.parent / "pi.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [header, *entries]))
    model = Recorder(
        [
            SUMMARY,
            reply("^look", [tool_call("read", path="c.md")], [{"text": "seen"}]),
            reply("^more", [{"text": "ok"}]),
        ]
    )
    config = session_config(
        workspace, None, model=model.choice(), compaction=CompactionSettings(keep_recent_tokens=10), resume_from=path
    )
    async with open_session(config) as (session, _):
        loaded = session.messages[0]
        assert loaded == CompactionSummaryMessage(summary="PI SUMMARY", tokens_before=12345, timestamp=1767225602000)
        session.toggles.compaction = False
        await session.prompt(f"look at c.md {FILLER}")
        await session.prompt(f"more {FILLER}")
        result = await session.compaction.compact()
    assert msgspec.to_builtins(result.details) == {"readFiles": ["a.md", "c.md"], "modifiedFiles": ["b.py"]}
    assert (
        result.summary
        == "THE SUMMARY\n\n<read-files>\na.md\nc.md\n</read-files>\n\n<modified-files>\nb.py\n</modified-files>"
    )
    asked = model.prompts()[-1]
    assert "<previous-summary>\nPI SUMMARY\n</previous-summary>" in asked and "[User]: old" in asked


async def two_prompts(session: AgentSession) -> None:
    """Two prompts worth compacting, with automatic compaction off so only `compact` runs one."""
    session.toggles.compaction = False
    await session.prompt(f"one {FILLER}")
    await session.prompt(f"two {FILLER}")


async def test_the_result_has_the_estimate_after_and_the_summary_usage(workspace: Path) -> None:
    """Pi 0.79.8/0.81.0: `compact` and `compaction_end.result` add `estimatedTokensAfter` (Pi's
    estimate of the compacted context) and `usage` (the summary request's), before `details`."""
    summary = reply("^<conversation>", [used(321), {"text": "THE SUMMARY"}])
    model = Recorder([summary, reply("^one", [{"text": "r1"}]), reply("^two", [{"text": "r2"}])])
    config = session_config(workspace, None, model=model.choice(), compaction=NEAR)
    async with open_session(config) as (session, events):
        await two_prompts(session)
        result = await session.compaction.compact()
        assert result.estimated_tokens_after == estimated_tokens(session.messages) > 0
        wire = json.loads(msgspec.json.encode(result))
        assert list(wire) == ["summary", "firstKeptEntryId", "tokensBefore", "estimatedTokensAfter", "usage", "details"]
        assert (wire["usage"]["input"], wire["usage"]["output"]) == (321, 1)
        [end] = of_type(events.all, CompactionEnd)
        assert end.result == result


async def test_a_summary_request_that_fails_for_a_passing_reason_is_retried(workspace: Path) -> None:
    """Pi 0.81.1: the summary request follows the retry settings, told by
    summarization_retry_scheduled, _attempt_start and _finished around the one retry."""
    flaky = reply("^<conversation>", [{"error": "503 Service Unavailable"}])
    model = Recorder([flaky, SUMMARY, reply("^one", [{"text": "r1"}]), reply("^two", [{"text": "r2"}])])
    config = session_config(workspace, None, model=model.choice(), compaction=NEAR, retry=RetryConfig(base_ms=1, max=2))
    async with open_session(config) as (session, events):
        await two_prompts(session)
        result = await session.compaction.compact()
        assert result.summary.startswith("THE SUMMARY"), result.summary
    kinds = [
        json.loads(msgspec.json.encode(e))
        for e in events.all
        if isinstance(e, SummarizationRetryScheduled | SummarizationRetryAttemptStart | SummarizationRetryFinished)
    ]
    assert kinds == [
        {
            "type": "summarization_retry_scheduled",
            "attempt": 1,
            "maxAttempts": 2,
            "delayMs": 1,
            "errorMessage": "503 Service Unavailable",
        },
        {"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "manual"},
        {"type": "summarization_retry_finished"},
    ]
    assert sum(p.startswith("<conversation>") for p in model.prompts()) == 2


async def test_summary_retries_follow_the_retry_switch(workspace: Path) -> None:
    """With retries off (`retry.enabled: false`, `set_auto_retry`) the first failure ends the
    compaction, and no summarization_retry event is sent."""
    flaky = reply("^<conversation>", [{"error": "503 Service Unavailable"}])
    model = Recorder([flaky, SUMMARY, reply("^one", [{"text": "r1"}]), reply("^two", [{"text": "r2"}])])
    config = session_config(workspace, None, model=model.choice(), compaction=NEAR, retry=RetryConfig(base_ms=1))
    async with open_session(config) as (session, events):
        session.toggles.retry = False
        await two_prompts(session)
        with pytest.raises(CompactionError):
            await session.compaction.compact()
    assert not of_type(events.all, SummarizationRetryScheduled)


async def test_the_overflowed_reply_leaves_the_context_for_good_before_the_compaction(workspace: Path) -> None:
    """As Pi 1.6.0: a `context_edit` entry (sent as `entry_appended`) takes the refused reply out
    before the compaction, so the session reloaded from its file does not have it either."""
    refused = {"match": "^two", "turns": [[{"error": OVERFLOW}]]}
    model = Recorder([SUMMARY, reply("^one", [{"text": "r1"}]), refused, reply("^two", [{"text": "r2"}])])
    config = session_config(workspace, None, model=model.choice(), compaction=CompactionSettings(keep_recent_tokens=10))
    async with open_session(config) as (session, events):
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        path, live = session.history.session_file, [type(m).__name__ for m in session.messages]
    [appended] = of_type(events.all, EntryAppended)
    assert events.all.index(appended) < events.all.index(of_type(events.all, CompactionStart)[0])
    assert appended.entry["type"] == "context_edit" and appended.entry["replacement"] is None
    assert path is not None
    _, reloaded = load_session(Path(path))
    assert [type(m).__name__ for m in reloaded] == live
    assert not any(isinstance(m, AssistantMessage) and m.stop_reason == "error" for m in reloaded)

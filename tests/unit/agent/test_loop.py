"""The agent loop with the scripted model: event order, batches, hooks, queues, abort (spec 15)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import msgspec
import pytest
from msgspec import UNSET

from pi_rpc.agent import tool_calls
from pi_rpc.agent.agent import Agent, AgentBusyError
from pi_rpc.agent.types import (
    AfterToolCall,
    AgentEnd,
    AgentTool,
    AgentToolResult,
    BeforeToolCall,
    BlockCall,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    OnUpdate,
    ResultOverride,
    ToolCallContext,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    text_result,
)
from pi_rpc.ai.provider import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    AssistantMessage,
    Context,
    Model,
    SystemMessage,
    TextContent,
    TextDeltaEvent,
    ToolResultMessage,
    UserMessage,
    text_of,
)

from .helpers import Recorder, ValueParams, call, config, make_tool, script, user

pytestmark = pytest.mark.anyio


def tool_results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.messages if isinstance(m, ToolResultMessage)]


def result_text(message: ToolResultMessage) -> str:
    return text_of(message.content)


async def test_text_only_event_order() -> None:
    """spec 15.3, 15.5: a turn without tools, no declaration message when no tools exist."""
    agent = Agent()
    rec = Recorder(agent)
    await agent.prompt([user("hi")], config(script([[{"text": "Hello there", "chunk": 5}]]), []))
    assert rec.types() == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_update",
        "message_update",
        "message_update",
        "message_update",
        "message_update",
        "message_update",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    deltas = [
        e.assistant_message_event.delta
        for e in rec.of(MessageUpdate)
        if isinstance(e.assistant_message_event, TextDeltaEvent)
    ]
    assert deltas == ["Hello", " ther", "e"]
    final = agent.messages[-1]
    assert isinstance(final, AssistantMessage) and final.stop_reason == "stop"
    assert text_of(final.content) == "Hello there"
    assert len(rec.of(AgentEnd)) == 1


async def test_tool_turn_declares_tools_then_runs_them() -> None:
    """spec 15.5, 15.12: the tool list is declared by a system message before the prompt."""
    agent = Agent()
    rec = Recorder(agent)
    echo = make_tool("echo")
    await agent.prompt([user("go")], config(script([[call("echo", value="a")], [{"text": "done"}]]), [echo]))
    roles = [type(m).__name__ for m in agent.messages]
    assert roles == ["SystemMessage", "UserMessage", "AssistantMessage", "ToolResultMessage", "AssistantMessage"]
    system = agent.messages[0]
    assert isinstance(system, SystemMessage) and [t.name for t in system.tools_added or []] == ["echo"]
    updates = {"message_update"}
    types = [t for t in rec.types() if t not in updates]
    assert types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",  # the tool declaration (system message)
        "message_start",
        "message_end",  # the prompt
        "message_start",
        "message_end",  # the assistant's tool call
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",  # the tool result
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",  # the final answer
        "turn_end",
        "agent_end",
    ]
    assert result_text(tool_results(agent)[0]) == "echo: a"


async def test_parallel_tools_overlap() -> None:
    """spec 15.6, 15.8: default batches run concurrently — each tool waits for the other to start."""
    started = {"a": anyio.Event(), "b": anyio.Event()}

    def waiter(me: str, other: str) -> Any:
        async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
            started[me].set()
            with anyio.fail_after(10):  # guard only: a sequential run would deadlock here
                await started[other].wait()
            return text_result(me)

        return body

    agent = Agent()
    tools = [make_tool("a", waiter("a", "b")), make_tool("b", waiter("b", "a"))]
    await agent.prompt(
        [user("go")], config(script([[call("a", value="1"), call("b", value="2")], [{"text": "ok"}]]), tools)
    )
    assert [result_text(m) for m in tool_results(agent)] == ["a", "b"]
    assert not any(m.is_error for m in tool_results(agent))


async def test_completion_order_for_end_events_source_order_for_results() -> None:
    """spec 15.8: tool_execution_end in completion order; results in assistant source order."""
    b_done = anyio.Event()

    async def slow(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        await b_done.wait()
        return text_result("slow")

    async def fast(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        b_done.set()
        return text_result("fast")

    agent = Agent()
    rec = Recorder(agent)
    tools = [make_tool("slow", slow), make_tool("fast", fast)]
    await agent.prompt(
        [user("go")], config(script([[call("slow", value="1"), call("fast", value="2")], [{"text": "ok"}]]), tools)
    )
    assert [e.tool_name for e in rec.of(ToolExecutionEnd)] == ["fast", "slow"]
    assert [m.tool_name for m in tool_results(agent)] == ["slow", "fast"]
    assert [e.tool_name for e in rec.of(ToolExecutionStart)] == ["slow", "fast"]


async def test_sequential_tool_makes_the_whole_batch_sequential() -> None:
    """spec 15.6, 15.7: one sequential tool in the batch → calls run one after another."""
    order: list[str] = []

    def body(name: str) -> Any:
        async def run(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
            order.append(f"start {name}")
            await anyio.lowlevel.checkpoint()
            order.append(f"end {name}")
            return text_result(name)

        return run

    agent = Agent()
    rec = Recorder(agent)
    tools = [make_tool("a", body("a")), make_tool("b", body("b"), sequential=True)]
    await agent.prompt(
        [user("go")], config(script([[call("a", value="1"), call("b", value="2")], [{"text": "ok"}]]), tools)
    )
    assert order == ["start a", "end a", "start b", "end b"]
    kinds = [type(e).__name__ for e in rec.events if isinstance(e, ToolExecutionStart | ToolExecutionEnd)]
    assert kinds == ["ToolExecutionStart", "ToolExecutionEnd", "ToolExecutionStart", "ToolExecutionEnd"]


async def test_failing_tool_and_invalid_arguments_become_error_results_and_the_loop_goes_on() -> None:
    """spec 2.3, 2.4, 3.1, 3.6, 3.7: failures are error results; the model gets another turn."""

    async def boom(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        raise RuntimeError("disk on fire")

    agent = Agent()
    tools = [make_tool("boom", boom), make_tool("echo")]
    turns = [[call("boom", value="x"), call("echo"), call("nope", value="y")], [{"text": "recovered"}]]
    await agent.prompt([user("go")], config(script(turns), tools))
    boom_result, invalid, missing = tool_results(agent)
    assert boom_result.is_error and result_text(boom_result) == "disk on fire"
    assert invalid.is_error
    assert result_text(invalid).startswith('Validation failed for tool "echo":\n  - value: ')
    assert result_text(invalid).endswith("Received arguments:\n{}")
    assert missing.is_error and result_text(missing) == "Tool nope not found"
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and text_of(last.content) == "recovered"


async def test_before_hook_blocks_and_after_hook_replaces() -> None:
    """spec 15.10: a block becomes an error result; after_tool_call fields replace wholesale."""

    async def before(ctx: BeforeToolCall) -> BlockCall | None:
        return BlockCall(reason="not allowed here") if ctx.tool_call.name == "danger" else None

    async def after(ctx: AfterToolCall) -> ResultOverride | None:
        return ResultOverride(content=[TextContent(text="rewritten")], details={"by": "hook"})

    agent = Agent()
    tools = [make_tool("danger"), make_tool("echo")]
    await agent.prompt(
        [user("go")],
        config(
            script([[call("danger", value="1"), call("echo", value="2")], [{"text": "ok"}]]),
            tools,
            before_tool_call=before,
            after_tool_call=after,
        ),
    )
    blocked, echoed = tool_results(agent)
    assert blocked.is_error and result_text(blocked) == "not allowed here"
    assert not echoed.is_error and result_text(echoed) == "rewritten" and echoed.details == {"by": "hook"}


async def test_hook_mutated_arguments_are_not_revalidated() -> None:
    """spec 3.8: execute receives what the hook left, even if it breaks the schema."""
    seen: list[Any] = []

    async def before(ctx: BeforeToolCall) -> None:
        ctx.args.value = 123

    async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        seen.append(params.value)
        return text_result("ok")

    agent = Agent()
    await agent.prompt(
        [user("go")],
        config(
            script([[call("echo", value="a")], [{"text": "ok"}]]), [make_tool("echo", body)], before_tool_call=before
        ),
    )
    assert seen == [123]


@pytest.mark.parametrize("mode", ["one-at-a-time", "all"])
async def test_steering_is_delivered_after_the_tool_batch(mode: str) -> None:
    """spec 15.13: steering after the current batch, never skipping its calls; both drain modes."""
    agent = Agent()
    agent.steering_mode = mode  # type: ignore[assignment]

    async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        if params.value == "1":
            agent.steer(UserMessage(content="steer 1"))
            agent.steer(UserMessage(content="steer 2"))
        return text_result("ran")

    turns = [[call("t", value="1"), call("t", value="2")], [{"text": "second"}], [{"text": "third"}]]
    await agent.prompt([user("go")], config(script(turns), [make_tool("t", body)]))
    texts = [
        text_of(m.content) if isinstance(m, UserMessage | AssistantMessage | ToolResultMessage) else "<sys>"
        for m in agent.messages
    ]
    # Both calls ran before any steering message was injected.
    assert texts[:6] == ["<sys>", "go", "", "ran", "ran", "steer 1"]
    if mode == "one-at-a-time":
        assert texts[6:] == ["second", "steer 2", "third"]
    else:
        assert texts[6:] == ["steer 2", "second"]


@pytest.mark.parametrize("mode", ["one-at-a-time", "all"])
async def test_follow_ups_wait_until_the_agent_would_stop(mode: str) -> None:
    """spec 15.13: follow-ups only when the agent would otherwise stop."""
    agent = Agent()
    agent.follow_up_mode = mode  # type: ignore[assignment]

    async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        agent.follow_up(UserMessage(content="later 1"))
        agent.follow_up(UserMessage(content="later 2"))
        return text_result("ran")

    turns = [[call("t", value="1")], [{"text": "answer"}], [{"text": "after 1"}], [{"text": "after 2"}]]
    await agent.prompt([user("go")], config(script(turns), [make_tool("t", body)]))
    texts = [
        text_of(m.content) for m in agent.messages if isinstance(m, UserMessage | AssistantMessage | ToolResultMessage)
    ]
    if mode == "one-at-a-time":
        assert texts == ["go", "", "ran", "answer", "later 1", "after 1", "later 2", "after 2"]
    else:
        assert texts == ["go", "", "ran", "answer", "later 1", "later 2", "after 1"]


async def test_length_stop_reason_does_not_execute_calls() -> None:
    """spec 15.5d: a length-truncated response's calls are answered, not run."""
    ran: list[str] = []

    async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        ran.append(params.value)
        return text_result("ran")

    agent = Agent()
    await agent.prompt(
        [user("go")],
        config(script([[call("t", value="1"), {"stop": "length"}], [{"text": "ok"}]]), [make_tool("t", body)]),
    )
    assert ran == []
    (result,) = tool_results(agent)
    assert result.is_error and result_text(result) == (
        'Tool call "t" was not executed: the response hit the output token limit, so its arguments may be '
        "truncated. Re-issue the tool call with complete arguments."
    )


async def test_terminating_batch_ends_the_run() -> None:
    """spec 15.9: every result terminate=true → no further model request."""

    async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        return AgentToolResult(content=[TextContent(text="bye")], terminate=True)

    agent = Agent()
    await agent.prompt(
        [user("go")], config(script([[call("t", value="1")], [{"text": "never"}]]), [make_tool("t", body)])
    )
    assert isinstance(agent.messages[-1], ToolResultMessage)


async def test_tool_activated_during_a_run_is_declared_on_the_next_request() -> None:
    """spec 15.1, 15.12: the tool list is re-read each turn and the delta declared."""
    active = [make_tool("first")]
    second = make_tool("second")

    async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        active.append(second)
        return text_result("activated")

    active[0] = make_tool("first", body)
    agent = Agent()
    cfg = config(script([[call("first", value="1")], [call("second", value="2")], [{"text": "ok"}]]), [])
    cfg.tools = lambda: list(active)
    await agent.prompt([user("go")], cfg)
    systems = [m for m in agent.messages if isinstance(m, SystemMessage)]
    assert [[t.name for t in s.tools_added or []] for s in systems] == [["first"], ["second"]]
    assert result_text(tool_results(agent)[1]) == "second: 2"


async def test_tool_updates_are_forwarded_and_ignored_after_settling() -> None:
    """spec 15.11: on_update → tool_execution_update; late calls are dropped."""
    keep: list[OnUpdate] = []

    async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        on_update(text_result("half"))
        keep.append(on_update)
        return text_result("whole")

    agent = Agent()
    rec = Recorder(agent)
    await agent.prompt([user("go")], config(script([[call("t", value="1")], [{"text": "ok"}]]), [make_tool("t", body)]))
    keep[0](text_result("too late"))
    updates = rec.of(ToolExecutionUpdate)
    assert [text_of(u.partial_result.content) for u in updates] == ["half"]


async def test_prompt_while_running_is_refused() -> None:
    """spec 15.13: a second prompt during a run raises the busy error."""
    gate = anyio.Event()

    async def body(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        await gate.wait()
        return text_result("ok")

    agent = Agent()
    cfg = config(script([[call("t", value="1")], [{"text": "ok"}]]), [make_tool("t", body)])
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, [user("go")], cfg)
        await wait_until(lambda: agent.is_running)
        with pytest.raises(AgentBusyError, match="Agent is already processing"):
            await agent.prompt([user("again")], cfg)
        gate.set()


async def wait_until(condition: Any) -> None:
    with anyio.fail_after(10):
        while not condition():
            await anyio.lowlevel.checkpoint()


async def test_abort_during_streaming_keeps_the_partial_text() -> None:
    """spec 15.14: abort ends the stream with stopReason aborted; exactly one agent_end."""
    agent = Agent()
    rec = Recorder(agent)
    first_delta = anyio.Event()
    agent.subscribe(
        lambda e: (
            first_delta.set()
            if isinstance(e, MessageUpdate) and isinstance(e.assistant_message_event, TextDeltaEvent)
            else None
        )
    )
    turns = [[{"text": "Once upon a time", "chunk": 5, "delayMs": 60_000}]]
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, [user("story")], config(script(turns), []))
        await first_delta.wait()
        agent.abort()
        await agent.wait_for_idle()
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert text_of(last.content) == "Once "
    assert len(rec.of(AgentEnd)) == 1 and rec.types()[-1] == "agent_end"


async def test_abort_during_a_tool_gives_every_call_a_result() -> None:
    """spec 15.14: each unfinished call gets an error result saying it was aborted."""
    agent = Agent()
    rec = Recorder(agent)
    running = anyio.Event()

    async def forever(params: ValueParams, on_update: OnUpdate) -> AgentToolResult:
        running.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    turns = [[call("wait", value="1"), call("wait", value="2")], [{"text": "never asked"}]]
    cfg = config(script(turns), [make_tool("wait", forever)])
    stream = cfg.stream_fn
    requests = 0

    async def counted(*args: Any) -> Any:
        nonlocal requests
        requests += 1
        return await stream(*args)

    cfg.stream_fn = counted
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, [user("go")], cfg)
        await running.wait()
        agent.abort()
        agent.abort()  # a second abort is harmless
        await agent.wait_for_idle()
    results = tool_results(agent)
    assert [(r.is_error, result_text(r)) for r in results] == [(True, "Operation aborted")] * 2
    assert not any(isinstance(m, AssistantMessage) and text_of(m.content) == "never asked" for m in agent.messages)
    # As in Pi, the run ends with an aborted assistant message; the model is never reached, and
    # no request is even begun (building one cost an aborted run a millisecond).
    assert requests == 1
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted" and last.content == []
    assert len(rec.of(AgentEnd)) == 1
    assert not agent.is_running


async def test_a_tool_that_words_its_abort_gets_its_last_update_as_the_result() -> None:
    """spec 9.13: with `final_update_on_abort` the update emitted where the abort was caught is the
    error result, content and details; the call context carries the call's id."""
    agent = Agent()
    running = anyio.Event()

    async def words_its_abort(params: Any, call: ToolCallContext) -> AgentToolResult:
        call.on_update(text_result(f"{call.id} working"))
        running.set()
        try:
            await anyio.sleep_forever()
        finally:
            call.on_update(text_result(f"{call.id} stopped", details={"step": 2}))
        raise AssertionError("unreachable")

    tool = AgentTool(
        name="job",
        label="job",
        description="d",
        parameters=ValueParams,
        execute=words_its_abort,
        final_update_on_abort=True,
    )
    turns = [[call("job", value="1")], [{"text": "never asked"}]]
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.prompt, [user("go")], config(script(turns), [tool]))
        await running.wait()
        agent.abort()
        await agent.wait_for_idle()
    [result] = tool_results(agent)
    assert (result.is_error, result_text(result), result.details) == (
        True,
        f"{result.tool_call_id} stopped",
        {"step": 2},
    )


async def test_abort_while_idle_is_harmless() -> None:
    agent = Agent()
    rec = Recorder(agent)
    agent.abort()
    await agent.wait_for_idle()
    assert rec.events == []
    await agent.prompt([user("hi")], config(script([[{"text": "fine"}]]), []))
    assert isinstance(agent.messages[-1], AssistantMessage)
    assert agent.messages[-1].stop_reason == "stop"


async def test_model_error_ends_the_run_with_an_error_message() -> None:
    """spec 15.5c: stopReason error → turn_end, agent_end, no tool runs."""
    agent = Agent()
    rec = Recorder(agent)
    await agent.prompt([user("go")], config(script([[{"text": "partial"}, {"error": "upstream exploded"}]]), []))
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert last.error_message == "upstream exploded"
    assert rec.types()[-2:] == ["turn_end", "agent_end"]
    assert isinstance(rec.events[-3], MessageEnd)


@pytest.mark.parametrize("sequential", [False, True])
async def test_tool_duration_leaves_out_the_wait_for_approval(
    sequential: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that waits for the user before it runs reports the time of its own work: the editor's
    card says "0.00s" for an instant command the user took a minute to allow. The loop's clock is
    one that only the user's minute moves, so the duration is exact, whatever the machine does."""
    clock = [1000.0]
    monkeypatch.setattr(tool_calls, "time", SimpleNamespace(monotonic=lambda: clock[0]))

    async def before(ctx: BeforeToolCall) -> None:
        clock[0] += 60.0  # the user deciding

    agent = Agent()
    recorder = Recorder(agent)
    tools = [make_tool("echo", sequential=sequential)]
    await agent.prompt(
        [user("go")], config(script([[call("echo", value="a")], [{"text": "ok"}]]), tools, before_tool_call=before)
    )
    (end,) = recorder.of(ToolExecutionEnd)
    assert end.duration_ms == 0


async def test_a_reply_starts_pending_and_one_failed_before_streaming_starts_ended_with_its_level() -> None:
    """Pi 1.6.0: `message_start` says `pending` while the message streams; a request that fails
    before anything streamed (a refused HTTP request) starts already ended, with its level."""

    async def refused(
        model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        return builder.fail("error", "500 Internal Server Error: boom")

    for stream_fn, stop in ((config(script([[{"text": "Hi"}]]), []).stream_fn, "pending"), (refused, "error")):
        agent = Agent()
        starts: list[tuple[str, Any]] = []  # as each message_start was sent: the message changes after

        def on_event(event: Any, starts: list[tuple[str, Any]] = starts) -> None:
            if isinstance(event, MessageStart) and isinstance(event.message, AssistantMessage):
                starts.append((event.message.stop_reason, event.message.thinking_level))

        agent.subscribe(on_event)
        loop = msgspec.structs.replace(
            config(script(), []), stream_fn=stream_fn, options=StreamOptions(thinking_level="high")
        )
        [*_, end] = await agent.prompt([user("hi")], loop)
        assert starts == [(stop, "high" if stop == "error" else UNSET)]
        assert isinstance(end, AssistantMessage) and end.thinking_level == "high"

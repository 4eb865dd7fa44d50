"""Agent's run API: the claim that is the one busy flag, a config left as the caller made it,
and the run boundary that ends any failure with one error message and one agent_end."""

from __future__ import annotations

import gc

import anyio
import pytest

from pi_rpc.agent.agent import BUSY_TEXT, Agent, AgentBusyError, all_agents_idle
from pi_rpc.agent.types import AgentEnd, MessageEnd, MessageStart
from pi_rpc.ai.types import AssistantMessage, UserMessage

from .helpers import Recorder, config, script, user

pytestmark = pytest.mark.anyio


async def test_a_run_leaves_the_callers_config_as_it_was() -> None:
    """The agent's queues and the run id go into a config of its own: a config shared by two
    agents (or two runs) never carries one agent's queues into another's run."""
    cfg = config(script([[{"text": "one"}]], [[{"text": "two"}]]), [])
    options, steering, follow_ups = cfg.options, cfg.steering, cfg.follow_ups
    first = Agent()
    await first.prompt([user("hi")], cfg)
    assert (cfg.options, cfg.steering, cfg.follow_ups) == (options, steering, follow_ups)
    first.follow_up(UserMessage(content="meant for the first agent only"))
    second = Agent()
    await second.prompt([user("hello")], cfg)
    assert first.pending_count == 1
    assert not any("first agent" in str(m) for m in second.messages)


async def test_all_agents_idle_returns_once_every_claim_is_released() -> None:
    gc.collect()  # an agent another test dropped mid-run leaves the (weak) set of claims
    first, second = Agent(), Agent()
    one, two = first.begin_run(), second.begin_run()
    released: list[str] = []

    async def wait() -> None:
        await all_agents_idle()
        released.append("idle")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(wait)
            await anyio.sleep(0.02)
            first.end_run(one)
            await anyio.sleep(0.02)
            assert released == []  # the second still runs
            second.end_run(two)
    assert released == ["idle"]
    with anyio.fail_after(5):
        await all_agents_idle()  # none running: at once


async def test_the_claim_holds_across_runs_until_released() -> None:
    """The one busy flag: `run` may be called again on a claim (the session's overflow retry);
    only `end_run` makes the agent idle, and a second claim meanwhile is the one busy error."""
    agent = Agent()
    cfg = config(script([[{"text": "one"}], [{"text": "two"}]]), [])
    control = agent.begin_run()
    await agent.run(control, [user("go")], cfg)
    assert agent.is_running
    with pytest.raises(AgentBusyError) as refused:
        agent.begin_run()
    assert str(refused.value) == BUSY_TEXT
    await agent.run(control, [], cfg)
    agent.end_run(control)
    assert not agent.is_running
    with anyio.fail_after(5):
        await agent.wait_for_idle()


async def test_a_failing_hook_ends_the_run_with_one_error_message() -> None:
    """spec 15.14: whatever raises inside the loop ends the run at its boundary."""

    def broken() -> bool:
        raise RuntimeError("hook on fire")

    agent = Agent()
    rec = Recorder(agent)
    messages = await agent.prompt([user("go")], config(script([[{"text": "fine"}]]), [], should_stop_after_turn=broken))
    last = agent.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert last.error_message == "RuntimeError: hook on fire"
    assert messages[-1] is last and len(rec.of(AgentEnd)) == 1 and rec.types()[-1] == "agent_end"
    assert len(rec.of(MessageStart)) == len(rec.of(MessageEnd))
    assert not agent.is_running

"""Shared pieces for agent-loop tests: scripted turns, small tools, an event recorder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from pi_rpc.agent.agent import Agent
from pi_rpc.agent.loop import LoopConfig
from pi_rpc.agent.types import AgentEvent, AgentTool, AgentToolResult, OnUpdate, ToolCallContext, text_result
from pi_rpc.ai.providers.faux import FAUX_MODEL, FauxProvider, Script
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.types import Message, UserMessage


def script(*replies: list[list[dict[str, Any]]]) -> Script:
    return msgspec.convert({"replies": [{"turns": turns} for turns in replies]}, Script)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"toolCall": {"name": name, "arguments": arguments}}


class ValueParams(msgspec.Struct):
    value: str


def make_tool(
    name: str,
    body: Callable[[ValueParams, OnUpdate], Awaitable[AgentToolResult]] | None = None,
    *,
    sequential: bool = False,
    parameters: Any = ValueParams,
) -> AgentTool:
    async def execute(params: Any, call: ToolCallContext) -> AgentToolResult:
        if body is not None:
            return await body(params, call.on_update)
        return text_result(f"{name}: {params.value}")

    return AgentTool(
        name=name,
        label=name,
        description=f"The {name} tool",
        parameters=parameters,
        execute=execute,
        execution_mode="sequential" if sequential else "parallel",
    )


class Recorder:
    def __init__(self, agent: Agent) -> None:
        self.events: list[AgentEvent] = []
        agent.subscribe(self.events.append)

    def types(self) -> list[str]:
        return [str(type(e).__struct_config__.tag) for e in self.events]

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]


def config(the_script: Script, tools: list[AgentTool], **kwargs: Any) -> LoopConfig:
    return LoopConfig(
        model=FAUX_MODEL,
        stream_fn=FauxProvider(the_script).stream,
        options=StreamOptions(),
        system_prompt=lambda: "system",
        tools=lambda: tools,
        **kwargs,
    )


def user(text: str) -> Message:  # a prompt is a list[Message]
    return UserMessage(content=text)

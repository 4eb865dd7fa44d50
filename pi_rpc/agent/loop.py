"""The agent loop (spec 15.3-15.5, 15.12): turns of stream -> tool batch -> results, until done.

`run_loop` owns no state between runs: the Agent passes the context (transcript and tools), the
queues as callables, and the RunControl that abort uses. Events go through one synchronous `emit`
so an event is on its way before the next await can be cancelled.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Literal

import msgspec

from pi_rpc.agent.control import RunControl
from pi_rpc.agent.llm_messages import convert_to_llm
from pi_rpc.agent.tool_calls import BatchConfig, execute_tool_calls, not_executed_results
from pi_rpc.agent.types import (
    AfterToolCallHook,
    AgentEnd,
    AgentStart,
    AgentTool,
    BeforeToolCallHook,
    Emit,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolCallContext,
    TurnEnd,
    TurnStart,
    WaitForRoom,
)
from pi_rpc.ai import (
    AssistantBuilder,
    AssistantMessage,
    AutoRetryEnd,
    AutoRetryStart,
    Context,
    Message,
    Model,
    ProviderEvent,
    StartEvent,
    StreamFn,
    StreamOptions,
    SystemMessage,
    ToolCall,
    ToolRef,
    declared_sections,
    declared_tools,
    request_secrets,
    sections_text,
)

ABORTED_MESSAGE = "Operation aborted"


class LoopConfig(msgspec.Struct):
    model: Model
    stream_fn: StreamFn
    options: StreamOptions
    # The prompt, as text or (Pi 1.6.0) in named sections, which the system messages declare.
    system_prompt: Callable[[], str | dict[str, str]]
    # Read before every turn, so tools (de)activated during a run reach the next request (spec 15.1).
    tools: Callable[[], list[AgentTool]]
    steering: Callable[[], list[Message]] = msgspec.field(default=lambda: [])
    follow_ups: Callable[[], list[Message]] = msgspec.field(default=lambda: [])
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    before_tool_call: BeforeToolCallHook | None = None
    after_tool_call: AfterToolCallHook | None = None
    should_stop_after_turn: Callable[[], bool] | None = None
    # The session around each tool call (cwd, model, ids), read when the call runs.
    tool_context: Callable[[], ToolCallContext] = msgspec.field(default=lambda: ToolCallContext(cwd=os.getcwd()))
    # Whether a run that ended with these new messages is retried after its agent_end (Pi mode's
    # retries between runs): the agent_end says so. None: it says nothing.
    will_retry: Callable[[Sequence[Message]], bool] | None = None
    # Awaited between the model's stream events: the Agent's listeners whose clients are far
    # behind hold the stream there. None: nothing waits.
    wait_for_room: WaitForRoom | None = None


async def run_loop(
    prompts: list[Message], transcript: list[Message], config: LoopConfig, control: RunControl, emit: Emit
) -> list[Message]:
    """Run until the model stops; appends to `transcript` and returns the new messages."""
    new_messages: list[Message] = []

    def append(message: Message) -> None:
        transcript.append(message)
        new_messages.append(message)

    emit(AgentStart())
    emit(TurnStart())
    pending: list[Message] = list(prompts) + config.steering()
    first_turn = True
    while True:
        more_tool_calls = True
        while more_tool_calls or pending:
            if not first_turn:
                emit(TurnStart())
            first_turn = False
            tools = config.tools()
            prompt = config.system_prompt()
            sections = prompt if isinstance(prompt, dict) else None
            for message in declare_tool_changes(transcript, pending, tools, sections):
                emit(MessageStart(message=message))
                emit(MessageEnd(message=message))
                append(message)
            pending = []

            assistant = await stream_assistant(transcript, tools, config, control, emit)
            append(assistant)
            if assistant.stop_reason in ("error", "aborted"):
                emit(TurnEnd(message=assistant, tool_results=[]))
                emit(AgentEnd(messages=new_messages))
                return new_messages

            calls = [block for block in assistant.content if isinstance(block, ToolCall)]
            results = []
            terminate = False
            if calls and assistant.stop_reason == "length":
                results = not_executed_results(calls, emit)
            elif calls:
                batch = BatchConfig(
                    tools=tools,
                    emit=emit,
                    control=control,
                    tool_context=config.tool_context,
                    sequential=config.tool_execution == "sequential",
                    before_tool_call=config.before_tool_call,
                    after_tool_call=config.after_tool_call,
                )
                results, terminate = await execute_tool_calls(assistant, calls, batch)
            for result in results:
                append(result)
            emit(TurnEnd(message=assistant, tool_results=results))

            if terminate:
                emit(AgentEnd(messages=new_messages))
                return new_messages
            if config.should_stop_after_turn is not None and config.should_stop_after_turn():
                emit(AgentEnd(messages=new_messages))
                return new_messages
            # After an aborted batch the loop goes on as Pi's does: the next request's scope is born
            # cancelled, so the run ends with an `aborted` assistant message without reaching the model.
            more_tool_calls = bool(calls)
            pending = config.steering()
        pending = config.follow_ups()
        if not pending:
            break
    emit(AgentEnd(messages=new_messages))
    return new_messages


def declare_tool_changes(
    transcript: list[Message], pending: list[Message], tools: list[AgentTool], sections: dict[str, str] | None = None
) -> list[Message]:
    """`pending` with a system message declaring the tool delta and, given the prompt's
    `sections`, the sections that changed (Pi 1.6.0's patch: `null` for one removed), if
    anything changed (spec 15.12)."""
    declared = {tool.name: tool for tool in declared_tools(transcript)}
    told = declared_sections([*transcript, *pending])
    for message in pending:  # a pending system message already declares its own changes
        if isinstance(message, SystemMessage):
            for ref in message.tools_removed or ():
                declared.pop(ref.name, None)
            for tool in message.tools_added or ():
                declared[tool.name] = tool
    current = {tool.name: tool.declaration(tools) for tool in tools if tool.exposure == "direct"}
    added = [decl for name, decl in current.items() if declared.get(name) != decl]
    removed = [ToolRef(name=name) for name in declared if name not in current]
    patch: dict[str, str | None] = {}
    if sections is not None:
        patch = {name: text for name, text in sections.items() if told.get(name) != text}
        patch |= {name: None for name in told if name not in sections}
    if not added and not removed and not patch:
        return pending
    delta = SystemMessage()
    if patch:
        delta.sections = patch
    if added:
        delta.tools_added = added
    if removed:
        delta.tools_removed = removed
    position = next((i for i, m in enumerate(pending) if not isinstance(m, SystemMessage)), len(pending))
    return [*pending[:position], delta, *pending[position:]]


async def stream_assistant(
    transcript: list[Message], tools: list[AgentTool], config: LoopConfig, control: RunControl, emit: Emit
) -> AssistantMessage:
    """One model request: message_start, an update per stream event, message_end."""
    started = False

    def on_event(event: ProviderEvent) -> None:
        nonlocal started
        if isinstance(event, AutoRetryStart | AutoRetryEnd):
            emit(event)
            return
        if not started:
            started = True
            if builder.message.stop_reason != "pending":  # failed before anything streamed: ended already
                builder.message.thinking_level = config.options.thinking_level
            emit(MessageStart(message=builder.message))
        if not isinstance(event, StartEvent):
            emit(MessageUpdate(assistant_message_event=event))

    builder = AssistantBuilder(config.model, on_event, config.wait_for_room)
    # Any stream function, HTTP or not, and a provider that breaks its contract alike: no error
    # text of this message shows the key.
    builder.keep_secret(*request_secrets(config.options.api_key, config.options.headers))
    prompt = config.system_prompt()
    context = Context(
        system_prompt=prompt if isinstance(prompt, str) else sections_text(prompt),
        messages=convert_to_llm(transcript),
        tools=[tool.declaration(tools) for tool in tools if tool.exposure == "direct"],
    )
    message: AssistantMessage | None = None
    with control.scope() as scope:
        # Aborted already (after a tool batch): a request would be built only to be dropped.
        if not control.aborted:
            try:
                message = await config.stream_fn(config.model, context, config.options, builder)
            finally:
                # A stream function never raises (spec 15.15); one that does ends the run at its
                # boundary, `Agent.run`, which ends this message with the error: reading it writes
                # what streamed so far into its blocks.
                _ = builder.message
    if scope.cancelled_caught or message is None or control.aborted and message.stop_reason != "error":
        message = builder.fail("aborted", ABORTED_MESSAGE)
    message.thinking_level = config.options.thinking_level  # the level it was asked at (Pi's)
    emit(MessageEnd(message=message))
    return message

"""Executing one assistant message's tool calls (spec 3, 15.6-15.11).

Per call: lookup -> prepare_arguments -> validate (the ONE validation point) -> before_tool_call ->
execute -> after_tool_call. Every failure becomes an error result; the batch never stops because a
tool failed. Parallel batches prepare in source order, run concurrently, emit `tool_execution_end`
in completion order and append results in source order.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

import anyio
import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.agent.control import RunControl
from pi_rpc.agent.types import (
    AfterToolCall,
    AfterToolCallHook,
    AgentTool,
    AgentToolResult,
    BeforeToolCall,
    BeforeToolCallHook,
    Emit,
    HunkSelection,
    MessageEnd,
    MessageStart,
    NestedExecutor,
    NestedOutcome,
    ToolCallContext,
    ToolErrorWithResult,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
)
from pi_rpc.ai import AssistantMessage, TextContent, ToolCall, ToolResultMessage, validate_tool_arguments

ABORTED_TEXT = "Operation aborted"
LENGTH_TEXT = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments '
    "may be truncated. Re-issue the tool call with complete arguments."
)


class BatchConfig(msgspec.Struct):
    tools: list[AgentTool]
    emit: Emit
    control: RunControl
    tool_context: Callable[[], ToolCallContext]
    sequential: bool = False
    before_tool_call: BeforeToolCallHook | None = None
    after_tool_call: AfterToolCallHook | None = None


class _Prepared(msgspec.Struct):
    call: ToolCall
    tool: AgentTool
    args: Any
    hunks: HunkSelection | None = None


class _Outcome(msgspec.Struct):
    call: ToolCall
    result: AgentToolResult
    is_error: bool
    duration_ms: int | None = None  # set when its tool_execution_end is sent; its message says it too


def error_result(message: str, details: Any = UNSET) -> AgentToolResult:
    """An error result; with no details its `details` is `{}` on the wire, as in Pi."""
    return AgentToolResult(content=[TextContent(text=message)], details={} if details is UNSET else details)


async def execute_tool_calls(
    assistant: AssistantMessage, calls: list[ToolCall], config: BatchConfig
) -> tuple[list[ToolResultMessage], bool]:
    """Run a batch; returns the result messages in source order and whether the run terminates."""
    # The model can call only what it was declared; scripts reach the codemode-exposed tools too.
    by_name = {tool.name: tool for tool in config.tools if tool.exposure == "direct"}
    sequential = config.sequential or any(
        (tool := by_name.get(call.name)) is not None and tool.execution_mode == "sequential" for call in calls
    )
    if sequential:
        outcomes = await _run_sequential(assistant, calls, by_name, config)
    else:
        outcomes = await _run_parallel(assistant, calls, by_name, config)
    messages = [_to_message(outcome) for outcome in outcomes]
    for message in messages:
        config.emit(MessageStart(message=message))
        config.emit(MessageEnd(message=message))
    terminate = bool(outcomes) and all(outcome.result.terminate is True for outcome in outcomes)
    return messages, terminate


def not_executed_results(calls: list[ToolCall], emit: Emit) -> list[ToolResultMessage]:
    """A `length`-truncated response: no call runs, each gets an explanatory error (spec 15.5d)."""
    messages = []
    for call in calls:
        emit(ToolExecutionStart(tool_call_id=call.id, tool_name=call.name, args=call.arguments))
        result = error_result(LENGTH_TEXT.format(name=call.name))
        emit(ToolExecutionEnd(tool_call_id=call.id, tool_name=call.name, result=result, is_error=True))
        message = _to_message(_Outcome(call, result, True))
        emit(MessageStart(message=message))
        emit(MessageEnd(message=message))
        messages.append(message)
    return messages


async def _run_sequential(
    assistant: AssistantMessage, calls: list[ToolCall], by_name: dict[str, AgentTool], config: BatchConfig
) -> list[_Outcome]:
    outcomes = []
    for call in calls:
        config.emit(ToolExecutionStart(tool_call_id=call.id, tool_name=call.name, args=call.arguments))
        started = time.monotonic()
        if config.control.aborted:
            # Every call still gets a result, so the transcript stays valid for the next request.
            outcome = _Outcome(call, error_result(ABORTED_TEXT), True)
        else:
            prepared = await _prepare(assistant, call, by_name, config)
            if isinstance(prepared, _Outcome):
                outcome = prepared
            else:
                started = time.monotonic()  # the duration is the tool's work, not the wait for approval
                outcome = await _execute(assistant, prepared, config)
        _emit_end(config, outcome, started)
        outcomes.append(outcome)
    return outcomes


async def _run_parallel(
    assistant: AssistantMessage, calls: list[ToolCall], by_name: dict[str, AgentTool], config: BatchConfig
) -> list[_Outcome]:
    outcomes: list[_Outcome | None] = [None] * len(calls)
    started: list[float] = [0.0] * len(calls)
    runnable: list[tuple[int, _Prepared]] = []
    for index, call in enumerate(calls):
        config.emit(ToolExecutionStart(tool_call_id=call.id, tool_name=call.name, args=call.arguments))
        started[index] = time.monotonic()
        prepared: _Prepared | _Outcome
        if config.control.aborted:
            prepared = _Outcome(call, error_result(ABORTED_TEXT), True)
        else:
            prepared = await _prepare(assistant, call, by_name, config)
        if isinstance(prepared, _Outcome):
            outcomes[index] = prepared
            _emit_end(config, prepared, started[index])
        else:
            started[index] = time.monotonic()  # the tool's work, not the wait for approval
            runnable.append((index, prepared))

    async def run_one(index: int, prepared: _Prepared) -> None:
        outcome = await _execute(assistant, prepared, config)
        outcomes[index] = outcome
        _emit_end(config, outcome, started[index])

    if len(runnable) == 1:
        await run_one(*runnable[0])  # the usual turn: no task group and task to set up (~0.1 ms)
    else:
        async with anyio.create_task_group() as group:
            for index, prepared in runnable:
                group.start_soon(run_one, index, prepared)
    return [outcome for outcome in outcomes if outcome is not None]


async def _prepare(
    assistant: AssistantMessage, call: ToolCall, by_name: dict[str, AgentTool], config: BatchConfig
) -> _Prepared | _Outcome:
    tool = by_name.get(call.name)
    if tool is None:
        return _Outcome(call, error_result(f"Tool {call.name} not found"), True)
    try:
        raw: Any = call.arguments
        if tool.prepare_arguments is not None:
            raw = tool.prepare_arguments(raw)
        args = validate_tool_arguments(tool.name, tool.parameters, raw)
    except Exception as exc:  # shim or validation: the model reads the message and retries
        return _Outcome(call, error_result(str(exc)), True)
    if config.before_tool_call is not None:
        blocked = None
        before = BeforeToolCall(assistant, call, args)
        with config.control.scope() as scope:
            try:
                blocked = await config.before_tool_call(before)
            except Exception as exc:
                return _Outcome(call, error_result(str(exc)), True)
        if scope.cancelled_caught or config.control.aborted:
            return _Outcome(call, error_result(ABORTED_TEXT), True)
        if blocked is not None:
            result = error_result(blocked.reason or "Tool execution was blocked")
            if blocked.terminate:
                result.terminate = True
            return _Outcome(call, result, True)
        return _Prepared(call, tool, args, before.hunks)
    return _Prepared(call, tool, args)


def nested_executor(assistant: AssistantMessage, parent: ToolCall, config: BatchConfig) -> NestedExecutor:
    """How a tool runs other tools on behalf of `parent` (codemode): each call is validated, passes
    the approval gate and checkpoints, runs and is truncated exactly as a model-issued call, and
    its `tool_execution_*` events name `parent` in `parentToolCallId` (Pi's nested-tool-calls.js).
    Calls are numbered `<parent id>/<n>` in call order."""
    counter = itertools.count(1)

    async def execute(name: str, args: Any) -> NestedOutcome:
        call = ToolCall(id=f"{parent.id}/{next(counter)}", name=name, arguments=args if isinstance(args, dict) else {})
        by_name = {tool.name: tool for tool in config.tools if tool.name != parent.name}
        config.emit(
            ToolExecutionStart(tool_call_id=call.id, tool_name=name, args=call.arguments, parent_tool_call_id=parent.id)
        )
        started = time.monotonic()
        outcome: _Outcome | None = None
        try:
            prepared = await _prepare(assistant, call, by_name, config)
            outcome = (
                prepared if isinstance(prepared, _Outcome) else await _execute(assistant, prepared, config, parent.id)
            )
        finally:
            # An abort (or the script ending) cancels the call: its row still gets its end.
            _emit_end(config, outcome or _Outcome(call, error_result(ABORTED_TEXT), True), started, parent.id)
        return NestedOutcome(call_id=call.id, result=outcome.result, is_error=outcome.is_error)

    return execute


async def _execute(
    assistant: AssistantMessage, prepared: _Prepared, config: BatchConfig, parent_id: str | UnsetType = UNSET
) -> _Outcome:
    call, tool = prepared.call, prepared.tool
    settled = False
    last_partial: AgentToolResult | None = None

    def on_update(partial: AgentToolResult) -> None:
        nonlocal last_partial
        if settled:  # updates after execute settled are ignored (spec 15.11)
            return
        last_partial = partial
        config.emit(
            ToolExecutionUpdate(
                tool_call_id=call.id,
                tool_name=call.name,
                args=call.arguments,
                partial_result=partial,
                parent_tool_call_id=parent_id,
            )
        )

    result: AgentToolResult | None = None
    is_error = False
    with config.control.scope() as scope:
        try:
            context = msgspec.structs.replace(
                config.tool_context(),
                id=call.id,
                on_update=on_update,
                hunks=prepared.hunks,
                execute_tool=nested_executor(assistant, call, config) if parent_id is UNSET else None,
            )
            result = await tool.execute(prepared.args, context)
            is_error = result.is_error is True
        except ToolErrorWithResult as exc:
            result, is_error = error_result(str(exc), exc.details), True
        except Exception as exc:  # a tool's failure is the model's information, never a crash
            result, is_error = error_result(str(exc) or type(exc).__name__), True
    settled = True
    if scope.cancelled_caught or result is None:
        result = error_result(ABORTED_TEXT, last_partial.details if last_partial is not None else UNSET)
        if tool.final_update_on_abort and last_partial is not None:
            result = msgspec.structs.replace(result, content=list(last_partial.content))
        is_error = True
    if config.after_tool_call is not None:
        result, is_error = await _after(assistant, prepared, result, is_error, config)
    return _Outcome(call, result, is_error)


async def _after(
    assistant: AssistantMessage,
    prepared: _Prepared,
    result: AgentToolResult,
    is_error: bool,
    config: BatchConfig,
) -> tuple[AgentToolResult, bool]:
    assert config.after_tool_call is not None
    try:
        override = await config.after_tool_call(
            AfterToolCall(assistant, prepared.call, prepared.args, result, is_error)
        )
    except Exception as exc:
        return error_result(str(exc)), True
    if override is None:
        return result, is_error
    # Each field given replaces the original wholesale; no deep merge (spec 15.10).
    changes: dict[str, Any] = {}
    for name in ("content", "details", "terminate"):
        value = getattr(override, name)
        if value is not UNSET:
            changes[name] = value
    if "content" in changes:  # structured content that no longer matches the content goes
        changes["structured_content"] = UNSET
    if changes:
        result = msgspec.structs.replace(result, **changes)
    if override.is_error is not UNSET:
        is_error = bool(override.is_error)
    return result, is_error


def _emit_end(config: BatchConfig, outcome: _Outcome, started: float, parent_id: str | UnsetType = UNSET) -> None:
    outcome.duration_ms = int((time.monotonic() - started) * 1000)
    config.emit(
        ToolExecutionEnd(
            tool_call_id=outcome.call.id,
            tool_name=outcome.call.name,
            result=outcome.result,
            is_error=outcome.is_error,
            duration_ms=outcome.duration_ms,
            parent_tool_call_id=parent_id,
        )
    )


def _to_message(outcome: _Outcome) -> ToolResultMessage:
    message = ToolResultMessage(
        tool_call_id=outcome.call.id,
        tool_name=outcome.call.name,
        content=list(outcome.result.content),
        is_error=outcome.is_error,
    )
    if outcome.result.details is not UNSET:
        message.details = outcome.result.details
    if outcome.duration_ms is not None:
        message.duration_ms = outcome.duration_ms
    return message

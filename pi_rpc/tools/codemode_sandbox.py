"""Runs one codemode script in its QuickJS child process (codemode_worker.py) and answers the
script's tool calls.

The child is the sandbox: its own process with an empty environment, a QuickJS heap cap and a
kernel CPU cap, and no way out but its stdout. Every limit ends in a `ScriptOutcome` with an error
kind, never an exception: the wall-time cap and abort kill the child (abort is the caller's
cancellation, which reaches the calls still running too), too many tool calls fail the call that
went over, and a child that dies (a crash, the kernel's limits) is a sandbox failure.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import msgspec
from anyio.abc import ByteReceiveStream, Process

WORKER = Path(__file__).with_name("codemode_worker.py")
# The stdout of a child is read in lines; a line holds one call's arguments or the whole output.
MAX_LINE_BYTES = 64 * 1024 * 1024

ErrorKind = Literal["script", "timeout", "aborted", "sandbox", "memory"]
# name, arguments -> (ok, what the script receives: a JSON value, or the error text)
CallTool = Callable[[str, Any], Awaitable[tuple[bool, Any]]]


class Limits(msgspec.Struct, frozen=True):
    memory_bytes: int
    timeout_ms: int
    max_calls: int


class ScriptOutcome(msgspec.Struct):
    ok: bool
    output: list[dict[str, Any]] = msgspec.field(default_factory=list)
    value: str | None = None  # the returned value as text (strings as is, others as JSON)
    error_kind: ErrorKind | None = None
    error: str = ""
    store_writes: dict[str, Any] = msgspec.field(default_factory=lambda: {"set": {}, "delete": []})


async def _lines(stream: ByteReceiveStream) -> Any:
    buffer = b""
    async for chunk in stream:
        buffer += chunk
        if len(buffer) > MAX_LINE_BYTES:
            raise ValueError("the sandbox sent more output than it may")
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


def _error_text(error: dict[str, Any]) -> str:
    stack = error.get("stack")
    return str(stack) if stack else f"{error.get('name') or 'Error'}: {error.get('message')}"


async def run_script(
    code: str, catalog: list[dict[str, str]], store: dict[str, Any], limits: Limits, call_tool: CallTool
) -> ScriptOutcome:
    request = {
        "code": code,
        "tools": catalog,
        "store": store,
        "memoryLimitBytes": limits.memory_bytes,
        "cpuSeconds": math.ceil(limits.timeout_ms / 1000),
    }
    process = await anyio.open_process([sys.executable, "-I", str(WORKER)], env={})
    try:
        with anyio.move_on_after(limits.timeout_ms / 1000) as deadline:
            return await _drive(process, request, limits, call_tool)
        assert deadline.cancelled_caught
        return ScriptOutcome(False, error_kind="timeout", error=f"Execution timed out after {limits.timeout_ms} ms")
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            await process.aclose()


async def _drive(process: Process, request: dict[str, Any], limits: Limits, call_tool: CallTool) -> ScriptOutcome:
    assert process.stdin is not None and process.stdout is not None
    stdin = process.stdin
    await stdin.send(json.dumps(request).encode() + b"\n")
    calls = 0
    writing = anyio.Lock()

    async def answer(call_id: int, name: str, args: Any) -> None:
        ok, value = await call_tool(name, args)
        async with writing:
            await stdin.send(json.dumps({"id": call_id, "ok": ok, "value": value}).encode() + b"\n")

    async with anyio.create_task_group() as group:
        async for message in _lines(process.stdout):
            if message.get("op") == "call":
                calls += 1
                if calls > limits.max_calls:
                    text = f"Too many tool calls: a script may make at most {limits.max_calls}"
                    async with writing:
                        await stdin.send(json.dumps({"id": message["id"], "ok": False, "value": text}).encode() + b"\n")
                    continue
                group.start_soon(answer, message["id"], message["name"], message.get("args"))
            elif message.get("op") == "done":
                group.cancel_scope.cancel()  # calls still running when the script ends are cancelled
                return _outcome(message)
        group.cancel_scope.cancel()
    code = await process.wait()
    return ScriptOutcome(False, error_kind="sandbox", error=f"the sandbox process exited with code {code}")


def _outcome(message: dict[str, Any]) -> ScriptOutcome:
    error = message.get("error") or {}
    kind: ErrorKind | None = None if message.get("ok") else error.get("kind", "script")
    return ScriptOutcome(
        ok=bool(message.get("ok")),
        output=list(message.get("output") or []),
        value=message.get("value") if message.get("hasValue") else None,
        error_kind=kind,
        error=_error_text(error) if kind == "script" else str(error.get("message", "")),
        store_writes=message.get("storeWrites") or {"set": {}, "delete": []},
    )

"""The JSON-RPC dispatcher: typed params, Structs out, crashes become errors (issue 4), one task
per request that `$/cancelRequest` cancels, and no pygls on the way (issue 17)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.abc
import msgspec
import pytest

from pi_rpc.modes.jsonrpc.rpc import Rpc

pytestmark = pytest.mark.anyio


class Sink:
    def __init__(self) -> None:
        self.bodies: list[dict[str, object]] = []
        self.arrived = anyio.Event()

    def send(self, body: bytes) -> None:
        self.bodies.append(msgspec.json.decode(body))
        self.arrived.set()

    async def next(self) -> dict[str, object]:
        with anyio.fail_after(10):
            await self.arrived.wait()
        self.arrived = anyio.Event()
        return self.bodies.pop(0)


class Params(msgspec.Struct, rename="camel"):
    max_turns: int = 1


class Result(msgspec.Struct, rename="camel"):
    turns_left: int


def make(tasks: anyio.abc.TaskGroup) -> tuple[Rpc, Sink]:
    sink = Sink()
    rpc = Rpc(sink, tasks)

    @rpc.method("count", Params)
    async def count(params: Params) -> Result:
        return Result(turns_left=params.max_turns - 1)

    @rpc.method("crash", Params)
    async def crash(params: Params) -> None:
        raise RuntimeError("the handler broke")

    return rpc, sink


@pytest.fixture
async def served() -> AsyncIterator[Callable[[], tuple[Rpc, Sink]]]:
    async with anyio.create_task_group() as tasks:
        yield lambda: make(tasks)
        tasks.cancel_scope.cancel()


async def test_struct_results_go_out_camel_cased(served: Callable[[], tuple[Rpc, Sink]]) -> None:
    rpc, sink = served()
    rpc.handle({"jsonrpc": "2.0", "id": 1, "method": "count", "params": {"maxTurns": 5}})
    assert await sink.next() == {"jsonrpc": "2.0", "id": 1, "result": {"turnsLeft": 4}}


async def test_absent_params_use_the_defaults(served: Callable[[], tuple[Rpc, Sink]]) -> None:
    rpc, sink = served()
    rpc.handle({"jsonrpc": "2.0", "id": "a", "method": "count"})
    assert await sink.next() == {"jsonrpc": "2.0", "id": "a", "result": {"turnsLeft": 0}}


async def test_wrong_params_name_the_field(served: Callable[[], tuple[Rpc, Sink]]) -> None:
    rpc, sink = served()
    rpc.handle({"jsonrpc": "2.0", "id": 2, "method": "count", "params": {"maxTurns": "many"}})
    reply = await sink.next()
    assert reply["error"] == {"code": -32602,
                              "message": "Invalid params: Expected `int`, got `str` - at `$.maxTurns`"}


async def test_a_crashing_handler_becomes_an_internal_error(served: Callable[[], tuple[Rpc, Sink]]) -> None:
    rpc, sink = served()
    rpc.handle({"jsonrpc": "2.0", "id": 3, "method": "crash"})
    reply = await sink.next()
    error = reply["error"]
    assert isinstance(error, dict) and error["code"] == -32603
    assert "the handler broke" in str(error["message"]) + str(error.get("data", ""))
    rpc.handle({"jsonrpc": "2.0", "id": 4, "method": "count"})
    assert (await sink.next())["result"] == {"turnsLeft": 0}


async def test_unknown_methods_are_answered_and_unknown_notifications_ignored(
        served: Callable[[], tuple[Rpc, Sink]]) -> None:
    rpc, sink = served()
    rpc.handle({"jsonrpc": "2.0", "method": "tools/explode"})
    rpc.handle({"jsonrpc": "2.0", "id": 5, "method": "tools/explode"})
    assert await sink.next() == {"jsonrpc": "2.0", "id": 5,
                                 "error": {"code": -32601, "message": "Method Not Found: tools/explode"}}
    assert sink.bodies == []


async def test_cancel_request_stops_that_request_only(served: Callable[[], tuple[Rpc, Sink]]) -> None:
    rpc, sink = served()
    started = anyio.Event()
    cleaned_up: list[str] = []

    @rpc.method("wait", Params)
    async def wait(params: Params) -> Result:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned_up.append("wait")
        return Result(turns_left=0)

    rpc.handle({"jsonrpc": "2.0", "id": "w", "method": "wait"})
    with anyio.fail_after(10):
        await started.wait()
    rpc.cancel(7)  # no such request: nothing happens
    rpc.cancel("w")
    assert await sink.next() == {"jsonrpc": "2.0", "id": "w",
                                 "error": {"code": -32800, "message": 'Request with id "w" is canceled'}}
    assert cleaned_up == ["wait"]
    rpc.handle({"jsonrpc": "2.0", "id": 6, "method": "count"})
    assert (await sink.next())["result"] == {"turnsLeft": 0}


async def test_a_method_name_is_registered_once(served: Callable[[], tuple[Rpc, Sink]]) -> None:
    rpc, _ = served()
    with pytest.raises(ValueError, match="'count' is registered twice"):
        rpc.notification("count", Params)(lambda params: None)


def test_the_jsonrpc_mode_starts_without_pygls() -> None:
    """pygls and lsprotocol cost about 0.3 s and 20 MiB at start-up; only `--mode lsp` needs them."""
    code = ("import sys, pi_rpc.modes.cli, pi_rpc.modes.jsonrpc.server; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pygls', 'lsprotocol', 'cattrs'}))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"

"""The pygls facade: typed params, Structs out, crashes become errors (issue 4)."""

from __future__ import annotations

import anyio
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


def make() -> tuple[Rpc, Sink]:
    sink = Sink()
    rpc = Rpc(sink)

    @rpc.method("count", Params)
    async def count(params: Params) -> Result:
        return Result(turns_left=params.max_turns - 1)

    @rpc.method("crash", Params)
    async def crash(params: Params) -> None:
        raise RuntimeError("the handler broke")

    return rpc, sink


async def test_struct_results_go_out_camel_cased() -> None:
    rpc, sink = make()
    rpc.handle({"jsonrpc": "2.0", "id": 1, "method": "count", "params": {"maxTurns": 5}})
    assert await sink.next() == {"jsonrpc": "2.0", "id": 1, "result": {"turnsLeft": 4}}


async def test_absent_params_use_the_defaults() -> None:
    rpc, sink = make()
    rpc.handle({"jsonrpc": "2.0", "id": "a", "method": "count"})
    assert await sink.next() == {"jsonrpc": "2.0", "id": "a", "result": {"turnsLeft": 0}}


async def test_wrong_params_name_the_field() -> None:
    rpc, sink = make()
    rpc.handle({"jsonrpc": "2.0", "id": 2, "method": "count", "params": {"maxTurns": "many"}})
    reply = await sink.next()
    assert reply["error"] == {"code": -32602,
                              "message": "Invalid params: Expected `int`, got `str` - at `$.maxTurns`"}


async def test_a_crashing_handler_becomes_an_internal_error() -> None:
    rpc, sink = make()
    rpc.handle({"jsonrpc": "2.0", "id": 3, "method": "crash"})
    reply = await sink.next()
    error = reply["error"]
    assert isinstance(error, dict) and error["code"] == -32603
    assert "the handler broke" in str(error["message"]) + str(error.get("data", ""))
    rpc.handle({"jsonrpc": "2.0", "id": 4, "method": "count"})
    assert (await sink.next())["result"] == {"turnsLeft": 0}

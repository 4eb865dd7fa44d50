"""The JSON-RPC dispatcher: typed params, Structs out, crashes become errors (protocol/PROTOCOL.md,
"Errors"), one task per request that `$/cancelRequest` cancels, and no pygls on the way."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.agent.agent import AgentBusyError
from pi_rpc.modes.jsonrpc.errors import Busy
from pi_rpc.modes.jsonrpc.protocol import BUSY, NO_MODEL, NOT_FOUND
from pi_rpc.modes.jsonrpc.rpc import Rpc
from pi_rpc.session.compaction.planning import CompactionError
from pi_rpc.session.session import ModelNotFoundError, NoModelError, SessionNotFoundError
from pi_rpc.session.user_bash import BashBusyError

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


class StrictBusyError(AgentBusyError):
    """A refusal the table does not name: it answers as its base class does."""


@pytest.mark.parametrize(
    ("refusal", "code"),
    [
        (AgentBusyError("A run is in progress"), BUSY),
        (BashBusyError("A bash command is already running"), BUSY),
        (CompactionError("Nothing to compact"), BUSY),
        (StrictBusyError("A run is in progress"), BUSY),
        (NoModelError(), NO_MODEL),
        (ModelNotFoundError("Model not found: x/y"), NOT_FOUND),
        (SessionNotFoundError("Session not found: s1"), NOT_FOUND),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
async def test_a_session_refusal_is_answered_with_its_code_and_text(refusal: Exception, code: int) -> None:
    """errors.SESSION_ERRORS: whichever method the refusal comes out of, the client sees the same
    code and the session's own words, not a -32603 with a traceback."""
    sink = Sink()
    async with anyio.create_task_group() as tasks:
        rpc = Rpc(sink, tasks)

        @rpc.method("refuse", Params)
        async def refuse(params: Params) -> None:
            raise refusal

        rpc.handle({"jsonrpc": "2.0", "id": 7, "method": "refuse"})
        assert await sink.next() == {"jsonrpc": "2.0", "id": 7, "error": {"code": code, "message": str(refusal)}}


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
    assert reply["error"] == {"code": -32602, "message": "Invalid params: Expected `int`, got `str` - at `$.maxTurns`"}


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
    served: Callable[[], tuple[Rpc, Sink]],
) -> None:
    rpc, sink = served()
    rpc.handle({"jsonrpc": "2.0", "method": "tools/explode"})
    rpc.handle({"jsonrpc": "2.0", "id": 5, "method": "tools/explode"})
    assert await sink.next() == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": -32601, "message": "Method Not Found: tools/explode"},
    }
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
    assert await sink.next() == {
        "jsonrpc": "2.0",
        "id": "w",
        "error": {"code": -32800, "message": 'Request with id "w" is canceled'},
    }
    assert cleaned_up == ["wait"]
    rpc.handle({"jsonrpc": "2.0", "id": 6, "method": "count"})
    assert (await sink.next())["result"] == {"turnsLeft": 0}


async def test_a_method_name_is_registered_once(served: Callable[[], tuple[Rpc, Sink]]) -> None:
    rpc, _ = served()
    with pytest.raises(ValueError, match="'count' is registered twice"):
        rpc.notification("count", Params)(lambda params: None)


def test_the_jsonrpc_mode_starts_without_pygls() -> None:
    """pygls and lsprotocol cost about 0.3 s and 20 MiB at start-up; only `--mode lsp` needs them."""
    code = (
        "import sys, pi_rpc.cli, pi_rpc.modes.jsonrpc.server; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pygls', 'lsprotocol', 'cattrs'}))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


async def test_a_request_cancelled_in_the_same_read_never_runs(served: Callable[[], tuple[Rpc, Sink]]) -> None:
    """Both arrive in one chunk of stdin, so the cancel is handled before the request's task starts."""
    rpc, sink = served()
    ran: list[int] = []

    @rpc.method("record", Params)
    async def record(params: Params) -> None:
        ran.append(params.max_turns)

    rpc.handle({"jsonrpc": "2.0", "id": 9, "method": "record"})
    rpc.cancel(9)
    assert (await sink.next())["error"] == {"code": -32800, "message": 'Request with id "9" is canceled'}
    assert ran == []


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("request"), st.sampled_from(["ok", "wait", "boom", "busy"])),
        st.tuples(st.just("cancel"), st.integers(min_value=0, max_value=12)),
        st.tuples(st.just("tick"), st.just("")),
    ),
    max_size=25,
)
_CODES: dict[str, set[int | None]] = {
    "ok": {None, -32800},
    "wait": {-32800},
    "boom": {-32603, -32800},
    "busy": {-32002, -32800},
}


@settings(max_examples=60, deadline=None)
@given(_OPS)
def test_every_request_is_answered_once_whatever_the_cancels(ops: list[tuple[str, str | int]]) -> None:
    async def run() -> tuple[dict[int, str], set[int], list[dict[str, object]]]:
        async with anyio.create_task_group() as tasks:
            sink = Sink()
            rpc = Rpc(sink, tasks)
            for kind in _CODES:
                rpc.method(kind, Params)(_HANDLERS[kind])
            kinds: dict[int, str] = {}
            cancelled: set[int] = set()
            for op, arg in ops:
                if op == "request":
                    kinds[len(kinds)] = str(arg)
                    rpc.handle({"jsonrpc": "2.0", "id": len(kinds) - 1, "method": arg})
                elif op == "cancel":
                    cancelled.add(int(arg))
                    rpc.cancel(int(arg))
                else:
                    await anyio.lowlevel.checkpoint()
            for msg_id in kinds:  # what is still waiting ends now
                cancelled.add(msg_id)
                rpc.cancel(msg_id)
            with anyio.fail_after(10):
                while len(sink.bodies) < len(kinds):
                    await sink.arrived.wait()
                    sink.arrived = anyio.Event()
            await anyio.sleep(0.01)  # a second answer to anything would arrive by now
        return kinds, cancelled, sink.bodies

    kinds, cancelled, replies = anyio.run(run)
    assert sorted(int(str(reply["id"])) for reply in replies) == sorted(kinds)
    for reply in replies:
        msg_id = int(str(reply["id"]))
        error = reply.get("error")
        code = error["code"] if isinstance(error, dict) else None
        assert code in _CODES[str(kinds[msg_id])], reply
        assert code != -32800 or msg_id in cancelled, reply


async def _ok(params: Params) -> Result:
    return Result(turns_left=params.max_turns)


async def _wait(params: Params) -> None:
    await anyio.sleep_forever()


async def _boom(params: Params) -> None:
    raise RuntimeError("boom")


async def _busy(params: Params) -> None:
    raise Busy("a run is in progress")


_HANDLERS = {"ok": _ok, "wait": _wait, "boom": _boom, "busy": _busy}

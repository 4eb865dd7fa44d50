"""JSON-RPC dispatch: typed methods in, one task per request, replies and errors out.

Methods are registered once (`@rpc.method(name, Params)`; a name can be taken only once; the
daemon's handlers take both from `protocol.METHODS`) and receive their params already checked
against the Struct (-32602 names the field that does not fit). A session refusal a method lets
through is answered with its code from `errors.SESSION_ERRORS`; any other exception is -32603. Each
request runs as its own task in the daemon's task group, inside a cancel scope of its own, so
nothing queues behind a running prompt and `$/cancelRequest` cancels exactly that request (-32800).
Messages are encoded with msgspec (Structs go out as they are) and handed to the framed writer.
The daemon checks that a message is a JSON-RPC request or notification before it gets here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec

from pi_rpc.ai import encode_json
from pi_rpc.modes.envelope import RequestId
from pi_rpc.modes.jsonrpc.errors import (
    InternalError,
    InvalidParams,
    MethodNotFound,
    RequestCancelled,
    RpcError,
    session_error,
)

_log = logging.getLogger(__name__)

P = TypeVar("P", bound=msgspec.Struct)


class BodySink(Protocol):
    def send(self, body: bytes) -> None: ...


class _Method(msgspec.Struct, frozen=True):
    params_type: type[msgspec.Struct]
    run: Callable[[Any], Awaitable[Any]] | None = None  # a method: answered when it returns
    notify: Callable[[Any], Any] | None = None  # a notification: called inline, in arrival order


class Rpc:
    """The method table, the requests in flight, and the replies."""

    def __init__(self, sink: BodySink, tasks: anyio.abc.TaskGroup) -> None:
        self.sink = sink
        self._tasks = tasks
        self._methods: dict[str, _Method] = {}
        self._running: dict[RequestId, anyio.CancelScope] = {}

    def method(self, name: str, params_type: type[P]) -> Callable[[Callable[[P], Awaitable[Any]]], Any]:
        def register(fn: Callable[[P], Awaitable[Any]]) -> Any:
            self._add(name, _Method(params_type, run=fn))
            return fn

        return register

    def notification(self, name: str, params_type: type[P]) -> Callable[[Callable[[P], Any]], Any]:
        def register(fn: Callable[[P], Any]) -> Any:
            self._add(name, _Method(params_type, notify=fn))
            return fn

        return register

    def _add(self, name: str, method: _Method) -> None:
        if name in self._methods:
            raise ValueError(f"the JSON-RPC method {name!r} is registered twice")
        self._methods[name] = method

    def send_result(self, msg_id: RequestId | None, result: Any) -> None:
        self.sink.send(encode_json({"jsonrpc": "2.0", "id": msg_id, "result": result}))

    def send_error(self, msg_id: RequestId | None, error: RpcError) -> None:
        self.sink.send(encode_json({"jsonrpc": "2.0", "id": msg_id, "error": error.to_wire()}))

    def handle(self, message: dict[str, Any]) -> None:
        """Dispatch one request or notification (already checked to be well formed)."""
        name: str = message["method"]
        method = self._methods.get(name)
        is_request = "id" in message
        if method is None:
            if is_request:
                self.send_error(message["id"], MethodNotFound(f"Method Not Found: {name}"))
            else:
                _log.warning("ignored a notification of an unknown method %r", name)
            return
        if method.notify is not None:
            self._notify(name, method, message.get("params"))
            if is_request:  # a notification's method called as a request still gets its answer
                self.send_result(message["id"], None)
            return
        if is_request:
            # The scope is registered now, not when the task starts: a `$/cancelRequest` read from
            # the same chunk of input must find it.
            scope = self._running[message["id"]] = anyio.CancelScope()
            self._tasks.start_soon(self._answer, message["id"], name, method, message.get("params"), scope)
        else:  # a method sent as a notification runs all the same; nobody hears how it ended
            self._tasks.start_soon(self._run_unanswered, name, method, message.get("params"))

    def cancel(self, msg_id: RequestId) -> None:
        """`$/cancelRequest`: cancel that request's task; it answers -32800 once it has stopped."""
        scope = self._running.get(msg_id)
        if scope is None:
            _log.info("nothing to cancel: no request %r is running", msg_id)
            return
        scope.cancel(f"$/cancelRequest for {msg_id!r}")

    async def _answer(self, msg_id: RequestId, name: str, method: _Method, raw: Any, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                if scope.cancel_called:  # cancelled before it started: it never runs
                    await anyio.lowlevel.checkpoint()
                result = await self._call(name, method, raw)
            except RpcError as exc:
                self.send_error(msg_id, exc)
            else:
                self.send_result(msg_id, result)
            finally:
                if self._running.get(msg_id) is scope:
                    del self._running[msg_id]
        if scope.cancelled_caught:
            self.send_error(msg_id, RequestCancelled(f'Request with id "{msg_id}" is canceled'))

    async def _run_unanswered(self, name: str, method: _Method, raw: Any) -> None:
        try:
            await self._call(name, method, raw)
        except RpcError as exc:
            _log.warning("notification %s failed: %s", name, exc.message)

    async def _call(self, name: str, method: _Method, raw: Any) -> Any:
        assert method.run is not None
        params = _convert(method.params_type, raw)
        try:
            return await method.run(params)
        except RpcError:
            raise
        except Exception as exc:
            refusal = session_error(exc)  # errors.SESSION_ERRORS: the session said no, with a reason
            if refusal is not None:
                raise refusal from exc
            _log.exception("method %s failed", name)  # the traceback is for our log; the client gets the text
            raise InternalError.of(exc) from exc

    def _notify(self, name: str, method: _Method, raw: Any) -> None:
        assert method.notify is not None
        try:
            params = _convert(method.params_type, raw)
        except InvalidParams:
            _log.warning("notification %s with invalid params ignored", name)
            return
        method.notify(params)


def _convert(params_type: type[P], raw: Any) -> P:
    try:
        return msgspec.convert({} if raw is None else raw, params_type)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"Invalid params: {exc}") from exc

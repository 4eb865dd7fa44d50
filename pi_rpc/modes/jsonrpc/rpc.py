"""The only module that knows pygls exists: a typed msgspec facade over its JSON-RPC protocol.

pygls does dispatch (one task per request, so nothing queues behind a running prompt),
`$/cancelRequest`, and error replies. We own the bytes: messages are encoded with msgspec (Structs
go out as they are, no `to_builtins` copy) and framed by our writer, and inbound params stay plain
dicts until `msgspec.convert` checks them against the method's params Struct (-32602 on failure).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

import msgspec
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCProtocol,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
)
from pygls.server import JsonRPCServer

from pi_rpc.ai.json_text import encode_json

_log = logging.getLogger(__name__)

P = TypeVar("P", bound=msgspec.Struct)



class BodySink(Protocol):
    def send(self, body: bytes) -> None: ...


class PiProtocol(JsonRPCProtocol):
    sink: BodySink | None = None

    def get_message_type(self, method: str) -> type | None:
        # Only $/cancelRequest is typed: the base class reads `params.id` from it.
        return lsp.CancelNotification if method == lsp.CANCEL_REQUEST else None

    def _send_data(self, data: Any) -> None:
        if not data or self.sink is None:
            return
        try:
            body = encode_json(self._to_wire(data))
        except (TypeError, msgspec.EncodeError):
            _log.exception("cannot encode an outgoing message")
            return
        self.sink.send(body)

    def _to_wire(self, data: Any) -> Any:
        if isinstance(data, JsonRPCResponseMessage):
            return {"jsonrpc": "2.0", "id": data.id, "result": data.result}
        if isinstance(data, JsonRPCNotification):
            return {"jsonrpc": "2.0", "method": data.method, "params": data.params}
        if isinstance(data, JsonRPCRequestMessage):
            return {"jsonrpc": "2.0", "id": data.id, "method": data.method, "params": data.params}
        wire = self._converter.unstructure(data)
        if isinstance(wire, dict):
            wire.setdefault("id", None)  # an error about an unreadable request still has "id": null
        return wire


def _keep_raw(obj: dict[str, Any], cls: type) -> Any:
    if cls is not JsonRPCResponseMessage:
        obj.setdefault("params", None)  # JSON-RPC 2.0 lets a client omit params
    else:
        obj.setdefault("result", None)
    return cls(**obj)  # params/result stay plain dicts, not pygls' namedtuples


def make_converter() -> Any:
    converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, _keep_raw)
    return converter


class Rpc:
    """Register typed methods; send notifications; feed decoded messages to pygls."""

    def __init__(self, sink: BodySink) -> None:
        self.server = JsonRPCServer(protocol_cls=PiProtocol, converter_factory=make_converter)
        self.protocol: PiProtocol = self.server.protocol  # type: ignore[assignment]
        self.protocol.sink = sink
        self.sink = sink

    def method(self, name: str, params_type: type[P]) -> Callable[[Callable[[P], Awaitable[Any]]], Any]:
        def register(fn: Callable[[P], Awaitable[Any]]) -> Any:
            async def handler(raw: Any) -> Any:  # NOT named `ls`: pygls would inject the server
                try:
                    params = msgspec.convert({} if raw is None else raw, params_type)
                except msgspec.ValidationError as exc:
                    raise JsonRpcInvalidParams(f"Invalid params: {exc}") from exc
                try:
                    return await fn(params)
                except JsonRpcException:
                    raise
                except Exception:
                    # pygls turns it into -32603 with the text; the traceback is for our log only.
                    _log.exception("method %s failed", name)
                    raise

            self.server.feature(name)(handler)
            return fn

        return register

    def notification(self, name: str, params_type: type[P]) -> Callable[[Callable[[P], Any]], Any]:
        def register(fn: Callable[[P], Any]) -> Any:
            def handler(raw: Any) -> None:
                try:
                    params = msgspec.convert({} if raw is None else raw, params_type)
                except msgspec.ValidationError:
                    _log.warning("notification %s with invalid params ignored", name)
                    return
                fn(params)

            self.server.feature(name)(handler)
            return fn

        return register

    def handle(self, message: dict[str, Any]) -> None:
        """Dispatch one decoded JSON-RPC message (already checked to be a JSON-RPC object)."""
        try:
            structured = self.protocol.structure_message(message)
        except JsonRpcException as exc:
            self.send_error(message.get("id"), exc)
            return
        self.protocol.handle_message(structured)

    def send_result(self, msg_id: Any, result: Any) -> None:
        self.sink.send(encode_json({"jsonrpc": "2.0", "id": msg_id, "result": result}))

    def send_error(self, msg_id: Any, error: JsonRpcException) -> None:
        payload: dict[str, Any] = {"code": error.code, "message": error.message}
        if error.data is not None:
            payload["data"] = error.data
        self.sink.send(encode_json({"jsonrpc": "2.0", "id": msg_id, "error": payload}))

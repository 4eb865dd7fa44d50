"""Requests to the LSP client with a deadline (modes/editor_requests.py), over pygls.

pygls' own `*_async` requests wait for as long as the client takes, and cancelling one cancels
the concurrent future pygls keeps for the answer, so a late answer then ends in pygls'
`InvalidStateError` traceback. Here the wait is on an event the future sets when it completes:
giving up (the deadline, or an abort of the run) leaves pygls' future alone, so a late answer
completes it and nobody hears of it, and tells the client with `$/cancelRequest` (LSP lets either
side send it) that it may drop the request.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import anyio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

from pi_rpc.modes.editor_requests import ClientRequestError, within

_log = logging.getLogger(__name__)

_ids = itertools.count(1)


async def request(server: LanguageServer, method: str, params: Any, seconds: float) -> Any:
    """The client's answer to `method`, structured as lsprotocol has it; EditorRequestError when
    the client answers with an error or not within `seconds`."""
    msg_id = f"pi-rpc-{next(_ids)}"
    future = server.protocol.send_request(method, params, msg_id=msg_id)
    answered = anyio.Event()
    loop = asyncio.get_running_loop()
    future.add_done_callback(lambda _: loop.call_soon_threadsafe(answered.set))
    try:
        await within(seconds, method, answered.wait())
    except BaseException:
        if not future.done():
            server.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
        raise
    try:
        return future.result()
    except JsonRpcException as exc:
        raise ClientFailed(method, exc) from exc


class ClientFailed(ClientRequestError):
    """The client answered a request of ours with an error."""

    def __init__(self, method: str, error: JsonRpcException) -> None:
        super().__init__(f"the editor failed {method}: {error.message}")
        self.code: int = error.code


__all__ = ["ClientFailed", "request"]

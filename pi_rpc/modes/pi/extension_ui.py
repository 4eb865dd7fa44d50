"""Approvals in Pi mode, through Pi's extension UI sub-protocol (`extension_ui_request` out,
`extension_ui_response` in), which Pi clients already render for Pi's own extensions.

An approval is a `confirm` dialog: yes runs the call, anything else (no, `cancelled`, an answer of
another kind) refuses it, as Pi reads a confirm. A confirm is yes/no, so "allow always" and a
reason cannot be given from here; `permissions.allow` rules in settings.json still apply. As in
Pi, an abort drops the dialog without telling the client (the run's own events end it), and an
answer to a dialog nobody waits for any more is ignored without a response line.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Literal

import anyio
import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.agent import ApprovalRequest
from pi_rpc.ai import Wire, encode_json
from pi_rpc.session import ApprovalDecision


class ConfirmRequest(Wire, tag_field="type", tag="extension_ui_request", kw_only=True):
    id: str
    method: Literal["confirm"] = "confirm"
    title: str
    message: str
    # Milliseconds until the daemon gives up (Pi clients may show a countdown); absent: no limit.
    timeout: int | UnsetType = UNSET


class ExtensionUiResponse(Wire, kw_only=True):
    """`{type: "extension_ui_response", id, value? | confirmed? | cancelled?}` (Pi's three forms)."""

    id: str
    value: str | UnsetType = UNSET
    confirmed: bool | UnsetType = UNSET
    cancelled: bool | UnsetType = UNSET


class _Dialog(msgspec.Struct):
    answered: anyio.Event = msgspec.field(default_factory=anyio.Event)
    response: ExtensionUiResponse | None = None


def confirm_text(request: ApprovalRequest) -> tuple[str, str]:
    """The dialog's title (the call in a few words) and message (what exactly it will do)."""
    preview = request.preview
    if preview.patch is not UNSET and preview.patch:
        details = preview.patch
    elif preview.command is not UNSET:
        details = preview.command
    else:
        details = encode_json(request.args).decode()
    return f"Allow this {request.tool_name} call?", f"{request.title}\n\n{details}"


class PiDialogs:
    """The confirm dialogs this daemon has open with its Pi client."""

    def __init__(self, send: Callable[[bytes], None], timeout: Callable[[], float | None]) -> None:
        self._send = send
        self._timeout = timeout
        self._open: dict[str, _Dialog] = {}

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        title, message = confirm_text(request)
        seconds = self._timeout()
        dialog_id = str(uuid.uuid4())
        dialog = self._open[dialog_id] = _Dialog()
        try:
            self._send(
                encode_json(
                    ConfirmRequest(
                        id=dialog_id,
                        title=title,
                        message=message,
                        timeout=round(seconds * 1000) if seconds is not None else UNSET,
                    )
                )
            )
            await dialog.answered.wait()
        finally:
            del self._open[dialog_id]
        response = dialog.response
        if response is not None and response.confirmed is True:
            return ApprovalDecision(outcome="allow")
        if response is not None and response.cancelled is True:
            return ApprovalDecision(outcome="reject", reason="the confirmation was cancelled")
        return ApprovalDecision(outcome="reject")

    def resolve(self, raw: object) -> bool:
        """Hand an `extension_ui_response` to its dialog; False when it is malformed or no dialog
        with its id is open (answered, aborted or never asked)."""
        try:
            response = msgspec.convert(raw, ExtensionUiResponse)
        except msgspec.ValidationError:
            return False
        dialog = self._open.get(response.id)
        if dialog is None or dialog.answered.is_set():
            return False
        dialog.response = response
        dialog.answered.set()
        return True


__all__ = ["ConfirmRequest", "ExtensionUiResponse", "PiDialogs", "confirm_text"]

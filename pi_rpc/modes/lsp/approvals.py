"""Asking the user before a tool runs, with `window/showMessageRequest` (the one question an LSP
server can put to the user): the call, its diff or command, and Allow / Allow always / Reject.
Dismissing the question rejects the call."""

from __future__ import annotations

from lsprotocol import types as lsp
from msgspec import UNSET
from pygls.lsp.server import LanguageServer

from pi_rpc.agent import ApprovalRequest
from pi_rpc.session import ApprovalDecision, Approver

ALLOW, ALLOW_ALWAYS, REJECT = "Allow", "Allow always", "Reject"
# A message request is shown whole by some editors: keep long diffs from filling the screen.
MAX_DETAIL_CHARS = 2000


def message_approver(server: LanguageServer) -> Approver | None:
    """An approver for a client that can answer message requests with actions; else None."""
    window = server.client_capabilities.window
    if window is None or window.show_message is None:
        return None

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        answer = await server.window_show_message_request_async(
            lsp.ShowMessageRequestParams(
                type=lsp.MessageType.Warning,
                message=approval_text(request),
                actions=[lsp.MessageActionItem(title=t) for t in (ALLOW, ALLOW_ALWAYS, REJECT)],
            )
        )
        title = answer.title if answer is not None else None
        if title == ALLOW:
            return ApprovalDecision(outcome="allow")
        if title == ALLOW_ALWAYS:
            return ApprovalDecision(outcome="allowAlways")
        return ApprovalDecision(outcome="reject", reason="The user rejected this call in the editor.")

    return approve


def approval_text(request: ApprovalRequest) -> str:
    preview = request.preview
    detail = preview.patch if preview.patch is not UNSET else preview.command
    text = f"Pi asks to run {request.title}"
    if detail is not UNSET and detail:
        text += f":\n{detail[:MAX_DETAIL_CHARS]}"
    return text

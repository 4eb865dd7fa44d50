"""Asking the user before a tool runs, with `window/showMessageRequest` (the one question an LSP
server can put to the user): the call, its diff or command, and Allow / Allow always / Reject.
Dismissing the question rejects the call.

Every client is asked: `window/showMessageRequest` is base protocol, and the client capability
`window.showMessage` only concerns extra properties of the actions (Emacs' lsp-mode answers the
request and declares nothing). A question unanswered within the `question` deadline
(modes/editor_requests.py) rejects the call, and so does a client that fails the request; either
way a `window/showMessage` says why, since the user may never have seen the question. When the
user set `permissions.timeoutSeconds`, that is the deadline instead: the gate rejects the call
then, and the run says so (modes/lsp/runs.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from lsprotocol import types as lsp
from msgspec import UNSET
from pygls.lsp.server import LanguageServer

from pi_rpc.agent import ApprovalRequest
from pi_rpc.modes.editor_requests import EditorDeadlines
from pi_rpc.modes.lsp.client_requests import ClientFailed, request
from pi_rpc.session import ApprovalDecision, Approver
from pi_rpc.tools import EditorRequestError

ALLOW, ALLOW_ALWAYS, REJECT = "Allow", "Allow always", "Reject"
# A message request is shown whole by some editors: keep long diffs from filling the screen.
MAX_DETAIL_CHARS = 2000

Notice = Callable[[str, lsp.MessageType], None]


def message_approver(
    server: LanguageServer, deadlines: EditorDeadlines, notice: Notice, configured: Callable[[], float | None]
) -> Approver:
    """An approver that asks through `window/showMessageRequest`, whatever the client declared;
    `configured`: the user's `permissions.timeoutSeconds`, which replaces the default deadline."""

    async def approve(approval: ApprovalRequest) -> ApprovalDecision:
        params = lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Warning,
            message=approval_text(approval),
            actions=[lsp.MessageActionItem(title=t) for t in (ALLOW, ALLOW_ALWAYS, REJECT)],
        )
        deadline = deadlines.question if configured() is None else math.inf  # the gate's, then
        try:
            answer = await request(server, lsp.WINDOW_SHOW_MESSAGE_REQUEST, params, deadline)
        except ClientFailed as exc:
            why = f"the editor could not ask ({exc})"
        except EditorRequestError:
            why = f"no answer to the question within {deadlines.question:g} s"
        else:
            title = answer.title if isinstance(answer, lsp.MessageActionItem) else None
            if title == ALLOW:
                return ApprovalDecision(outcome="allow")
            if title == ALLOW_ALWAYS:
                return ApprovalDecision(outcome="allowAlways")
            return ApprovalDecision(outcome="reject", reason="The user rejected this call in the editor.")
        notice(f"Pi did not run {approval.title}: {why}.", lsp.MessageType.Warning)
        return ApprovalDecision(outcome="reject", reason=why)

    return approve


def approval_text(request: ApprovalRequest) -> str:
    preview = request.preview
    detail = preview.patch if preview.patch is not UNSET else preview.command
    text = f"Pi asks to run {request.title}"
    if detail is not UNSET and detail:
        text += f":\n{detail[:MAX_DETAIL_CHARS]}"
    return text

"""An approval that keeps only some hunks of an edit or write: check the answer, hand the tool the choice.

The approval request's preview numbers the change's hunks (`preview.hunks`); the answer names the
ones to keep. Keeping every hunk is a plain approval, keeping none rejects the call (its result
shows the rejected hunks), and anything else gives the tool a `HunkSelection`, so it writes the file
with only those hunks applied and tells the model which were rejected. An answer naming hunks the
request does not have refuses the call: the client and the daemon disagree about the diff.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UNSET

from pi_rpc.agent import ApprovalRequest, BeforeToolCall, BlockCall, HunkSelection
from pi_rpc.tools import all_rejected_text


def select_hunks(
    request: ApprovalRequest, kept: Sequence[int], reason: str | None, call: BeforeToolCall
) -> BlockCall | None:
    """None: the call runs, with `call.hunks` set when only some hunks are kept. Else its refusal."""
    hunks = request.preview.hunks
    tool = request.tool_name
    if hunks is UNSET:
        return BlockCall(
            reason=f"Tool {tool} was not run: the client kept hunks of a call that has none to choose from."
        )
    unknown = sorted(set(kept) - {hunk.index for hunk in hunks})
    if unknown:
        return BlockCall(
            reason=f"Tool {tool} was not run: the client kept hunk(s) {', '.join(map(str, unknown))}, "
            f"which the change does not have (it has {len(hunks)})."
        )
    chosen = frozenset(kept)
    if not chosen:
        named = request.args.get("path") if isinstance(request.args, dict) else None
        path = named if isinstance(named, str) else request.title  # as the model wrote it
        return BlockCall(reason=all_rejected_text(tool, path, hunks, reason))
    if len(chosen) < len(hunks):
        call.hunks = HunkSelection(kept=chosen, hunks=tuple(hunks))
    return None


__all__ = ["select_hunks"]

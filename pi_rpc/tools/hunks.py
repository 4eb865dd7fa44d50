"""Hunk selection: the hunks of a change an approval shows, and the change with only some kept.

A change (the whole file before and after an edit or write) is numbered into the `@@` hunks of its
unified patch (`edit_diff.patch_hunks`, the same grouping the preview's `patch` is written with),
from 0. The user may keep any subset; `apply_hunks` gives the file with exactly those hunks applied
and every other line as it was. The tool result then tells the model which hunks landed and shows
it the rejected ones, so it does not make them again unasked.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pi_rpc.agent import DiffHunk, HunkSelection, ToolError
from pi_rpc.ai import Wire, displayable


class HunkOutcome(Wire, kw_only=True):
    """`details.hunks` of a call the user approved in part: the kept and rejected hunk indices,
    and the rejected hunks themselves."""

    kept: list[int]
    rejected: list[int]
    rejected_hunks: list[DiffHunk]


class HunkDetails(Wire, kw_only=True):
    """`details` of a write approved in part (an edit's details carry `hunks` beside its diff)."""

    hunks: HunkOutcome


def diff_hunks(old: str, new: str) -> list[DiffHunk]:
    """The hunks of the patch from `old` to `new`, numbered from 0, texts made displayable."""
    # The diff is loaded by the first change that is shown or applied, not with the tools'
    # definitions (the edit and write tools' details name the Structs above).
    from pi_rpc.tools.edit_diff import diff_lines, hunk_text, patch_hunks

    hunks = patch_hunks(diff_lines(old, new))
    return [
        DiffHunk(
            index=index,
            old_start=hunk.old_start,
            old_lines=hunk.old_count,
            new_start=hunk.new_start,
            new_lines=hunk.new_count,
            text=displayable(hunk_text(hunk)),
        )
        for index, hunk in enumerate(hunks)
    ]


def apply_hunks(old: str, new: str, kept: Collection[int]) -> str:
    """`old` with only the `kept` hunks of its change to `new` applied."""
    from pi_rpc.tools.edit_diff import diff_lines, patch_hunks

    parts = diff_lines(old, new)
    hunk_of_part = {part: index for index, hunk in enumerate(patch_hunks(parts)) for part in hunk.parts}
    out: list[str] = []
    for number, part in enumerate(parts):
        applied = hunk_of_part.get(number) in kept
        if not (part.added or part.removed) or (part.removed and not applied) or (part.added and applied):
            out.extend(part.lines)
    return "".join(out)


def apply_selection(selection: HunkSelection, old: str, new: str, path: str) -> str:
    """The file with the selected hunks of `old` -> `new` applied. Raises when the change is no
    longer the one the user chose from (the file changed since the approval): nothing is written."""
    current = diff_hunks(old, new)
    if [hunk.text for hunk in current] != [hunk.text for hunk in selection.hunks]:
        raise ToolError(
            f"Could not apply the hunks the user kept to {path}: the file changed after the approval, "
            "so its diff is no longer the one the user chose from. Nothing was written."
        )
    return apply_hunks(old, new, selection.kept)


def _numbers(indices: Sequence[int]) -> str:
    """Hunk numbers as the model reads them: from 1, as a reader counts the `@@` headers."""
    return ", ".join(str(index + 1) for index in indices)


def _shown(hunks: Sequence[DiffHunk]) -> str:
    return "\n".join(f"Hunk {hunk.index + 1}:\n{hunk.text}" for hunk in hunks)


def hunk_outcome(selection: HunkSelection) -> HunkOutcome:
    rejected = [hunk for hunk in selection.hunks if hunk.index not in selection.kept]
    return HunkOutcome(kept=sorted(selection.kept), rejected=[hunk.index for hunk in rejected], rejected_hunks=rejected)


def partial_result_text(path: str, outcome: HunkOutcome, total: int) -> str:
    """What the model reads after a change the user approved in part."""
    return (
        f"Successfully applied {len(outcome.kept)} of {total} hunk(s) to {path}. "
        f"The user kept hunk(s) {_numbers(outcome.kept)} and rejected hunk(s) {_numbers(outcome.rejected)}, "
        "which were not applied (the file does not contain them). Do not make the rejected changes "
        f"again unless the user asks for them.\n\n{_shown(outcome.rejected_hunks)}"
    )


def all_rejected_text(tool: str, path: str, hunks: Sequence[DiffHunk], reason: str | None) -> str:
    """The error result of a call whose every hunk the user rejected: nothing was written."""
    why = f": {reason}" if reason else ""
    return (
        f"The user rejected this {tool} call{why}. They rejected every hunk of the change to {path}, "
        f"so nothing was written. Do not make these changes again unless the user asks for them.\n\n"
        f"{_shown(hunks)}"
    )


__all__ = [
    "HunkDetails",
    "HunkOutcome",
    "all_rejected_text",
    "apply_hunks",
    "apply_selection",
    "diff_hunks",
    "hunk_outcome",
    "partial_result_text",
]

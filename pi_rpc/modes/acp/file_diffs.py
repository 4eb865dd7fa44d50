"""Whole-file ACP diffs for edit and write: what an editor's diff viewer needs to place a change.

ACP's `diff` content is the whole old and new text of a file: the client diffs the two itself
(Zed, Emacs agent-shell). An edit's snippet (its `oldText`/`newText`) in their place is drawn at
line 1, with "no newline at end of file" markers wherever the snippet stops mid-file.

The whole file is computed the one way the edit tool computes it: `apply_edits_to_normalized_content`
over the file's text with the BOM off and line endings as LF, as the permission request's preview
has it. The text is the file on the disk, read when the call is announced and again when it
starts running, or, for a file the editor serves (`fs/read_text_file`), the text the editor
handed the tool (`EditorTexts`), unsaved changes included. Before the run the diff is a forecast;
after it, it is shown only if its unified patch is the one the tool reports (`details.patch`), so
a file the tool saw differently (changed in between, say) never shows a made-up whole file. Where
the whole file is not known, or is over `EDIT_WHOLE_FILE_MAX_BYTES`, the diff is the edit's snippets,
and the call's location carries the real line of the first change once the edit reports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import UNSET

from pi_rpc.agent import ToolError
from pi_rpc.ai import displayable
from pi_rpc.tools import (
    Edit,
    EditorFiles,
    apply_edits_to_normalized_content,
    generate_unified_patch,
    normalize_to_lf,
    strip_bom,
)

# A bound on what is read and sent twice per call (old and new text): over it, a write's diff
# has no old text.
WHOLE_FILE_MAX_BYTES = 1024 * 1024
# An edit's whole file is computed on the event loop when the call is announced (the edits
# applied: about 25 ms at this size) and at its end (applied again, and the patch to compare:
# about 50 ms); both grow with the file, 350 ms in all at 1 MiB. Over it, the snippets.
EDIT_WHOLE_FILE_MAX_BYTES = 256 * 1024


class FileChange(msgspec.Struct, frozen=True):
    """A file's whole text before (None: a new file) and after a call."""

    old_text: str | None
    new_text: str


def read_text(absolute: str) -> str | None:
    """The file's text from the disk; None for a missing file, one over the bound or not UTF-8."""
    try:
        with open(absolute, "rb") as file:
            data = file.read(WHOLE_FILE_MAX_BYTES + 1)
    except OSError:
        return None
    if len(data) > WHOLE_FILE_MAX_BYTES:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class EditorTexts:
    """The session's editor files (the router's `EditorFiles`), remembering the last text the editor
    handed out for each file: what an edit of an editor buffer read, unsaved changes included."""

    def __init__(self, files: EditorFiles) -> None:
        self._files = files
        self._read: dict[str, str] = {}

    async def read_text_file(self, path: str) -> str:
        text = await self._files.read_text_file(path)
        if len(text.encode("utf-8", errors="surrogateescape")) <= WHOLE_FILE_MAX_BYTES:
            self._read[path] = text
        else:
            self._read.pop(path, None)
        return text

    async def write_text_file(self, path: str, content: str) -> None:
        await self._files.write_text_file(path, content)

    def forget(self, path: str) -> None:
        self._read.pop(path, None)

    def last_read(self, path: str) -> str | None:
        return self._read.get(path)


def edit_pairs(args: Mapping[str, Any]) -> list[Edit]:
    """An edit call's replacements, in the shapes models send (a list, or the legacy top level)."""
    edits = args.get("edits")
    if not isinstance(edits, list):
        edits = [args]
    return [
        Edit(edit["oldText"], edit["newText"])
        for edit in edits
        if isinstance(edit, dict) and isinstance(edit.get("oldText"), str) and isinstance(edit.get("newText"), str)
    ]


def planned_change(tool_name: str, args: Mapping[str, Any], before: str | None) -> FileChange | None:
    """What the call makes of `before` (the file as read; None: no file): a write's content over
    it, or the edited file; None when the edits do not apply to that text or there is none."""
    if tool_name == "write" and isinstance(args.get("content"), str):
        return FileChange(before, args["content"])
    path, edits = args.get("path"), edit_pairs(args)
    if tool_name != "edit" or before is None or not isinstance(path, str) or not edits:
        return None
    if len(before.encode("utf-8", errors="surrogateescape")) > EDIT_WHOLE_FILE_MAX_BYTES:
        return None
    try:
        base, new = apply_edits_to_normalized_content(normalize_to_lf(strip_bom(before)[1]), edits, path)
    except ToolError:
        return None
    return FileChange(displayable(base), displayable(new))


def _detail(details: Any, wire_name: str, attribute: str) -> Any:
    """A result detail, from the tool's Struct (a live run) or its JSON form (a stored one)."""
    if isinstance(details, Mapping):
        return details.get(wire_name)
    value = getattr(details, attribute, None)
    return None if value is UNSET else value


def first_changed_line(details: Any) -> int | None:
    line = _detail(details, "firstChangedLine", "first_changed_line")
    return line if isinstance(line, int) and line >= 1 else None


def confirmed_change(tool_name: str, args: Mapping[str, Any], before: str | None, details: Any) -> FileChange | None:
    """After a successful call, the planned change if it is what the tool did: for an edit, the
    one whose unified patch is the result's; None when the text the tool edited was another."""
    change = planned_change(tool_name, args, before)
    if change is None or tool_name != "edit":
        return change
    patch = _detail(details, "patch", "patch")
    path = args.get("path")
    if not isinstance(patch, str) or not isinstance(path, str) or change.old_text is None:
        return None
    return change if displayable(generate_unified_patch(path, change.old_text, change.new_text)) == patch else None


__all__ = [
    "EDIT_WHOLE_FILE_MAX_BYTES",
    "WHOLE_FILE_MAX_BYTES",
    "FileChange",
    "confirmed_change",
    "first_changed_line",
    "planned_change",
    "read_text",
]

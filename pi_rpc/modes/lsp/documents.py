"""The editor's open documents as the agent's files (the `EditorFiles` seam of tools/editor_files.py).

A read of an open document gets its unsaved text from pygls' workspace (kept by didOpen/didChange);
a write to one becomes a `workspace/applyEdit`, so the editor changes the buffer and its undo
reverts the agent's edit. Files the editor has not opened are read and written on disk.
"""

from __future__ import annotations

import os
import re
from typing import Protocol

from lsprotocol import types as lsp
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import ServerTextPosition
from pygls.workspace.workspace import Workspace

from pi_rpc.agent import ToolError
from pi_rpc.tools import local_read_operations, local_write_operations


class EditApplier(Protocol):
    async def __call__(self, params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult: ...


class OpenDocuments:
    """`EditorFiles` over the documents an LSP client opened."""

    def __init__(self, workspace: Workspace, apply_edit: EditApplier) -> None:
        self._workspace = workspace
        self._apply_edit = apply_edit
        self._disk_read = local_read_operations()
        self._disk_write = local_write_operations()
        # Per document, its text before our edits and after each one, until the editor's didChange
        # reports the last: clients send didChange after (Neovim up to 150 ms after) answering
        # applyEdit, and may fold several edits into one.
        self._states: dict[str, list[str]] = {}

    def find(self, path: str) -> TextDocument | None:
        wanted = os.path.realpath(path)
        document: TextDocument
        for document in self._workspace.text_documents.values():
            if os.path.realpath(document.path) == wanted:
                return document
        return None

    def text_of(self, document: TextDocument) -> str:
        """The document's text, our edits included even before the editor reports them."""
        reported = document.source
        states = self._states.get(document.uri)
        if states is None:
            return reported
        if reported in states[:-1]:
            return states[-1]  # the editor has not reported our last edit yet
        del self._states[document.uri]  # caught up, or the user changed it meanwhile: theirs wins
        return reported

    async def read_text_file(self, path: str) -> str:
        document = self.find(path)
        if document is None:
            return (await self._disk_read.read_file(path)).decode("utf-8", errors="surrogateescape")
        return self.text_of(document)

    async def write_text_file(self, path: str, content: str) -> None:
        document = self.find(path)
        if document is None:
            await self._disk_write.write_file(path, content)
            return
        current = self.text_of(document)
        edit = minimal_edit(document, current, content)
        if edit is None:
            return
        result = await self._apply_edit(
            lsp.ApplyWorkspaceEditParams(edit=lsp.WorkspaceEdit(changes={document.uri: [edit]}), label="Pi")
        )
        if not result.applied:
            reason = f": {result.failure_reason}" if result.failure_reason else ""
            raise ToolError(f"The editor did not apply the change to {path}{reason}")
        self._states.setdefault(document.uri, [current]).append(content)


# LSP knows three line ends; str.splitlines knows eight (U+2028 among them).
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lsp_lines(text: str) -> list[str]:
    """`text` split into lines as an LSP client counts them, each with its line end."""
    return _LINE.findall(text)


def minimal_edit(document: TextDocument, old: str, new: str) -> lsp.TextEdit | None:
    """One TextEdit replacing only the lines that differ (cursor and marks elsewhere stay put);
    None when nothing differs."""
    if old == new:
        return None
    old_lines, new_lines = lsp_lines(old), lsp_lines(new)
    prefix = 0
    while prefix < min(len(old_lines), len(new_lines)) and old_lines[prefix] == new_lines[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old_lines), len(new_lines)) - prefix and old_lines[-1 - suffix] == new_lines[-1 - suffix]:
        suffix += 1
    end_line = len(old_lines) - suffix
    start = lsp.Position(line=prefix, character=0)
    if end_line == len(old_lines) and old_lines and not old_lines[-1].endswith(("\n", "\r")):
        # The old text has no final newline: its end is on the last line, not the one after.
        last = ServerTextPosition(len(old_lines) - 1, len(old_lines[-1]))
        end = document.position_codec.position_to_client_units(old_lines, last)
    else:
        end = lsp.Position(line=end_line, character=0)
    replacement = "".join(new_lines[prefix : len(new_lines) - suffix])
    return lsp.TextEdit(range=lsp.Range(start=start, end=end), new_text=replacement)

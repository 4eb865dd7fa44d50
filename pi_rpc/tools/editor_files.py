"""Editor-owned files: read, edit and write see what the user sees in the editor.

A client that serves files (its open buffers, unsaved changes included) plugs an `EditorFiles` into
the session's `FileRouter`; the router hands the three tools operations that ask the editor for
text files and fall back to the disk for everything else. Images and binary files always come from
the disk (an editor buffer holds text), and so do bash, grep, find and ls, which see the disk only.
Until a client plugs in, and for clients that never do, the operations are exactly the local ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import anyio

from pi_rpc.tools.edit import EditOperations, local_edit_operations
from pi_rpc.tools.read import ReadOperations, local_read_operations
from pi_rpc.tools.write import WriteOperations, local_write_operations

# A NUL in the first block is how git and ripgrep tell a binary file too.
_BINARY_PROBE = 8192


class EditorRequestError(RuntimeError):
    """The editor failed a request of ours, or gave no usable answer in time: the tool call fails
    with this text (and an approval preview goes without a diff)."""


class EditorFiles(Protocol):
    """The client side: text of a file as the editor has it, and a write the editor applies;
    either raises EditorRequestError when the editor fails it or does not answer in time."""

    async def read_text_file(self, path: str) -> str: ...

    async def write_text_file(self, path: str, content: str) -> None: ...


async def _is_text_file(path: str) -> bool:
    """True for a file an editor can hold as text; a file that does not exist yet counts as text."""
    from pi_rpc.tools.images import detect_supported_image_mime_type_from_file  # with the first file

    def probe() -> bool:
        try:
            if detect_supported_image_mime_type_from_file(path) is not None:
                return False
            with open(path, "rb") as file:
                return b"\0" not in file.read(_BINARY_PROBE)
        except FileNotFoundError:
            return True
        except OSError:
            return False

    return await anyio.to_thread.run_sync(probe)


class FileRouter:
    """Where the read, edit and write tools of one session get and put file contents."""

    def __init__(self) -> None:
        self.editor: EditorFiles | None = None
        # Told (path, text) after each write of the read/edit/write tools, wherever it went: the
        # session's checkpoints learn what the agent left a file as without reading it back.
        self.write_listeners: list[Callable[[str, str], None]] = []
        self._local_read = local_read_operations()
        self._local_edit = local_edit_operations()
        self._local_write = local_write_operations()

    async def _editor_for(self, path: str) -> EditorFiles | None:
        editor = self.editor
        if editor is None or not await _is_text_file(path):
            return None
        return editor

    async def editor_for(self, path: str) -> EditorFiles | None:
        """The editor when it serves `path` (a text file while one is plugged in), else None: the
        session's checkpoints read and restore a file where the tools read and write it."""
        return await self._editor_for(path)

    async def _read_bytes(self, path: str) -> bytes:
        editor = await self._editor_for(path)
        if editor is None:
            return await self._local_read.read_file(path)
        # surrogateescape: the same decoding edit uses on the way back, so bytes round-trip.
        return (await editor.read_text_file(path)).encode("utf-8", errors="surrogateescape")

    async def _write_text(self, path: str, content: str) -> None:
        editor = await self._editor_for(path)
        if editor is None:
            await self._local_write.write_file(path, content)
        else:
            await editor.write_text_file(path, content)
        for listener in self.write_listeners:
            listener(path, content)

    async def _read_existing(self, path: str) -> str | None:
        editor = await self._editor_for(path)
        if editor is None or not await anyio.Path(path).exists():
            assert self._local_write.read_existing is not None
            return await self._local_write.read_existing(path)
        return await editor.read_text_file(path)

    def read_operations(self) -> ReadOperations:
        return ReadOperations(
            read_file=self._read_bytes,
            access=self._local_read.access,
            detect_image_mime_type=self._local_read.detect_image_mime_type,
        )

    def edit_operations(self) -> EditOperations:
        return EditOperations(read_file=self._read_bytes, write_file=self._write_text, access=self._local_edit.access)

    def write_operations(self) -> WriteOperations:
        return WriteOperations(
            write_file=self._write_text, mkdir=self._local_write.mkdir, read_existing=self._read_existing
        )


__all__ = ["EditorFiles", "EditorRequestError", "FileRouter"]

"""In-document chat: a `.pi.md` file holds a conversation, the user's turns under `### You` and
Pi's under `### Pi`. The code action "Send to Pi" sends the last user block; the answer streams
into the document below it, appended by `workspace/applyEdit` as the text arrives. An edit the
editor refuses or does not answer in time stops the writing (said once in the log), never the run;
at `shutdown` the stream is stopped, not flushed: the editor answers no more requests.
"""

from __future__ import annotations

import logging

import anyio

from pi_rpc.agent import ToolError
from pi_rpc.modes.lsp.documents import OpenDocuments
from pi_rpc.tools import EditorRequestError

_log = logging.getLogger(__name__)

CHAT_SUFFIX = ".pi.md"
SEND_CHAT = "pi.chat"
USER_HEADING = "### You"
PI_HEADING = "### Pi"


def is_chat(path: str) -> bool:
    return path.endswith(CHAT_SUFFIX)


def last_user_block(text: str) -> str:
    """The text under the last `### You` heading (the whole file when it has none)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == USER_HEADING]
    block = lines[starts[-1] + 1 :] if starts else lines
    return "\n".join(block).strip()


class ChatStream:
    """Appends text to the end of a chat document, one applyEdit at a time, in arrival order;
    what arrives while an edit is in flight goes out with the next one."""

    def __init__(self, documents: OpenDocuments, path: str) -> None:
        self._documents = documents
        self._path = path
        self._pending: list[str] = []
        self._wake = anyio.Event()
        self._closed = False
        self._stopped = False  # nothing more is written: shutdown, or the editor failed an edit

    def feed(self, text: str) -> None:
        if text:
            self._pending.append(text)
            self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    def stop(self) -> None:
        """Close without writing what is left."""
        self._stopped = True
        self._pending.clear()
        self.close()

    async def pump(self, heading: str | None = None) -> None:
        """Append what is fed, in order, until closed; `heading` first."""
        if heading is not None:
            await self.heading(heading)
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            chunk = "".join(self._pending)
            self._pending.clear()
            if chunk:
                await self.append(chunk)
            if self._closed and not self._pending:
                return

    async def append(self, text: str) -> None:
        document = self._documents.find(self._path)
        if document is None or self._stopped:  # the user closed the chat: the answer stays in the session only
            return
        try:
            await self._documents.write_text_file(self._path, self._documents.text_of(document) + text)
        except (EditorRequestError, ToolError) as exc:
            self._stopped = True
            _log.warning("stopped writing to the chat %s: %s", self._path, exc)

    async def heading(self, heading: str) -> None:
        """`heading` on a line of its own after one blank line, then a blank line."""
        document = self._documents.find(self._path)
        if document is None or self._stopped:
            return
        text = self._documents.text_of(document)
        gap = "" if not text or text.endswith("\n\n") else "\n" if text.endswith("\n") else "\n\n"
        await self.append(f"{gap}{heading}\n\n")

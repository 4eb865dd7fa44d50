"""The `.pi.md` chat's stream (modes/lsp/chat.py) without a clock: an answer goes into the document
in pieces as it arrives, one applyEdit at a time, and what arrives while an edit is in flight goes
out with the next one. The in-process LSP tests see the same on a real run, but how many pieces
there are there depends on how fast the machine is; here the test decides when each edit lands."""

from __future__ import annotations

from typing import cast

import anyio
import pytest

from pi_rpc.modes.lsp.chat import ChatStream
from pi_rpc.modes.lsp.documents import OpenDocuments

pytestmark = pytest.mark.anyio

PATH = "/ws/notes.pi.md"


class HeldEdits:
    """An editor whose applyEdit answers only when the test lets the next one land."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.writes: list[str] = []
        self.landed = anyio.Event()
        self._release = anyio.Event()

    def find(self, path: str) -> object | None:
        return self if path == PATH else None

    def text_of(self, document: object) -> str:
        return self.text

    async def write_text_file(self, path: str, content: str) -> None:
        assert content.startswith(self.text)  # only ever appended to
        self.writes.append(content[len(self.text) :])
        await self._release.wait()
        self._release = anyio.Event()
        self.text = content
        self.landed.set()
        self.landed = anyio.Event()

    async def let_one_land(self) -> None:
        landed = self.landed
        self._release.set()
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            await landed.wait()


async def test_each_piece_goes_out_as_it_arrives_and_what_comes_meanwhile_joins_the_next_edit() -> None:
    editor = HeldEdits("### You\nWhat is greet.py for?\n")
    stream = ChatStream(cast(OpenDocuments, editor), PATH)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(stream.pump, "### Pi")
        await editor.let_one_land()  # the heading
        stream.feed("It says ")
        await editor.let_one_land()  # alone: nothing else had arrived
        stream.feed("hello ")
        await anyio.wait_all_tasks_blocked()  # its edit is in flight now
        stream.feed("to ")
        stream.feed("you.")
        await editor.let_one_land()
        await editor.let_one_land()  # the two pieces that came meanwhile, together
        stream.close()
    assert editor.writes == ["\n### Pi\n\n", "It says ", "hello ", "to you."]
    assert editor.text == "### You\nWhat is greet.py for?\n\n### Pi\n\nIt says hello to you."

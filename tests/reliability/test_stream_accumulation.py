"""Streamed text accumulates in linear work (`AssistantBuilder`, ai/stream.py): 320k deltas took
over a minute and stalled the daemon because every delta copied the whole text block (`block.text +=
delta`)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import TextContent, ThinkingContent


class CopyCountingStr(str):
    """A str that counts the characters copied when something is concatenated onto it."""

    copied = 0

    def __add__(self, other: str) -> CopyCountingStr:
        CopyCountingStr.copied += len(self) + len(other)
        return CopyCountingStr(str(self) + other)


@pytest.mark.parametrize("kind", ["text", "thinking"])
def test_each_delta_costs_work_of_its_own_size_not_of_the_block(kind: str) -> None:
    builder = AssistantBuilder(FAUX_MODEL)
    append = builder.text_delta if kind == "text" else builder.thinking_delta
    append(0, "start ")
    block = builder.message.content[0]
    # Whatever the block holds now counts every copy made by concatenating onto it.
    if isinstance(block, TextContent):
        block.text = CopyCountingStr(block.text)
    else:
        assert isinstance(block, ThinkingContent)
        block.thinking = CopyCountingStr(block.thinking)
    CopyCountingStr.copied = 0
    deltas = [f"w{i % 1000} " for i in range(20_000)]
    for delta in deltas:
        append(0, delta)
    message = builder.finish()
    total = len("start " + "".join(deltas))
    # `+=` on the block copied ~total²/2 characters (about 10**10 here); linear work copies each
    # character a bounded number of times.
    assert CopyCountingStr.copied <= 2 * total
    final = message.content[0]
    assert isinstance(final, TextContent | ThinkingContent)
    assert (final.text if isinstance(final, TextContent) else final.thinking) == "start " + "".join(deltas)


@settings(max_examples=60)
@given(st.lists(st.tuples(st.sampled_from(["text", "thinking", "read"]), st.text(max_size=8)), max_size=40))
def test_the_message_always_holds_exactly_what_streamed(steps: list[tuple[str, str]]) -> None:
    """Reads between deltas (as providers and the loop do) see the text so far, and the final
    message holds every delta in order, whatever the interleaving."""
    builder = AssistantBuilder(FAUX_MODEL)
    streamed = {"text": "", "thinking": ""}
    for kind, delta in steps:
        if kind == "read":
            for block in builder.message.content:
                if isinstance(block, TextContent):
                    assert block.text == streamed["text"]
                elif isinstance(block, ThinkingContent):
                    assert block.thinking == streamed["thinking"]
            continue
        (builder.text_delta if kind == "text" else builder.thinking_delta)(kind, delta)
        streamed[kind] += delta
    ended = builder.fail("error", "cut short") if steps and steps[-1][0] == "read" else builder.finish()
    texts = {"text": "", "thinking": ""}
    for block in ended.content:
        if isinstance(block, TextContent):
            texts["text"] = block.text
        elif isinstance(block, ThinkingContent):
            texts["thinking"] = block.thinking
    assert texts == streamed

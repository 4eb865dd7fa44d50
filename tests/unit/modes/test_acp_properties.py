"""Property tests (seeded by the suite's hypothesis profile) for what ACP clients reassemble:
terminal output sent as deltas, and prompts joined from blocks."""

from __future__ import annotations

import re

from acp.schema import ResourceContentBlock, TextContentBlock
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.types import TextContent
from pi_rpc.modes.acp.agent import prompt_input
from pi_rpc.modes.acp.terminal_output import TerminalStreams
from pi_rpc.tools.mcp_config import tool_name

_LINES = st.lists(
    st.integers(min_value=0, max_value=10**6).map(lambda n: f"line {n}\n"), min_size=1, max_size=60, unique=True
)


@settings(max_examples=120, deadline=None)
@given(
    _LINES,
    st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=20),
    st.integers(min_value=6, max_value=30),
)
def test_deltas_of_tail_snapshots_add_up_to_the_whole_output(lines: list[str], steps: list[int], window: int) -> None:
    """Each snapshot is the last `window` lines so far (at most 5 new ones since the last), as
    bash's tail is; the client, appending each delta, sees every line once, in order."""
    streams = TerminalStreams()
    shown, count = "", 0
    for step in steps:
        count = min(len(lines), count + step)
        snapshot = "".join(lines[max(0, count - window) : count])
        meta = streams.output("c1", [TextContent(text=snapshot)])
        shown += meta["terminal_output"]["data"] if meta else ""
    assert shown == "".join(lines[:count])


_URIS = st.from_regex(r"file:///[a-z]{1,8}(/[a-z]{1,8}){0,2}\.[a-z]{1,3}", fullmatch=True)
_TEXTS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_URIS.map(lambda u: ("link", u)), _TEXTS.map(lambda t: ("text", t))), max_size=8))
def test_every_mention_reaches_the_model_whole_and_apart(parts: list[tuple[str, str]]) -> None:
    blocks = [
        ResourceContentBlock(type="resource_link", uri=value, name="x")
        if kind == "link"
        else TextContentBlock(type="text", text=value)
        for kind, value in parts
    ]
    text, _ = prompt_input(blocks)
    position = 0
    for kind, value in parts:
        found = text.find(value if kind == "text" else f"@{value}", position)
        assert found >= 0
        end = found + len(value) + (kind == "link")
        if kind == "link":  # nothing glued to it on either side
            assert found == 0 or text[found - 1].isspace()
            assert end == len(text) or text[end].isspace()
        position = end


@given(st.text(max_size=80), st.text(max_size=80))
def test_mcp_tool_names_are_valid_for_every_provider(server: str, tool: str) -> None:
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name(server or "s", tool or "t"))

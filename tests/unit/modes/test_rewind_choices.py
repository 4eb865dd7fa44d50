"""The rewind argument form (`/rewind 2 files force`, `pi.rewind 2 files force`) and the choice
labels ACP and LSP editors show (pi_rpc/modes/rewind_choices.py)."""

from __future__ import annotations

from hypothesis import example, given, seed, settings
from hypothesis import strategies as st

from pi_rpc.modes.rewind_choices import RESTORE_CHOICES, RewindArgs, checkpoint_label, parse_rewind_args
from pi_rpc.session import CheckpointFile, CheckpointInfo

TARGETS = [target for target, _ in RESTORE_CHOICES]


@seed(20261202)
@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=10_000),
    st.sampled_from([None, *TARGETS]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_the_argument_form_reads_back_what_was_written(
    number: int, target: str | None, force: bool, force_first: bool, upper: bool
) -> None:
    tail = [*([target] if target else []), *(["force"] if force else [])]
    if force_first:
        tail.reverse()
    words = [str(number), *(word.upper() if upper else word for word in tail)]
    assert parse_rewind_args(words) == RewindArgs(number, target, force)  # type: ignore[arg-type]


@seed(20261202)
@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12).filter(lambda w: not w.isspace()), max_size=4))
@example(["²", "files"])  # a digit to str.isdigit, not to int()
@example(["٣"])
def test_any_other_words_get_the_usage_never_a_guess(words: list[str]) -> None:
    parsed = parse_rewind_args(words)
    if isinstance(parsed, RewindArgs):  # only the form itself parses
        assert words[0].isascii() and int(words[0]) == parsed.number >= 1
        assert {w.lower() for w in words[1:]} <= {*TARGETS, "force"} and len(words) <= 3
    else:
        assert parsed.startswith("Usage: rewind <n>")


def test_a_label_names_the_message_and_its_first_files() -> None:
    info = CheckpointInfo(
        entry_id="e",
        text="fix the\n  tests " + "x" * 80,
        timestamp="",
        files=[CheckpointFile(path=f"/ws/f{i}.py", change="modified") for i in range(5)],
        not_captured=[],
    )
    label = checkpoint_label(3, info, "/ws")
    assert label.startswith("3. “fix the tests xxx") and "…”: " in label
    assert label.endswith(": f0.py (modified), f1.py (modified), f2.py (modified), +2 more")
    empty = CheckpointInfo(entry_id="e", text="hi", timestamp="", files=[], not_captured=[])
    assert checkpoint_label(1, empty, "/ws") == "1. “hi”: no file changes"

"""The table of expected differences from Pi 1.6.0 cannot go stale (tests/e2e/pi16_differences.py)."""

from __future__ import annotations

import pytest

from tests.e2e.pi16_differences import Differences


def settled(expected: dict[str, str], *comparisons: tuple[str, bool]) -> str | None:
    """The failure `settle` reports after `comparisons` (row, matched), or None when it passes."""
    differences = Differences(expected)
    for row, matched in comparisons:
        differences.check(row, matched, f"{row} compared")
    try:
        differences.settle()
    except pytest.fail.Exception as failure:
        return str(failure)
    return None


def test_a_listed_difference_that_still_differs_and_an_unlisted_row_that_matches_pass() -> None:
    assert settled({"P6": "no disposition"}, ("P6", False), ("P6", True), ("P2", True)) is None


def test_a_listed_difference_that_no_longer_occurs_fails_naming_its_entry() -> None:
    assert settled({"P6": "no disposition"}, ("P6", True), ("P6", True)) == (
        "P6 now matches Pi 1.6.0: remove its entry (no disposition)"
    )


def test_an_unlisted_difference_fails() -> None:
    assert settled({}, ("C4", False)) == "C4: C4 compared differs from Pi 1.6.0"


def test_a_listed_row_never_compared_fails() -> None:
    assert settled({"P13": "no usage"}) == "P13 was never compared: remove its entry"

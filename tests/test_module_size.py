"""Modules of pi_rpc stay small enough to hold one job. Past `WARN_AT` lines a module is named in
the test summary's warnings: a prompt to look for a second job in it before the next feature lands
there, not a reason to split one idea across files. Past `MAX_LINES` the test fails: no one idea
here needs that many."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pi_rpc"
WARN_AT = 900
MAX_LINES = 1500


class LongModuleWarning(UserWarning):
    """A module past `WARN_AT` lines."""


def module_sizes() -> dict[str, int]:
    return {
        str(path.relative_to(PACKAGE.parent)): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }


def long_modules(sizes: dict[str, int], limit: int) -> dict[str, int]:
    return {path: lines for path, lines in sizes.items() if lines > limit}


# The suite turns warnings into errors (pyproject's filterwarnings); this one is a report, not a failure.
@pytest.mark.filterwarnings("always::UserWarning")
def test_no_module_grows_past_the_hard_limit_and_long_ones_are_named() -> None:
    sizes = module_sizes()
    assert "pi_rpc/session/session.py" in sizes  # the walk still finds the package
    for path, lines in sorted(long_modules(sizes, WARN_AT).items()):
        warnings.warn(
            f"{path} has {lines} lines (over {WARN_AT}): does it hold more than one job?",
            LongModuleWarning,
            stacklevel=1,
        )
    assert long_modules(sizes, MAX_LINES) == {}


def test_a_module_at_a_limit_is_within_it() -> None:
    sizes = {"a.py": WARN_AT, "b.py": WARN_AT + 1, "c.py": MAX_LINES + 1}
    assert long_modules(sizes, WARN_AT) == {"b.py": WARN_AT + 1, "c.py": MAX_LINES + 1}
    assert long_modules(sizes, MAX_LINES) == {"c.py": MAX_LINES + 1}

"""No module of pi_rpc grows past 600 lines (the house rule): past that, a module holds more than
one job, and the split is easier before the next feature lands in it than after."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pi_rpc"
MAX_LINES = 600


def test_every_module_is_at_most_600_lines() -> None:
    sizes = {
        path.relative_to(PACKAGE.parent): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert sizes
    assert {str(path): lines for path, lines in sizes.items() if lines > MAX_LINES} == {}

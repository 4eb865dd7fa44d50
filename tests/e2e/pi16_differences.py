"""Where pi-rpc is known to differ from Pi 1.6.0, the reference, and the check that keeps each such
list true.

A test against Pi 1.6.0 keeps a small table of its expected differences, keyed by the row of the
change list from 0.73.1 to 1.6.0 that each belongs to (P6, C4, ...; docs/BEHAVIOUR.md names the
rows), and passes every comparison through `Differences.check`. A listed row must still differ
in at least one of its comparisons, so the test fails when the fix lands until the entry is
removed; every comparison under a row not listed must match. `Differences.settle` also fails
when a listed row was never compared, so no entry outlives the comparison it excused.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest


class Differences:
    def __init__(self, expected: Mapping[str, str]) -> None:
        self.expected = expected  # row -> what pi-rpc does instead of what Pi 1.6.0 does
        self.compared: dict[str, list[tuple[bool, str]]] = {}  # row -> (matched, what) per comparison

    def check(self, row: str, matches: bool, what: str) -> bool:
        """Note that pi-rpc did (`matches`) or did not do what Pi 1.6.0 does in `what`, under `row`;
        `matches` is returned, for a test whose next step needs it."""
        self.compared.setdefault(row, []).append((matches, what))
        return matches

    def settle(self) -> None:
        """Fail with every unexpected difference, every listed row whose comparisons all matched,
        every listed row never compared."""
        problems = []
        for row, comparisons in self.compared.items():
            if row not in self.expected:
                problems += [f"{row}: {what} differs from Pi 1.6.0" for matched, what in comparisons if not matched]
            elif all(matched for matched, _ in comparisons):
                problems.append(f"{row} now matches Pi 1.6.0: remove its entry ({self.expected[row]})")
        problems += [f"{row} was never compared: remove its entry" for row in self.expected if row not in self.compared]
        if problems:
            pytest.fail("\n".join(problems), pytrace=False)

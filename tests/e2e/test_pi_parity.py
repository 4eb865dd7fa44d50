"""pi-rpc's `--mode rpc` prints what Pi 1.6.0, the reference, printed, scenario by scenario
(protocol/PROTOCOL.md, "Pi's own RPC mode"): the same events in the same order, each kind of line
with the same keys.

The transcripts in tests/e2e/pi_transcripts/ were recorded from `pi --mode rpc` of
@earendil-works/pi-coding-agent 1.6.0 (`python -m tests.e2e.pi_parity record`); both agents ran
against the same loopback server and scripted replies. Events are compared after dropping ids,
times and payloads (`normalise`), keys as each kind's dotted key paths (pi_parity_shapes.py).
Where pi-rpc still prints what Pi 0.73.1 printed, the difference is listed in `EXPECTED` under its
row; the test fails once a listed difference is gone (tests/e2e/pi16_differences.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .pi16_differences import Differences
from .pi_parity import SCENARIOS, TRANSCRIPTS, Json, normalise, pi_rpc_argv, run
from .pi_parity_shapes import SEQUENCE_ROWS, row_of, shapes

pytestmark = pytest.mark.e2e

EXPECTED = {
    "P2": "message_update's usage is the message's as it stands when the line is written: before the provider's "
    "usage arrives it has no reasoning or cost.totalFromProvider (Pi 1.6.0 reads the loopback reply whole first)",
    "P3": "toolcall_delta adds arguments (what the partial JSON parses to), pi-rpc's own for its editors",
    "P17": "no docs section, which names Pi's installed README, docs and examples: pi-rpc installs none "
    "(a decision, spec 15.12)",
}
# The sequence difference no row's events explain, by scenario.
UNEXPLAINED_SEQUENCE: dict[str, str] = {}


def sequence(lines: list[Json], set_aside: list[str]) -> list[Json]:
    kept = map(normalise, lines)
    return [line for line in kept if not any(SEQUENCE_ROWS[row](line) for row in set_aside)]


def compare_sequences(name: str, pi: list[Json], ours: list[Json], differences: Differences) -> None:
    rows = list(SEQUENCE_ROWS)
    whole = UNEXPLAINED_SEQUENCE.get(name, "sequence")
    if not differences.check(whole, sequence(pi, rows) == sequence(ours, rows), f"{name}'s events"):
        return  # what else differs would hide whether a row's events do
    for row in rows:
        if any(SEQUENCE_ROWS[row](line) for line in map(normalise, pi + ours)):
            others = [other for other in rows if other != row]
            differences.check(row, sequence(pi, others) == sequence(ours, others), f"{name}'s {row} events")


def compare_keys(name: str, pi: list[Json], ours: list[Json], differences: Differences) -> None:
    pis, our_shapes = shapes(pi), shapes(ours)
    for line_kind in pis.keys() & our_shapes.keys():
        differing = pis[line_kind] ^ our_shapes[line_kind]
        for path in sorted(differing):
            differences.check(row_of(line_kind, path) or "keys", False, f"{name}: {path} in {line_kind}")
        for path in sorted((pis[line_kind] & our_shapes[line_kind]) - differing):
            if (row := row_of(line_kind, path)) is not None:
                differences.check(row, True, f"{name}: {path} in {line_kind}")


def test_pi_rpc_prints_what_pi_16_printed_but_the_listed_differences(tmp_path: Path) -> None:
    differences = Differences(EXPECTED)
    for scenario in SCENARIOS:
        recorded = TRANSCRIPTS / f"{scenario.name}.jsonl"
        pi = [json.loads(line) for line in recorded.read_text().splitlines()]
        folder = tmp_path / scenario.name
        ours = run(scenario, pi_rpc_argv(), folder, dict(os.environ) | {"HOME": str(folder / "home")})
        compare_sequences(scenario.name, pi, ours, differences)
        compare_keys(scenario.name, pi, ours, differences)
    differences.settle()

"""pi-rpc's `--mode rpc` prints what real Pi printed, scenario by scenario (protocol/PROTOCOL.md,
"Pi's own RPC mode").

The transcripts in tests/e2e/pi_transcripts/ were recorded from `pi --mode rpc` of
@mariozechner/pi-coding-agent 0.73.1 (`python -m tests.e2e.pi_parity record`); both agents ran
against the same loopback server and scripted replies. Compared after dropping ids, times and
payloads (`normalise`), and the events current Pi adds to that release (`TARGET_ONLY`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .pi_parity import SCENARIOS, TRANSCRIPTS, Scenario, comparable, pi_rpc_argv, run

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_event_sequence_matches_pis(scenario: Scenario, tmp_path: Path) -> None:
    recorded = [json.loads(line) for line in (TRANSCRIPTS / f"{scenario.name}.jsonl").read_text().splitlines()]
    ours = run(scenario, pi_rpc_argv(), tmp_path, dict(os.environ) | {"HOME": str(tmp_path / "home")})
    assert comparable(ours) == comparable(recorded)

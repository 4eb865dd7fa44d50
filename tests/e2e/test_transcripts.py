"""The golden transcripts in protocol/transcripts/ still describe what the daemon does."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_rpc.demo.transcripts import ANSWERED, TRANSCRIPTS, load, run_scenario

pytestmark = pytest.mark.e2e

PATHS = sorted(TRANSCRIPTS.glob("*.jsonl")) + sorted(ANSWERED.glob("*.jsonl"))


def test_there_are_transcripts() -> None:
    assert {p.stem for p in PATHS} >= {"initialize", "tour", "errors", "approvals"}


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_replay_matches(path: Path, framing: str) -> None:
    meta, expected = load(path)
    requests = [(method, params) for method, params in meta["requests"]]
    actual, _ = run_scenario(requests, framing=framing, answers=meta.get("answers"))
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert got == want, f"entry {index} differs"

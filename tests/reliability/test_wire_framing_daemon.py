"""The daemon over real pipes keeps answering after broken frames (protocol/PROTOCOL.md,
"Framing")."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from pi_rpc.demo.rpc_client import DaemonClient

from .frame_mutations import BETWEEN_FRAMES, frame, mutate

pytestmark = pytest.mark.e2e

Spawn = Callable[..., DaemonClient]

MUTATED_STREAMS = 40


def answered(client: DaemonClient, msg_id: int, timeout: float = 60) -> bool:
    """Whether `msg_id` gets its result (the guard only stops a hang: a daemon that skipped the
    frame never answers it, one that is slow answers it late)."""
    try:
        return "result" in client.response(msg_id, timeout)
    except TimeoutError:
        return False


def started(client: DaemonClient) -> DaemonClient:
    """Once the daemon answers: a fresh daemon on a loaded machine takes seconds to import itself,
    and those seconds must not count against the first frame's guard."""
    assert client.request("state")["isStreaming"] is False
    return client


def test_every_broken_frame_from_the_issue_is_skipped_and_the_next_request_answered(spawn: Spawn) -> None:
    client = started(spawn(script=None))
    missed = []
    for number, (name, junk) in enumerate(sorted(BETWEEN_FRAMES.items()), start=1000):
        client.send_raw(frame(number - 500) + junk + frame(number))
        if not answered(client, number):
            missed.append(name)
    assert missed == []
    assert client.close() == 0
    reports = [line for line in client.stderr_lines if "framing error" in line]
    assert any("skipped bytes" in line and "b'hello" in line for line in reports)


def test_forty_randomly_mutated_frames_never_cost_the_frame_after_them(spawn: Spawn) -> None:
    client = started(spawn(script=None))
    rng = random.Random(9)
    lost = []
    for stream in range(MUTATED_STREAMS):
        mutated = mutate(frame(5000 + stream), rng)
        client.send_raw(mutated + frame(6000 + stream))
        if not answered(client, 6000 + stream):
            lost.append(mutated)
    assert lost == []
    assert client.close() == 0


def test_plain_json_at_an_lsp_daemon_names_the_jsonl_flag_once_and_serving_goes_on(spawn: Spawn) -> None:
    client = started(spawn(script=None))
    client.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "state"}\n')
    client.send_raw(b'{"jsonrpc": "2.0", "id": 2, "method": "state"}\n')
    assert client.wait_for_log("--framing jsonl")  # said while the client waits, not at EOF
    client.send_raw(frame(3))
    assert answered(client, 3)
    assert client.close() == 0
    hints = [line for line in client.stderr_lines if "--framing jsonl" in line]
    assert len(hints) == 1 and "looks like JSON lines" in hints[0]

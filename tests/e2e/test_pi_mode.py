"""`--mode pi`: Pi's own RPC protocol, as a Pi client speaks it (spec 18.1-18.6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import descendants, still_running, watch
from .pi_mode_client import PiClient

pytestmark = pytest.mark.e2e


@pytest.fixture
def pi(workspace: Path, tmp_path: Path) -> Iterator[PiClient]:
    client = PiClient(workspace, tmp_path)
    yield client
    if client.proc.poll() is None:
        client.proc.kill()
        client.proc.wait()
    for pipe in (client.proc.stdin, client.proc.stdout):
        if pipe is not None and not pipe.closed:
            pipe.close()


def test_prompt_while_streaming_needs_a_streaming_behaviour_and_abort_kills_the_tool(pi: PiClient) -> None:
    """spec 15.13 (session level) and 16.5 abort."""
    assert pi.call({"id": "1", "type": "prompt", "message": "slow"})["success"] is True
    pi.wait_for(
        lambda line: line.get("type") == "tool_execution_update" and "started" in str(line["partialResult"]["content"])
    )
    busy = pi.call({"id": "2", "type": "prompt", "message": "again"})
    assert busy["success"] is False and busy["error"] == (
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    )
    queued = pi.call({"id": "3", "type": "prompt", "message": "later", "streamingBehavior": "followUp"})
    assert queued["success"] is True
    assert pi.call({"id": "4", "type": "clear_queue"})["data"] == {"steering": [], "followUp": ["later"]}
    tool_processes = watch(descendants(pi.proc.pid))
    assert tool_processes
    assert pi.call({"id": "5", "type": "abort"})["success"] is True  # answered once idle
    assert still_running(tool_processes) == 0
    assert pi.call({"id": "6", "type": "get_state"})["data"]["isStreaming"] is False
    assert pi.close() == 0

"""`pi-rpc --mode rpc` driven by Pi 0.73.1's own `RpcClient` (npm `@mariozechner/pi-coding-agent`) under
Node: what a client written for the last release under @mariozechner still gets. Pi 1.6.0's client,
the reference, is tests/e2e/test_pi16_rpc_client.py.

The client is installed by `npm ci` from tests/pi_client/package-lock.json into that folder's
git-ignored node_modules, once (tests/node_packages.py); tests/pi_client/drive.mjs calls every
command method and prints what each resolved to.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.node_packages import PI_CLIENT, ensure_installed

from .rpc_client_runs import assert_answers_both_clients_see, drive

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pi_client() -> Path:
    return ensure_installed(PI_CLIENT)


def test_every_command_method_of_pis_client_gets_an_answer(pi_client: Path, workspace: Path, tmp_path: Path) -> None:
    result = drive(pi_client, workspace, tmp_path / "home")
    calls = result["calls"]
    # Every call resolves: nothing times out, nothing is "unknown".
    failed = {name: call["error"] for name, call in calls.items() if not call["ok"]}
    assert failed == {}
    # Named before the first message makes it, as Pi 1.6.0 reports it; the same file after.
    state = calls["getState"]["value"]
    assert state["sessionFile"] == calls["stateAfterPrompt"]["value"]["sessionFile"]
    events = calls["promptAndWait"]["value"]
    assert events[0] == "agent_start" and events[-1] == "agent_end" and "tool_execution_end" in events
    assert_answers_both_clients_see(result, workspace)

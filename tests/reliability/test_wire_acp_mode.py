"""`--mode acp` over real pipes: a boolean id is an invalid request there too (protocol/PROTOCOL.md,
"Agent Client Protocol")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import SCRIPTS, daemon_env

pytestmark = pytest.mark.e2e


def test_a_boolean_id_is_refused_and_the_next_request_served(workspace: Path, tmp_path: Path) -> None:
    initialize = {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}}
    lines = [json.dumps({**initialize, "id": True}), json.dumps({**initialize, "id": 2})]
    command = [
        sys.executable,
        "-m",
        "pi_rpc",
        "--mode",
        "acp",
        "--cwd",
        str(workspace),
        "--script",
        str(SCRIPTS / "e2e.json"),
    ]
    proc = subprocess.run(
        command,
        input="\n".join(lines).encode() + b"\n",
        capture_output=True,
        env=daemon_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0
    refused, served = (json.loads(line) for line in proc.stdout.splitlines())
    assert refused["id"] is None and refused["error"]["code"] == -32600
    assert served["id"] == 2 and served["result"]["protocolVersion"] == 1

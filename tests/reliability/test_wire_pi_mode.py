"""`--mode pi` over real pipes: every bad line gets an error response and the next line is served."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pi_rpc.modes.framing import DEFAULT_MAX_MESSAGE_BYTES
from tests.e2e.conftest import SCRIPTS, daemon_env

pytestmark = pytest.mark.e2e

BAD_LINES = [
    b"not json",
    b"\xff\xfe",
    b"[]",
    b"null",
    b'{"type": {}}',
    b'{"type": "get_state", "id": [1]}',
    b'{"type": "prompt", "id": "p"}',
    b"Content-Length: 40",  # an LSP client at a JSON-lines daemon
    b'{"type": "get_state", "id": true}',
    b'{"type": "get_state", "x": "' + b"y" * DEFAULT_MAX_MESSAGE_BYTES + b'"}',  # over the limit
]


def test_each_bad_line_is_answered_and_the_next_line_served(workspace: Path, tmp_path: Path) -> None:
    lines = []
    for number, bad in enumerate(BAD_LINES):
        lines += [bad, b'{"type": "get_state", "id": "after-%d"}' % number]
    command = [
        sys.executable,
        "-m",
        "pi_rpc",
        "--mode",
        "pi",
        "--cwd",
        str(workspace),
        "--script",
        str(SCRIPTS / "e2e.json"),
    ]
    proc = subprocess.run(
        command,
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        env=daemon_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0
    responses = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(responses) == 2 * len(BAD_LINES)
    for number in range(len(BAD_LINES)):
        bad, after = responses[2 * number], responses[2 * number + 1]
        assert bad["success"] is False and bad.get("id") in (None, "p"), BAD_LINES[number][:40]
        assert after["success"] is True and after["id"] == f"after-{number}"

"""pi-rpc doctor run as a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import daemon_env


def doctor(home: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = daemon_env(home)
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "-m", "pi_rpc", "doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd=home,
    )

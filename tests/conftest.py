from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.node_packages import IN_CI, real_pi

# Wall-clock deadlines flake on a loaded 2-core machine; CI replays a fixed example set so a red
# run is reproducible, while developers keep exploring new examples.
settings.register_profile(
    "pi-rpc",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=IN_CI,
)
settings.load_profile("pi-rpc")


@pytest.fixture
def anyio_backend() -> str:
    # pygls runs on asyncio; the daemon does too. Do not parametrise over trio.
    return "asyncio"


@pytest.fixture(scope="session")
def pi_cli() -> Path:
    """Real Pi's CLI, installed once (tests/node_packages.py): skipped without Node, failed in CI."""
    return real_pi()

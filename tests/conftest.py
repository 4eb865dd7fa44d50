from __future__ import annotations

import signal

import pytest
from hypothesis import HealthCheck, settings

from tests.node_packages import IN_CI, real_pi16

# Wall-clock deadlines flake on a loaded 2-core machine; CI replays a fixed example set so a red
# run is reproducible, while developers keep exploring new examples.
settings.register_profile(
    "pi-rpc",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=IN_CI,
)
settings.load_profile("pi-rpc")


# A suite started as a background job (`make test &`, a script's `&`, some CI runners) inherits
# SIGINT and SIGQUIT ignored, and every program a test starts would too: the demo would then
# shrug off the Ctrl-C its test sends. Tests start programs as a terminal's foreground job does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture
def anyio_backend() -> str:
    # pygls runs on asyncio; the daemon does too. Do not parametrise over trio.
    return "asyncio"


@pytest.fixture(scope="session")
def pi16() -> list[str]:
    """The command that runs real Pi 1.6.0, the reference, installed once (tests/node_packages.py):
    skipped without Node 24, failed in CI."""
    return real_pi16()

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    # pygls runs on asyncio; the daemon does too. Do not parametrise over trio.
    return "asyncio"

from __future__ import annotations

# The end-to-end tests' fixtures (a `pi-rpc` subprocess over real pipes, a loopback provider), and
# the provider tests' scripted loopback HTTP server with its near-zero retry sleeps.
from tests.e2e.conftest import spawn, workspace
from tests.e2e.test_daemon_providers import loopback
from tests.providers.conftest import fast_retries, sse_server

__all__ = ["fast_retries", "loopback", "spawn", "workspace", "sse_server"]

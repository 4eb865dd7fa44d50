from __future__ import annotations

# The end-to-end tests' fixtures: a `pi-rpc` subprocess over real pipes, and a loopback provider.
from tests.e2e.conftest import spawn, workspace
from tests.e2e.test_daemon_providers import loopback

__all__ = ["loopback", "spawn", "workspace"]

from __future__ import annotations

# The daemon fixtures of the end-to-end tests: a `pi-rpc` subprocess over real pipes.
from tests.e2e.conftest import spawn, workspace

__all__ = ["spawn", "workspace"]

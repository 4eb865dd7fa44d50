"""RunControl: one run's abort, as structured cancellation.

Every cancellable step of a run (the model stream, each tool call, each hook) runs inside a
CancelScope registered here. `abort()` marks the run aborted and cancels every registered scope;
a scope opened after the abort is born cancelled. The loop itself is never cancelled from outside:
it observes `aborted` at the points Pi does, so every run still ends with its results, `turn_end`
and exactly one `agent_end`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio


class RunControl:
    def __init__(self) -> None:
        self._aborted = False
        self._scopes: set[anyio.CancelScope] = set()

    @property
    def aborted(self) -> bool:
        return self._aborted

    def abort(self) -> None:
        self._aborted = True
        for scope in list(self._scopes):
            scope.cancel("abort requested")

    @contextmanager
    def scope(self) -> Iterator[anyio.CancelScope]:
        with anyio.CancelScope() as scope:
            if self._aborted:
                scope.cancel("abort requested")
            self._scopes.add(scope)
            try:
                yield scope
            finally:
                self._scopes.discard(scope)

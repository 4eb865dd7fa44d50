"""Pi's `cycle_model` and `cycle_thinking_level`: which model and which level come next.

The model cycle walks the command line's `--models` scope (each at the level its pattern names)
when there is one, else every model the session can use; the level cycle walks the levels the
current model supports. Each answers what to switch to and leaves the switching to the session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pi_rpc.ai import Model, ThinkingLevel
from pi_rpc.session.configuration.config import ModelChoice, ModelStart
from pi_rpc.session.storage.recorded_settings import usable

ModelKey = tuple[str, str]  # (provider, model id)


def next_model(
    start: ModelStart, current: Model, available: Callable[[], Sequence[Model]]
) -> tuple[ModelKey, ThinkingLevel | None] | None:
    """The model after `current` and the level its scope pattern names; None when there is no other."""
    scope = {(s.model.provider, s.model.id): s.thinking_level for s in start.scoped}
    if scope:
        models = [key for key in scope if _usable(start.resolve(*key))]
    else:
        models = [(m.provider, m.id) for m in available()]
    if len(models) < 2:
        return None
    key = (current.provider, current.id)
    following = models[(models.index(key) + 1) % len(models) if key in models else 1 % len(models)]
    return following, scope.get(following)


def next_thinking_level(levels: Sequence[ThinkingLevel], current: ThinkingLevel) -> ThinkingLevel | None:
    """The level after `current` among `levels`; None when the model has no other."""
    if len(levels) < 2:
        return None
    position = levels.index(current) if current in levels else -1
    return levels[(position + 1) % len(levels)]


def _usable(choice: ModelChoice | None) -> bool:
    return choice is not None and usable(choice)

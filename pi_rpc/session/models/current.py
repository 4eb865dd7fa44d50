"""The model and thinking level a session is on now: switching, clamping, cycling, and what the
session file records of them (storage/recorded_settings.py).

`SessionModel` is the one holder of both; the session's runs, compaction and tool calls read them
from it, and every change goes through it, so a change is recorded in the file exactly once.
"""

from __future__ import annotations

from pi_rpc.ai import (
    Model,
    ThinkingLevel,
    clamp_thinking_level,
    no_model_message,
    not_found_hint,
    supported_thinking_levels,
)
from pi_rpc.session.configuration.config import ModelChoice, ModelStart
from pi_rpc.session.models.cycle import next_model, next_thinking_level
from pi_rpc.session.refusals import NoModelConfigured, UnknownModel
from pi_rpc.session.storage.history import SessionHistory
from pi_rpc.session.storage.recorded_settings import (
    record_model,
    record_start,
    record_thinking_level,
    restore_recorded,
)


class ModelNotFoundError(UnknownModel, LookupError):
    pass


class NoModelError(NoModelConfigured, RuntimeError):
    """A prompt while no model is configured; the message says how to configure one."""

    def __init__(self) -> None:
        super().__init__(no_model_message())


class SessionModel:
    """The current model (None until one is configured) and level, recorded in `history`'s file."""

    def __init__(self, start: ModelStart, history: SessionHistory) -> None:
        self._start = start
        self._history = history
        self.choice = start.choice
        level = start.thinking_level  # clamped as Pi clamps a session's first level
        self.thinking_level: ThinkingLevel = (
            level if self.choice is None else clamp_thinking_level(self.choice.model, level)
        )

    @property
    def model(self) -> Model | None:
        return self.choice.model if self.choice is not None else None

    @property
    def scripted(self) -> bool:
        return self.choice is not None and self.choice.scripted

    @property
    def scope_active(self) -> bool:
        """`cycle_model` walks the command line's `--models` scope (Pi's `isScoped`)."""
        return bool(self._start.scoped)

    def require(self) -> ModelChoice:
        """The model to prompt; NoModelError (saying how to configure one) while there is none."""
        if self.choice is None:
            raise NoModelError()
        return self.choice

    def set_model(self, provider: str, model_id: str, thinking_level: ThinkingLevel | None = None) -> Model:
        choice = self._start.resolve(provider, model_id)
        if choice is None:
            raise ModelNotFoundError(
                f"Model not found: {provider}/{model_id}" + not_found_hint(provider, model_id, self._start.available())
            )
        # From a model without reasoning the default level comes back (Pi's model switch).
        reasoning = self.choice is None or len(self.thinking_levels()) > 1
        wanted = thinking_level or (self.thinking_level if reasoning else self._start.default_thinking_level)
        self.choice = choice
        record_model(self._history, choice)
        self.set_thinking_level(wanted)
        return choice.model

    def set_thinking_level(self, level: ThinkingLevel) -> ThinkingLevel:
        """Clamped to what the model supports (Pi's clampThinkingLevel; with no model yet, once one
        is set); the next request uses it; recorded in the file (Pi's `thinking_level_change`)."""
        previous = self.thinking_level
        self.thinking_level = level if self.choice is None else clamp_thinking_level(self.choice.model, level)
        if self.thinking_level != previous:
            record_thinking_level(self._history, self.thinking_level)
        return self.thinking_level

    def thinking_levels(self) -> list[ThinkingLevel]:
        return ["off"] if self.choice is None else supported_thinking_levels(self.choice.model)

    def available_models(self) -> list[Model]:
        """The models a client may switch to, the current one first when no provider lists it."""
        models = self._start.available()
        if self.choice is None:
            return models
        current = self.choice.model
        if not any(m.provider == current.provider and m.id == current.id for m in models):
            models = [current, *models]
        return models

    def cycle_model(self) -> Model | None:
        """Switch to the next model of the scope (`--models`, at the level its pattern names),
        else of the available ones (Pi's `cycle_model`); None when there is no other."""
        found = None if self.choice is None else next_model(self._start, self.choice.model, self.available_models)
        if found is None:
            return None
        (provider, model_id), level = found
        return self.set_model(provider, model_id, thinking_level=level)

    def cycle_thinking_level(self) -> ThinkingLevel | None:
        """The next level the model supports (Pi's `cycle_thinking_level`); None without reasoning."""
        level = next_thinking_level(self.thinking_levels(), self.thinking_level)
        return None if level is None else self.set_thinking_level(level)

    def record_start(self) -> None:
        """A new session's first entries: the model and level it starts on."""
        record_start(self._history, self.choice, self.thinking_level)

    def restore_recorded(self) -> None:
        """Continue the session now in the history on the model and level it recorded."""
        self.choice, self.thinking_level = restore_recorded(
            self._history, self._start, self.choice, self.thinking_level
        )

"""A session's model and thinking level as its file records them (spec 18.11): Pi's `model_change` and
`thinking_level_change` entries, written when a session starts and whenever either changes, and
read back when a stored session is continued, so that it resumes on the model and the level it
was last on (Pi's `createAgentSession`).

A model the command line chose (`--model`, `--base-url`, `--script`, a `--models` scope) wins over
the recorded one, and `--thinking` over the recorded level, as in Pi. A recorded model that no
longer exists, or whose provider has no key, is not restored: the session stays on its current
model and the log says so. A continued session that records no level gets the default one (and an
entry saying so), as Pi's does.
"""

from __future__ import annotations

import logging

from pi_rpc.ai import ThinkingLevel, api_declaration, clamp_thinking_level, thinking_level_of
from pi_rpc.session.configuration.config import ModelChoice, ModelStart
from pi_rpc.session.storage.history import SessionHistory

_log = logging.getLogger(__name__)


def usable(choice: ModelChoice) -> bool:
    """A model a session can prompt: a key for it, or an API whose key is optional (Chat
    Completions: local servers need none), or the scripted model."""
    return choice.scripted or choice.api_key is not None or api_declaration(choice.model.api).key_optional


def record_model(history: SessionHistory, choice: ModelChoice | None) -> None:
    if choice is not None:
        history.keep_setting(history.entries.add_model_change(choice.model.provider, choice.model.id))


def record_thinking_level(history: SessionHistory, level: ThinkingLevel) -> None:
    history.keep_setting(history.entries.add_thinking_level_change(level))


def record_start(history: SessionHistory, choice: ModelChoice | None, level: ThinkingLevel) -> None:
    """A new session's first entries: its model and its level."""
    record_model(history, choice)
    record_thinking_level(history, level)


def restore_recorded(
    history: SessionHistory, start: ModelStart, choice: ModelChoice | None, level: ThinkingLevel
) -> tuple[ModelChoice | None, ThinkingLevel]:
    """The model and level to continue the session now in `history` on, from what it recorded
    (`choice` and `level`: what the session is on now). One that holds no message yet is a new
    session on the current model and level, recorded unless it records them already."""
    entries = history.entries
    current = choice.model if choice is not None else None
    if not entries.has_messages():  # a new session (one an editor made and never prompted)
        if current is not None and entries.recorded_model() != (current.provider, current.id):
            record_model(history, choice)
        if entries.recorded_thinking_level() != level:
            record_thinking_level(history, level)
        return choice, level
    recorded = entries.recorded_model()
    if not start.model_pinned and recorded is not None:
        if current is None or (current.provider, current.id) != recorded:
            found = start.resolve(*recorded)
            if found is not None and usable(found):
                choice = found
            else:
                using = f"{current.provider}/{current.id}" if current is not None else "no model"
                _log.warning("Could not restore model %s/%s (not found, or no key); using %s", *recorded, using)
    recorded_level = entries.recorded_thinking_level()
    if not start.thinking_pinned:
        level = thinking_level_of(recorded_level) or start.default_thinking_level
    if choice is not None:
        level = clamp_thinking_level(choice.model, level)
    if recorded_level is None:
        record_thinking_level(history, level)
    return choice, level

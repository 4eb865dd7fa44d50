"""A session's model and thinking level as its file records them (spec 16.11): Pi's `model_change` and
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
from typing import Protocol

from pi_rpc.ai import ThinkingLevel, clamp_thinking_level, thinking_level_of
from pi_rpc.session.configuration.config import ModelChoice, SessionConfig
from pi_rpc.session.storage.history import SessionHistory

_log = logging.getLogger(__name__)


class SettingsHost(Protocol):
    """What a session offers here (`AgentSession` is the one host)."""

    config: SessionConfig
    choice: ModelChoice | None
    thinking_level: ThinkingLevel
    history: SessionHistory


def usable(choice: ModelChoice) -> bool:
    """A model a session can prompt: a key for it, or a Chat Completions server (local servers
    need none), or the scripted model."""
    return choice.scripted or choice.api_key is not None or choice.model.api == "openai-completions"


def record_model(host: SettingsHost) -> None:
    if host.choice is not None:
        model = host.choice.model
        host.history.keep_setting(host.history.entries.add_model_change(model.provider, model.id))


def record_thinking_level(host: SettingsHost) -> None:
    host.history.keep_setting(host.history.entries.add_thinking_level_change(host.thinking_level))


def record_start(host: SettingsHost) -> None:
    """A new session's first entries: its model and its level."""
    record_model(host)
    record_thinking_level(host)


def restore_recorded(host: SettingsHost) -> None:
    """Continue the session now in `host.history` on what it recorded; one that holds no message
    yet is a new session on the current model and level, recorded unless it records them already."""
    entries = host.history.entries
    if not entries.has_messages():  # a new session (one an editor made and never prompted)
        current = host.choice.model if host.choice is not None else None
        if current is not None and entries.recorded_model() != (current.provider, current.id):
            record_model(host)
        if entries.recorded_thinking_level() != host.thinking_level:
            record_thinking_level(host)
        return
    recorded = entries.recorded_model()
    if not host.config.model_pinned and recorded is not None:
        current = host.choice.model if host.choice is not None else None
        if current is None or (current.provider, current.id) != recorded:
            choice = host.config.resolve_model(*recorded)
            if choice is not None and usable(choice):
                host.choice = choice
            else:
                using = f"{current.provider}/{current.id}" if current is not None else "no model"
                _log.warning("Could not restore model %s/%s (not found, or no key); using %s", *recorded, using)
    level = entries.recorded_thinking_level()
    if not host.config.thinking_pinned:
        host.thinking_level = thinking_level_of(level) or host.config.default_thinking_level
    if host.choice is not None:
        host.thinking_level = clamp_thinking_level(host.choice.model, host.thinking_level)
    if level is None:
        record_thinking_level(host)

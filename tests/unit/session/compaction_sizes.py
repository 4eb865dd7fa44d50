"""Conversation sizes around a compaction threshold, and what a summary request used."""

from __future__ import annotations

from typing import Any

from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.session.compaction.planning import CompactionSettings

from .helpers import reply

FILLER = "f" * 400  # about 100 tokens


SUMMARY = reply("^<conversation>", [{"text": "THE SUMMARY"}])


# With this reserve compaction is due once the context passes 1000 tokens of the scripted model's window.
NEAR = CompactionSettings(reserve_tokens=FAUX_MODEL.context_window - 1000, keep_recent_tokens=100)


def used(tokens: int) -> dict[str, Any]:
    """A reply step reporting that its request used `tokens` of the window."""
    return {"usage": {"input": tokens, "output": 1}}

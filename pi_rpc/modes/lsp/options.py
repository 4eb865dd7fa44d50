"""What an editor configures: `initializationOptions` and `workspace/didChangeConfiguration`.

Both carry the same object (under a `pi` key or bare, as editors differ in how they nest server
settings); every field is optional and a missing one leaves the current value alone.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai import Wire
from pi_rpc.session import ApprovalPolicy

_log = logging.getLogger(__name__)

AnswerTarget = Literal["document", "message"]


class UserAction(Wire):
    """A code action of the user's own: a title and a prompt template.

    The template may use {code} (the selected lines), {file} (its path in the workspace),
    {language} (the document's language id), {diagnostics} (the messages, one a line) and
    {range} (lines, e.g. "3-7")."""

    title: str
    prompt: str


class LspOptions(Wire):
    provider: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    tools: list[str] | UnsetType = UNSET
    approval_policy: ApprovalPolicy | UnsetType = UNSET
    # Where an answer goes: a Markdown file opened by window/showDocument, or window/showMessage.
    answer: AnswerTarget | UnsetType = UNSET
    actions: list[UserAction] | UnsetType = UNSET


def parse_options(raw: Any) -> LspOptions:
    """The options in `raw` (bare or under "pi"); a malformed object is logged and ignored."""
    if isinstance(raw, dict) and isinstance(raw.get("pi"), dict):
        raw = raw["pi"]
    if not isinstance(raw, dict):
        return LspOptions()
    try:
        return msgspec.convert(raw, LspOptions)
    except msgspec.ValidationError as exc:
        _log.warning("pi-rpc LSP options ignored: %s", exc)
        return LspOptions()

"""Requests the daemon sends the editor (files, approvals, progress, edits): how long each may
wait, and what an answer too large or too broken to read tells the request that waits for it.

Every front end asks its client things and waits for the answer; a client that never answers
(a bug, a dropped message, a dialog nobody sees) must not hang the run. One policy for all of them:
a request about files or edits gets `files` seconds, a question to the user (where the protocol
has no other way to end it) `question` seconds, a progress token `progress` seconds. An abort
cancels any of them sooner, and a client's answer after that is ignored. Front ends take an
`EditorDeadlines` so that tests can make them small instead of waiting.

An answer over the message size limit is skipped by the framing reader without being buffered;
`answered_id` finds, in the bytes it kept of the start and end, which request it answered, so that
request fails at once with `too_large_text` instead of waiting for its deadline.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from typing import TypeVar

import anyio
import msgspec

from pi_rpc.modes.framing import KEPT_BYTES, FrameError
from pi_rpc.tools import EditorRequestError

T = TypeVar("T")


class EditorDeadlines(msgspec.Struct, frozen=True):
    """Seconds a request to the editor may wait for its answer."""

    # A read or write of a buffer, or an applied edit: the editor answers these without the user.
    files: float = 60.0
    # A question to the user with no dialog the daemon can close (LSP's window/showMessageRequest):
    # long enough to read a diff and decide; `permissions.timeoutSeconds` shortens it when set.
    question: float = 600.0
    # window/workDoneProgress/create: the run waits for it before it starts.
    progress: float = 10.0


DEFAULT_DEADLINES = EditorDeadlines()


class ClientRequestError(EditorRequestError):
    """The client answered a request of ours with an error, or with an answer that cannot be read
    (LSP's `ClientFailed` also keeps the error's code): the tool call fails with this text."""


async def within(seconds: float, method: str, answer: Awaitable[T]) -> T:
    """`answer`, or EditorRequestError once `seconds` have passed without one."""
    with anyio.move_on_after(seconds):
        return await answer
    raise EditorRequestError(f"the editor did not answer {method} within {seconds:g} s")


def size_text(size: int) -> str:
    if size >= 1 << 20:
        return f"{size / (1 << 20):.3g} MiB"
    if size >= 1 << 10:
        return f"{size / (1 << 10):.3g} KiB"
    return f"{size} bytes"


def too_large_text(method: str, size: int, limit: int) -> str:
    return f"the editor's answer to {method} was {size_text(size)}, over the {size_text(limit)} limit"


def unreadable_text(method: str, reason: str) -> str:
    return f"the editor's answer to {method} is not JSON: {reason}"


def unread(message: bytes) -> FrameError:
    """A message that could not be decoded, kept as a skipped one: its start and end."""
    return FrameError("unreadable", head=message[:KEPT_BYTES], tail=message[-KEPT_BYTES:])


_ID = rb'(-?\d{1,15}|"[^"\\]{0,200}")'
_JSONRPC = rb'\s*"jsonrpc"\s*:\s*"[^"]{0,10}"\s*,'
# A response starts with its result or error, after "jsonrpc" and "id" in either order when it has
# them there; otherwise its id ends it. A request (its "method" first) never matches.
_RESPONSE_START = re.compile(
    rb"^\s*\{(?:" + _JSONRPC + rb'|\s*"id"\s*:\s*(?P<id>' + _ID[1:-1] + rb")\s*,){0,2}" + rb'\s*"(?:result|error)"\s*:'
)
_ID_AT_END = re.compile(rb',\s*"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"[^"]{0,10}"\s*)?\}\s*$')


def answered_id(error: FrameError) -> int | str | None:
    """The id of the request a skipped message answered, when its kept start and end show one."""
    start = _RESPONSE_START.match(error.head)
    if start is None:
        return None
    raw = start.group("id")
    if raw is None:
        end = _ID_AT_END.search(error.tail)
        if end is None:
            return None
        raw = end.group(1)
    return raw[1:-1].decode("utf-8", "replace") if raw.startswith(b'"') else int(raw)


__all__ = [
    "DEFAULT_DEADLINES",
    "ClientRequestError",
    "EditorDeadlines",
    "answered_id",
    "size_text",
    "too_large_text",
    "unread",
    "unreadable_text",
    "within",
]

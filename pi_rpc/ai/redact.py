"""Secret scrubbing: the one function that every error text a client or the disk can see passes
through before it leaves a provider.

A provider's error can echo what it was sent (a proxy quoting the `Authorization` header, a server
naming the key it rejected), and that text travels to the editor (`error` events, the prompt
result), to the session file and to the log. `AssistantBuilder` runs every error text through
`redact` with the secrets of the request (`request_secrets`), whichever path produced it: an HTTP
status, a transport failure, or an error event in the middle of a stream.

The objects that carry a key (`StreamOptions`, the session's `ModelChoice`) print it as
`[redacted]` (`repr_without_secrets`): a debug log line or a test failure that shows one then
shows no key.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

REDACTED = "[redacted]"
# Shorter values would scrub ordinary words; no real key is this short.
MIN_SECRET_LENGTH = 4
# Header names whose values are credentials (`Authorization`, `x-api-key`, `api-key`, tokens).
_SECRET_HEADER = re.compile(r"auth|key|token|secret|cookie", re.IGNORECASE)


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every secret replaced by `[redacted]`, longest first (a key can contain
    another secret, a bearer value contains its key)."""
    for secret in sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def request_secrets(api_key: str | None, headers: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The credentials one request carries: the key, and each credential header's value and its
    last word (`Bearer <token>` is scrubbed whole and as the bare token)."""
    found = [api_key] if api_key else []
    for name, value in (headers or {}).items():
        if not _SECRET_HEADER.search(name) or not value:
            continue
        found.append(value)
        words = value.split()
        if len(words) > 1:
            found.append(words[-1])
    return tuple(s for s in found if len(s) >= MIN_SECRET_LENGTH)


def repr_without_secrets(obj: object, fields: Iterable[str], secret_fields: Collection[str]) -> str:
    """`Name(field=value, ...)` as a Struct prints itself, with each secret field that
    holds something shown as `[redacted]`."""
    parts = []
    for name in fields:
        value = getattr(obj, name)
        parts.append(f"{name}={REDACTED if name in secret_fields and value else repr(value)}")
    return f"{type(obj).__name__}({', '.join(parts)})"

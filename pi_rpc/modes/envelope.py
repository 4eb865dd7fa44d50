"""What every front end checks in a decoded message's envelope, whatever its protocol."""

from __future__ import annotations

from typing import TypeGuard

RequestId = int | str  # a JSON-RPC request's id, and a Pi command's


def is_request_id(value: object) -> TypeGuard[RequestId]:
    """A JSON-RPC id (and Pi's command id): a string or an integer. `true` decodes to a Python bool,
    which is an int subclass, so it needs saying: it is not an id."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))

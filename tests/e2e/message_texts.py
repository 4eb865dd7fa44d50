"""The texts of a conversation's messages, as a test reads them."""

from __future__ import annotations

from typing import Any


def texts(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)

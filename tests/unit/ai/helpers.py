"""What the validation test modules share: the error text of a rejected tool call, and its lines."""

from __future__ import annotations

from typing import Any

import pytest

from pi_rpc.ai.validation import ToolArgumentsError, validate_tool_arguments


def validation_error(name: str, params: Any, args: Any) -> str:
    """The message of the ToolArgumentsError that these arguments must raise."""
    with pytest.raises(ToolArgumentsError) as info:
        validate_tool_arguments(name, params, args)
    return str(info.value)


def error_lines(message: str) -> list[str]:
    """The per-field lines of a validation message: after the headline, before the arguments."""
    body = message.split("\n\nReceived arguments:\n")[0]
    return body.splitlines()[1:]

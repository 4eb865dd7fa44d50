"""What a codemode script receives for a nested call, as in Pi 1.6.0: a tool that declares an
output schema resolves to a structured value, any other to its text; a failure rejects with the
error text.

Pi's bash and read declare output schemas (bash.js `bashOutputSchema`, read.js
`readOutputSchema`), so a script tuned on Pi reads `(await tools.bash(…)).exit_code`; our bash and
read return the same values as `structured_content`. The schemas here are what the listing and the
`Codemode:` lines render, in Pi's field order.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from pi_rpc.agent import AgentToolResult
from pi_rpc.ai import TextContent

BASH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["output", "truncated", "exit_code", "wall_time_seconds"],
    "properties": {
        "output": {"type": "string", "description": "Combined stdout and stderr, possibly truncated"},
        "truncated": {"type": "boolean"},
        "full_output_path": {"type": "string", "description": "Full output, when truncated"},
        "exit_code": {"type": "number"},
        "wall_time_seconds": {"type": "number"},
    },
}
READ_OUTPUT_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {
            "type": "object",
            "required": ["type", "data", "mimeType", "note"],
            "properties": {
                "type": {"const": "image"},
                "data": {"type": "string"},
                "mimeType": {"type": "string"},
                "note": {"type": "string"},
            },
        },
    ]
}
OUTPUT_SCHEMAS = {"bash": BASH_OUTPUT_SCHEMA, "powershell": BASH_OUTPUT_SCHEMA, "read": READ_OUTPUT_SCHEMA}


def text_of(result: AgentToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def script_value(name: str, result: AgentToolResult, is_error: bool) -> tuple[bool, Any]:
    """(resolves, value): a tool with an output schema resolves to its structured content, also
    for a failure that carries one (bash's non-zero exit); any other to its text. Other failures
    reject with the error text (Pi's toScriptValue)."""
    if name in OUTPUT_SCHEMAS and result.structured_content is not UNSET:
        return True, msgspec.to_builtins(result.structured_content)
    text = text_of(result)
    if is_error:
        return False, text or f'Tool "{name}" failed'
    return True, text

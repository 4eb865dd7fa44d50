"""What a codemode script receives for a nested call, as in Pi 1.6.0: a tool that declares an
output schema resolves to a structured value, any other to its text; a failure rejects with the
error text.

Pi's bash and read declare output schemas (bash.js `bashOutputSchema`, read.js
`readOutputSchema`), so a script tuned on Pi reads `(await tools.bash(…)).exit_code`. Our tools
return text and details only; the values are built here from those, so the tools themselves stay
as they are. bash's `output` is the model-facing (truncated) output, where Pi's keeps up to 1 MiB.
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import UNSET

from pi_rpc.agent import AgentToolResult
from pi_rpc.ai import ImageContent, TextContent

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
_EXIT = re.compile(r"\n*Command exited with code (\d+)$")


def text_of(result: AgentToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def script_value(name: str, result: AgentToolResult, is_error: bool, wall_seconds: float) -> tuple[bool, Any]:
    """(resolves, value): the value a script's call resolves to, or the text it rejects with."""
    text = text_of(result)
    if OUTPUT_SCHEMAS.get(name) is BASH_OUTPUT_SCHEMA:
        exited = _EXIT.search(text)
        if not is_error or exited is not None:  # a non-zero exit still resolves, as in Pi
            details = result.details if isinstance(result.details, dict) else {}
            path = getattr(result.details, "full_output_path", UNSET)
            path = details.get("fullOutputPath", path) if details else path
            value: dict[str, Any] = {
                "output": text[: exited.start()] if exited else text,
                "truncated": path is not UNSET,
                "exit_code": int(exited.group(1)) if exited else 0,
                "wall_time_seconds": round(wall_seconds, 1),
            }
            if path is not UNSET:
                value["full_output_path"] = path
            return True, value
    if is_error:
        return False, text or f'Tool "{name}" failed'
    if name == "read":
        image = next((block for block in result.content if isinstance(block, ImageContent)), None)
        if image is not None:
            return True, {"type": "image", "data": image.data, "mimeType": image.mime_type, "note": text}
    return True, text

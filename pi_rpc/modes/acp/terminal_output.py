"""Shell calls as display-only terminals, for clients that opt in to the `_meta` convention that
Zed renders and other ACP agents (Claude Code's, Codex's, Gemini CLI) send.

A client opts in with `clientCapabilities._meta.terminal_output: true`. Its shell calls then
carry `content: [{type: "terminal", terminalId}]` with `_meta.terminal_info` when announced,
`_meta.terminal_output` (the output text new since the last update) while they run, and
`_meta.terminal_exit` at the end. The command still runs here; other clients get text snapshots.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from acp.schema import ClientCapabilities, TerminalToolCallContent, ToolCallStatus

from pi_rpc.ai import ImageContent, TextContent

_EXIT_CODE = re.compile(r"Command exited with code (-?\d+)\s*$")
# When the output's tail window has moved on, the last shown lines are looked up, at most these.
_OVERLAP_LINES = 20


def wants_terminal_output(capabilities: ClientCapabilities) -> bool:
    meta = capabilities.field_meta
    return isinstance(meta, dict) and meta.get("terminal_output") is True


def terminal_content(call_id: str) -> list[TerminalToolCallContent]:
    return [TerminalToolCallContent(type="terminal", terminal_id=call_id)]


def terminal_info(call_id: str, cwd: str) -> dict[str, Any]:
    return {"terminal_info": {"terminal_id": call_id, "cwd": cwd}}


def exit_code_of(text: str, status: ToolCallStatus) -> int | None:
    """0 for a completed call; the code a failed one reports; None for a kill or timeout."""
    if status == "completed":
        return 0
    found = _EXIT_CODE.search(text)
    return int(found.group(1)) if found else None


class TerminalStreams:
    """What each running shell call has shown, so each update sends only what is new."""

    def __init__(self) -> None:
        self._shown: dict[str, str] = {}

    def output(self, call_id: str, content: Sequence[TextContent | ImageContent]) -> dict[str, Any] | None:
        """`_meta` with the new output, or None when nothing is new."""
        text = "".join(block.text for block in content if isinstance(block, TextContent))
        data = self._new_text(self._shown.get(call_id, ""), text)
        self._shown[call_id] = text
        return {"terminal_output": {"terminal_id": call_id, "data": data}} if data else None

    def finish(
        self, call_id: str, content: Sequence[TextContent | ImageContent], status: ToolCallStatus
    ) -> dict[str, Any]:
        meta = self.output(call_id, content) or {}
        text = self._shown.pop(call_id, "")
        signal = None if status == "completed" or _EXIT_CODE.search(text) else "SIGKILL"
        return {
            **meta,
            "terminal_exit": {"terminal_id": call_id, "exit_code": exit_code_of(text, status), "signal": signal},
        }

    @staticmethod
    def _new_text(shown: str, text: str) -> str:
        """Snapshots are the output so far (its tail, once long): the part after what was shown.
        When the tail has moved on, the longest run of last shown lines found in the new
        snapshot marks where the new text starts."""
        if text.startswith(shown):
            return text[len(shown) :]
        lines = shown.splitlines(keepends=True)[-_OVERLAP_LINES:]
        for start in range(len(lines)):
            anchor = "".join(lines[start:])
            at = text.find(anchor)
            if at >= 0:
                return text[at + len(anchor) :]
        return text

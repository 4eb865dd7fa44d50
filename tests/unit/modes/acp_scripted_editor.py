"""An ACP editor that answers each permission request with the next of its scripted choices."""

from __future__ import annotations

from typing import Any

import anyio
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from .acp_editor import Editor

Json = dict[str, Any]


class ScriptedEditor(Editor):
    """Answers each permission request with the next scripted option; "hold" keeps the dialog
    open until `release` is set, then answers `cancelled` (as ACP asks of a client on cancel)."""

    def __init__(self, answers: list[str]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.sessions_asked: list[str] = []
        self.offered: list[list[PermissionOption]] = []
        self.asking = anyio.Event()
        self.release = anyio.Event()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        self.sessions_asked.append(session_id)
        self.offered.append(options)
        self.asking.set()
        answer = self.answers.pop(0) if self.answers else "allow"
        if answer == "hold":
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))


def final_updates(editor: Editor) -> list[Json]:
    return [
        u
        for u in editor.updates()
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    ]

"""ToolDefinition: the runtime tool plus what the session needs around it (the application layer,
spec 1.5).

It extends AgentTool rather than copying it: the loop runs a definition as it is. What it adds is
for the session only: the one-line prompt snippet and guidelines of the system prompt, whether it
changes anything (approvals), a preview for the approval request, and where it comes from.

A tool is its parameters (a msgspec Struct: the schema the model sees, and the type `execute`
gets, validated) and an `execute` that returns a result or raises `ToolError` (its message is
the error result's text). The shape of `ls.py`, cut down:

    class WordsParams(msgspec.Struct, kw_only=True):
        path: Annotated[str, Meta(description="File to count the words of")]

    def create_words_tool() -> ToolDefinition:
        async def execute(params: WordsParams, call: ToolCallContext) -> AgentToolResult:
            path = resolve_to_cwd(params.path, call.cwd)  # relative to the session's folder
            try:
                text = await anyio.Path(path).read_text()
            except OSError as exc:
                raise ToolError(f"Cannot read {path}: {exc}") from exc
            return text_result(f"{len(text.split())} words")

        return ToolDefinition(
            name="words", label="words", description="Count the words of a file.",
            parameters=WordsParams, execute=execute, prompt_snippet="Count the words of a file",
        )

A built-in is named in tools/registry.py (`create_tool_definitions` makes the session's set).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from pi_rpc.agent import AgentTool, ToolCallContext, ToolPreview

DefinitionPreview = Callable[[Any, ToolCallContext], Awaitable[ToolPreview]]


class ToolDefinition(AgentTool, eq=False, kw_only=True):
    prompt_snippet: str | None = None
    prompt_guidelines: list[str] = msgspec.field(default_factory=list)
    # Changes files or runs programs: approval policies ask before it runs (readOnly refuses it).
    mutating: bool = False
    # Describes the call before it runs (for approval requests); raising means "would fail anyway".
    preview: DefinitionPreview | None = None
    # Where the tool comes from, for `tools/list`: "builtin", or "mcp:<server>" (tools/mcp.py).
    source: str = "builtin"
    # Readies what its first call would otherwise start (bash: the process supervisor); a fresh
    # daemon calls it while it waits for its first prompt (session/warm_up.py).
    prepare: Callable[[], None] | None = None

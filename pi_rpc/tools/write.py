"""The write tool (spec 12): create or overwrite a whole file, creating parent folders.

The local default writes atomically (temporary file, fsync, rename; see `fs.write_file_atomic`), an
improvement over Pi's in-place overwrite (spec 12.3): an abort or crash never leaves half a file.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Annotated

import anyio
import msgspec
from msgspec import UNSET, Meta

from pi_rpc.agent import AgentToolResult, HunkSelection, ToolCallContext, ToolError, ToolPreview, text_result
from pi_rpc.ai import JsonSchemaSampling, TextContent, displayable
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.fs import node_error_message, write_file_atomic
from pi_rpc.tools.hunks import HunkDetails, apply_selection, diff_hunks, hunk_outcome, partial_result_text
from pi_rpc.tools.paths import resolve_to_cwd

DESCRIPTION = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
    "Automatically creates parent directories."
)
PROMPT_SNIPPET = "Create or overwrite files"
PROMPT_GUIDELINES = ["Use write only for new files or complete rewrites."]


class WriteParams(msgspec.Struct, rename="camel", kw_only=True):
    path: Annotated[str, Meta(description="Path to the file to write (relative or absolute)")]
    content: Annotated[str, Meta(description="Content to write to the file")]


class WriteOperations(msgspec.Struct):
    """Spec 1.11: where write puts files; replace it to write elsewhere (SSH, editor buffers)."""

    write_file: Callable[[str, str], Awaitable[None]]
    # Creates the folder and any missing parents; an existing folder is not an error.
    mkdir: Callable[[str], Awaitable[None]]
    # The text a write would replace (None: no such file), for the preview an approval shows.
    read_existing: Callable[[str], Awaitable[str | None]] | None = None


async def _local_write_file(path: str, content: str) -> None:
    await write_file_atomic(path, content.encode("utf-8"))


def _make_dirs(path: str) -> None:
    os.makedirs(path, exist_ok=True)


async def _local_mkdir(path: str) -> None:
    await anyio.to_thread.run_sync(_make_dirs, path)


def local_write_operations() -> WriteOperations:
    return WriteOperations(write_file=_local_write_file, mkdir=_local_mkdir, read_existing=_local_read_existing)


async def _local_read_existing(path: str) -> str | None:
    def read() -> str | None:
        try:
            with open(path, "rb") as file:
                return file.read().decode("utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError):
            return None

    return await anyio.to_thread.run_sync(read)


def create_write_tool(*, operations: WriteOperations | None = None) -> ToolDefinition:
    ops = operations or local_write_operations()

    async def execute(params: WriteParams, call: ToolCallContext) -> AgentToolResult:
        from pi_rpc.tools.mutation_queue import with_file_mutation_queue  # with the first write

        absolute = resolve_to_cwd(params.path, call.cwd)

        async def mutate() -> AgentToolResult:
            content, result = params.content, text_result(f"Successfully wrote to {params.path}")  # spec 12.4
            if call.hunks is not None:
                content, result = await _partial(call.hunks, absolute, params)
            folder = os.path.dirname(absolute)
            try:
                await ops.mkdir(folder)
            except OSError as exc:
                raise ToolError(node_error_message(exc, "mkdir", exc.filename or folder)) from exc
            try:
                await ops.write_file(absolute, content)
            except OSError as exc:
                raise ToolError(node_error_message(exc, "open", absolute)) from exc
            return result

        try:
            return await with_file_mutation_queue(absolute, mutate)
        except OSError as exc:  # resolving the queue key (a symlink loop): mutate has its own
            raise ToolError(node_error_message(exc, "open", absolute)) from exc

    read_existing = ops.read_existing or _local_read_existing

    async def _partial(selection: HunkSelection, absolute: str, params: WriteParams) -> tuple[str, AgentToolResult]:
        """The file with only the kept hunks of the overwrite, and the result that says so."""
        old = await read_existing(absolute)
        if old is None:
            raise ToolError(f"Could not apply the hunks the user kept to {params.path}: the file no longer exists.")
        content = apply_selection(selection, old, params.content, params.path)
        outcome = hunk_outcome(selection)
        text = partial_result_text(params.path, outcome, len(selection.hunks))
        return content, AgentToolResult(content=[TextContent(text=text)], details=HunkDetails(hunks=outcome))

    async def preview(params: WriteParams, call: ToolCallContext) -> ToolPreview:
        from pi_rpc.tools.edit_diff import generate_unified_patch  # with the first preview

        absolute = resolve_to_cwd(params.path, call.cwd)
        old = await read_existing(absolute)
        verb = "Overwrite" if old is not None else "Create"
        return ToolPreview(
            title=f"{verb} {params.path}",
            path=absolute,
            old_text=displayable(old or ""),
            new_text=displayable(params.content),
            patch=displayable(generate_unified_patch(params.path, old or "", params.content)),
            # Only an overwrite has hunks to choose from: a new file is one change, taken or not.
            hunks=diff_hunks(old, params.content) if old is not None else UNSET,
        )

    return ToolDefinition(
        name="write",
        label="write",
        description=DESCRIPTION,
        parameters=WriteParams,
        execute=execute,
        prompt_snippet=PROMPT_SNIPPET,
        prompt_guidelines=list(PROMPT_GUIDELINES),
        constrained_sampling=JsonSchemaSampling(strict="prefer"),
        mutating=True,
        preview=preview,
    )


__all__ = ["DESCRIPTION", "WriteOperations", "WriteParams", "create_write_tool", "local_write_operations"]

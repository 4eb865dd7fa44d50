"""The edit tool (spec 11): exact-text replacements in one file, all applied or none."""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import anyio
import msgspec
from msgspec import UNSET, Meta, UnsetType

from pi_rpc.agent import AgentToolResult, ToolCallContext, ToolError, ToolPreview
from pi_rpc.ai import JsonSchemaSampling, TextContent, Wire, displayable
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.fs import error_code, node_error_message, write_file_atomic
from pi_rpc.tools.hunks import HunkOutcome, apply_selection, diff_hunks, hunk_outcome, partial_result_text
from pi_rpc.tools.paths import resolve_to_cwd

if TYPE_CHECKING:
    from pi_rpc.tools.edit_diff import LineEnding

DESCRIPTION = (
    "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, "
    "non-overlapping region of the original file. If two changes affect the same block or nearby lines, "
    "merge them into one edit instead of emitting overlapping edits. Do not include large unchanged "
    "regions just to connect distant changes."
)
PROMPT_SNIPPET = "Make precise file edits with exact text replacement, including multiple disjoint edits in one call"
PROMPT_GUIDELINES = [
    "Use edit for targeted changes. Batch changes to one file in a single call.",
    "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and "
    "non-overlapping; merge nearby changes without including large unchanged regions.",
]
EDITS_DESCRIPTION = (
    "One or more targeted replacements. Each edit is matched against the original file, not incrementally. "
    "Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, "
    "merge them into one edit instead."
)
OLD_TEXT_DESCRIPTION = (
    "Exact text for one targeted replacement. It must be unique in the original file and must not "
    "overlap with any other edits[].oldText in the same call."
)
EMPTY_EDITS = "Edit tool input is invalid. edits must contain at least one replacement."


class ReplaceEdit(msgspec.Struct, rename="camel", kw_only=True):
    old_text: Annotated[str, Meta(description=OLD_TEXT_DESCRIPTION)]
    new_text: Annotated[str, Meta(description="Replacement text for this targeted edit.")]


class EditDetails(Wire):
    """`details` of an edit result: the display diff, the unified patch, the first changed line."""

    diff: str
    patch: str
    first_changed_line: int | UnsetType = UNSET
    # When the user kept only some hunks: which, and the rejected ones (diff and patch are of what landed).
    hunks: HunkOutcome | UnsetType = UNSET


class EditParams(msgspec.Struct, rename="camel", kw_only=True):
    path: Annotated[str, Meta(description="Path to the file to edit (relative or absolute)")]
    edits: Annotated[list[ReplaceEdit], Meta(description=EDITS_DESCRIPTION)]


class EditOperations(msgspec.Struct):
    """Spec 1.11: where edit reads and writes; replace it to edit elsewhere (SSH, editor buffers)."""

    read_file: Callable[[str], Awaitable[bytes]]
    write_file: Callable[[str, str], Awaitable[None]]
    # Raises when the file cannot be both read and written.
    access: Callable[[str], Awaitable[None]]


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def _check_read_write(path: str) -> None:
    mode = os.stat(path).st_mode
    if not os.access(path, os.R_OK | os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if not stat.S_ISREG(mode):  # a FIFO or device would block the read, and cannot be replaced
        raise OSError(errno.EINVAL, "not a regular file", path)


async def _local_read_file(path: str) -> bytes:
    return await anyio.to_thread.run_sync(_read_bytes, path, abandon_on_cancel=True)


async def _local_write_file(path: str, content: str) -> None:
    # surrogateescape: bytes that were not UTF-8 when read go back to disk unchanged.
    await write_file_atomic(path, content.encode("utf-8", errors="surrogateescape"))


async def _local_access(path: str) -> None:
    await anyio.to_thread.run_sync(_check_read_write, path, abandon_on_cancel=True)


def local_edit_operations() -> EditOperations:
    return EditOperations(read_file=_local_read_file, write_file=_local_write_file, access=_local_access)


def _is_single_edit(value: Any) -> bool:
    return isinstance(value, dict) and "oldText" in value and "newText" in value


def prepare_edit_arguments(raw: Any) -> Any:
    """Spec 11.3: accept the shapes models still send, before validation sees them."""
    if not isinstance(raw, dict):
        return raw
    args = dict(raw)
    edits = args.get("edits")
    if isinstance(edits, str):
        try:
            parsed = json.loads(edits)
        except ValueError:
            parsed = None  # validation reports the string
        if isinstance(parsed, list):
            args["edits"] = parsed
        elif _is_single_edit(parsed):
            args["edits"] = [parsed]
    elif _is_single_edit(edits):
        args["edits"] = [edits]
    old_text, new_text = args.get("oldText"), args.get("newText")
    if isinstance(old_text, str) and isinstance(new_text, str):
        current = args.get("edits")
        args["edits"] = [
            *(current if isinstance(current, list) else []),
            {"oldText": old_text, "newText": new_text},
        ]
        del args["oldText"], args["newText"]
    return raw if args == raw else args


def _access_failure(path: str, exc: Exception) -> ToolError:
    code = error_code(exc)
    # Pi renders a code-less error with JS String(error), i.e. "Error: {message}".
    reason = f"Error code: {code}" if code else f"Error: {exc}"
    return ToolError(f"Could not edit file: {path}. {reason}.")


class _PlannedEdit(NamedTuple):
    base: str  # the file as LF-normalised text, before
    new: str  # and after
    bom: str
    ending: LineEnding  # the file's first line ending
    spliced: str  # `new` spliced into the original text: every untouched line keeps its ending

    def written(self, text: str) -> str:
        """What goes back to the file for `text` (`new`, or only some of its hunks): the BOM and
        the line endings restored. Some hunks only: in the file's first line ending throughout."""
        from pi_rpc.tools.edit_diff import restore_line_endings

        return self.bom + (self.spliced if text == self.new else restore_line_endings(text, self.ending))


async def _plan_edit(ops: EditOperations, absolute: str, path: str, edits: list[ReplaceEdit]) -> _PlannedEdit:
    """Read the file and apply the edits in memory; nothing is written. Raises the tool's errors."""
    # The matching and diffing are loaded by the first edit, not with the tool's definition.
    from pi_rpc.tools.edit_diff import (
        apply_replacements_to_original,
        detect_line_ending,
        normalize_to_lf,
        plan_replacements,
        strip_bom,
    )

    try:
        await ops.access(absolute)
    except Exception as exc:
        raise _access_failure(path, exc) from exc
    try:
        raw = await ops.read_file(absolute)
    except OSError as exc:
        raise ToolError(node_error_message(exc, "open", absolute)) from exc
    # Not "replace" (Pi's Node decoding): a Latin-1 byte elsewhere in the file would be
    # rewritten as U+FFFD. surrogateescape keeps every undecodable byte for the write back.
    bom, content = strip_bom(raw.decode("utf-8", errors="surrogateescape"))
    normalized = normalize_to_lf(content)
    base, new, replacements = plan_replacements(normalized, edits, path)
    # Spliced into the original text, so untouched lines keep their own line endings.
    spliced = new if content == normalized else apply_replacements_to_original(content, replacements)
    return _PlannedEdit(base, new, bom, detect_line_ending(content), spliced)


def create_edit_tool(*, operations: EditOperations | None = None) -> ToolDefinition:
    ops = operations or local_edit_operations()

    async def execute(params: EditParams, call: ToolCallContext) -> AgentToolResult:
        if not params.edits:
            raise ToolError(EMPTY_EDITS)
        path = params.path
        absolute = resolve_to_cwd(path, call.cwd)

        from pi_rpc.tools.edit_diff import generate_diff_string, generate_unified_patch
        from pi_rpc.tools.mutation_queue import with_file_mutation_queue

        async def mutate() -> AgentToolResult:
            planned = await _plan_edit(ops, absolute, path, params.edits)
            selection = call.hunks
            new = planned.new if selection is None else apply_selection(selection, planned.base, planned.new, path)
            try:
                await ops.write_file(absolute, planned.written(new))
            except OSError as exc:
                raise ToolError(node_error_message(exc, "open", absolute)) from exc
            diff, first_changed = generate_diff_string(planned.base, new)
            patch = generate_unified_patch(path, planned.base, new)
            details = EditDetails(
                diff=displayable(diff),
                patch=displayable(patch),
                first_changed_line=UNSET if first_changed is None else first_changed,
            )
            if selection is not None:
                details.hunks = hunk_outcome(selection)
                text = partial_result_text(path, details.hunks, len(selection.hunks))
            else:
                text = f"Successfully replaced {len(params.edits)} block(s) in {path}."
            return AgentToolResult(content=[TextContent(text=text)], details=details)

        try:
            return await with_file_mutation_queue(absolute, mutate)
        except OSError as exc:  # resolving the queue key (a symlink loop): mutate has its own
            raise _access_failure(path, exc) from exc

    async def preview(params: EditParams, call: ToolCallContext) -> ToolPreview:
        if not params.edits:
            raise ToolError(EMPTY_EDITS)
        from pi_rpc.tools.edit_diff import generate_unified_patch

        absolute = resolve_to_cwd(params.path, call.cwd)
        planned = await _plan_edit(ops, absolute, params.path, params.edits)
        return ToolPreview(
            title=f"Edit {params.path}",
            path=absolute,
            old_text=displayable(planned.base),
            new_text=displayable(planned.new),
            patch=displayable(generate_unified_patch(params.path, planned.base, planned.new)),
            hunks=diff_hunks(planned.base, planned.new),
        )

    return ToolDefinition(
        name="edit",
        label="edit",
        description=DESCRIPTION,
        parameters=EditParams,
        execute=execute,
        prompt_snippet=PROMPT_SNIPPET,
        prompt_guidelines=list(PROMPT_GUIDELINES),
        constrained_sampling=JsonSchemaSampling(strict="prefer"),
        prepare_arguments=prepare_edit_arguments,
        mutating=True,
        preview=preview,
    )


__all__ = [
    "DESCRIPTION",
    "EditOperations",
    "EditParams",
    "ReplaceEdit",
    "create_edit_tool",
    "local_edit_operations",
    "prepare_edit_arguments",
]

"""The read tool (spec 8): a text file's lines, paged with offset/limit, or an image attachment."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

import anyio
import msgspec
from msgspec import UNSET, Meta, UnsetType

from pi_rpc.agent import AgentToolResult, ToolCallContext, ToolError
from pi_rpc.ai import ImageContent, JsonSchemaSampling, Model, TextContent, ToolResultContent, Wire
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.fs import node_error_message
from pi_rpc.tools.paths import resolve_read_path
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, format_size

if TYPE_CHECKING:
    from pi_rpc.tools.read_lines import Selection

DESCRIPTION = (
    "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). "
    "Images are sent as attachments. For text files, output is truncated to "
    f"{DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). "
    "Use offset/limit for large files. When you need the full file, continue with offset until complete."
)
PROMPT_SNIPPET = "Read file contents"
PROMPT_GUIDELINES = ["Use read to examine files instead of cat or sed."]


class ReadDetails(Wire):
    """`details` of a read result: present only when the text was cut."""

    truncation: Truncation


class ImageReadDetails(Wire):
    """`details` of an image read by a model that takes no images (Pi 1.6.0): the model's id, so a
    client can say why the model will not see it. (Pi 0.73 appended a note to the text instead.)"""

    image_unsupported_by_model: str


class ImageReadOutput(msgspec.Struct):
    """`structuredContent` of an image read: the image block and its note."""

    type: str
    data: str
    mimeType: str
    note: str


class ReadParams(msgspec.Struct, rename="camel", kw_only=True):
    path: Annotated[str, Meta(description="Path to the file to read (relative or absolute)")]
    offset: Annotated[float, Meta(description="Line number to start reading from (1-indexed)")] | UnsetType = UNSET
    limit: Annotated[float, Meta(description="Maximum number of lines to read")] | UnsetType = UNSET


class ReadOperations(msgspec.Struct):
    """Spec 1.11: where read gets its bytes; replace it to read from elsewhere (SSH, editor buffers)."""

    read_file: Callable[[str], Awaitable[bytes]]
    # Raises (an OSError for the usual Node-style text) when the file cannot be read.
    access: Callable[[str], Awaitable[None]]
    # None for non-images; leaving it unset reads every file as text.
    detect_image_mime_type: Callable[[str], Awaitable[str | None]] | None = None
    # The file in chunks, so a text read holds only what it shows (Pi 1.5.1); without it, read_file.
    read_chunks: Callable[[str], AsyncIterator[bytes]] | None = None


# Reading decodes and splits the whole file; past this size that costs too much memory, and a
# model gets more from a shell command that looks at part of the file anyway.
MAX_READ_BYTES = 128 * 1024 * 1024


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size > MAX_READ_BYTES:
            raise ToolError(
                f"{path} is {format_size(size)}, more than read loads at once ({format_size(MAX_READ_BYTES)}). "
                f"Use bash to look at part of it, e.g. sed -n '1,200p' {path} or tail -c {DEFAULT_MAX_BYTES} {path}"
            )
        return file.read()


def _check_readable(path: str) -> None:
    mode = os.stat(path).st_mode  # ENOENT / ENOTDIR / ELOOP with the OS's own errno
    if not os.access(path, os.R_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        # A FIFO or a device (/dev/stdin is the daemon's own protocol pipe) would block or eat
        # input; Pi would hang here. Directories fall through to Node's EISDIR text.
        raise ToolError(f"Cannot read {path}: not a regular file (a pipe, socket or device)")


# abandon_on_cancel: a read stuck in the kernel (a hung network mount) must not hold up an
# abort or the daemon's exit; the thread finishes on its own and its result is dropped.
async def _local_read_file(path: str) -> bytes:
    return await anyio.to_thread.run_sync(_read_bytes, path, abandon_on_cancel=True)


async def _local_access(path: str) -> None:
    await anyio.to_thread.run_sync(_check_readable, path, abandon_on_cancel=True)


async def _local_detect(path: str) -> str | None:
    # The image code (and the line selection below) is loaded by the first read, not with the
    # tool's definition.
    from pi_rpc.tools.images import detect_supported_image_mime_type_from_file

    return await anyio.to_thread.run_sync(detect_supported_image_mime_type_from_file, path, abandon_on_cancel=True)


_CHUNK_BYTES = 1024 * 1024


async def _local_read_chunks(path: str) -> AsyncIterator[bytes]:
    """The file as fs.readFile reads it: a regular file up to its size when opened (text appended
    meanwhile is not read, and a growing file still ends), anything else until its end."""
    file = await anyio.to_thread.run_sync(open, path, "rb", abandon_on_cancel=True)
    try:
        info = os.fstat(file.fileno())
        remaining = info.st_size if stat.S_ISREG(info.st_mode) and info.st_size > 0 else None
        while remaining is None or remaining > 0:
            size = _CHUNK_BYTES if remaining is None else min(_CHUNK_BYTES, remaining)
            chunk = await anyio.to_thread.run_sync(file.read, size, abandon_on_cancel=True)
            if not chunk:
                return
            if remaining is not None:
                remaining -= len(chunk)
            yield chunk
    finally:
        file.close()


def local_read_operations() -> ReadOperations:
    return ReadOperations(
        read_file=_local_read_file,
        access=_local_access,
        detect_image_mime_type=_local_detect,
        read_chunks=_local_read_chunks,
    )


def _js_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _image_result(data: bytes, mime_type: str, auto_resize: bool, model: Model | None) -> AgentToolResult:
    from pi_rpc.tools.images import process_image

    processed = process_image(data, mime_type, auto_resize=auto_resize)
    if not processed.ok:
        text = f"Read image file [{mime_type}]\n{processed.message}"
        return AgentToolResult(content=[TextContent(text=text)], structured_content=text)
    note = "\n".join([f"Read image file [{processed.mime_type}]", *processed.hints])
    content: list[ToolResultContent] = [
        TextContent(text=note),
        ImageContent(data=processed.data, mime_type=processed.mime_type),
    ]
    unsupported = model is not None and "image" not in model.input
    return AgentToolResult(
        content=content,
        details=ImageReadDetails(image_unsupported_by_model=model.id) if model is not None and unsupported else UNSET,
        structured_content=ImageReadOutput("image", processed.data, processed.mime_type, note),
    )


def text_page(text: str, path: str, offset: float | None, limit: float | None) -> AgentToolResult:
    """Spec 8.7-8.8 for a text in memory: the selected lines plus the one continuation notice."""
    from pi_rpc.tools.read_lines import select_text

    return _page(select_text(text, _start_line(offset), _limit_lines(limit)), path, offset, limit)


def _start_line(offset: float | None) -> int:
    return max(0, int(offset) - 1) if offset else 0


def _limit_lines(limit: float | None) -> int | None:
    return None if limit is None else int(limit)


def _streamable(offset: float | None, limit: float | None) -> bool:
    """Pi's test for reading in chunks; other ranges (a fraction, a negative limit) read the whole
    text, whose slicing defines what they select."""
    return (offset is None or float(offset).is_integer()) and (
        limit is None or (float(limit).is_integer() and limit >= 0)
    )


def _page(selection: Selection, path: str, offset: float | None, limit: float | None) -> AgentToolResult:
    total = selection.total_file_lines
    start = _start_line(offset)
    shown_start = start + 1
    if start >= total:
        shown_offset = _js_number(offset) if offset is not None else "0"
        raise ToolError(f"Offset {shown_offset} is beyond end of file ({total} lines total)")
    user_limited = None if limit is None else min(start + int(limit), total) - start
    content, truncation = selection.content, selection.truncation
    details: ReadDetails | UnsetType = UNSET
    limit_text = format_size(DEFAULT_MAX_BYTES)
    if truncation.first_line_exceeds_limit:
        size = format_size(selection.first_line_bytes)
        output = (
            f"[Line {shown_start} is {size}, exceeds {limit_text} limit. "
            f"Use bash: sed -n '{shown_start}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        details = ReadDetails(truncation=truncation)
    elif truncation.truncated:
        end_shown = shown_start + truncation.output_lines - 1
        bound = "" if truncation.truncated_by == "lines" else f" ({limit_text} limit)"
        output = (
            f"{content}\n\n[Showing lines {shown_start}-{end_shown} of {total}{bound}. "
            f"Use offset={end_shown + 1} to continue.]"
        )
        details = ReadDetails(truncation=truncation)
    elif user_limited is not None and start + user_limited < total:
        remaining = total - (start + user_limited)
        next_offset = start + user_limited + 1
        output = f"{content}\n\n[{remaining} more lines in file. Use offset={next_offset} to continue.]"
    else:
        output = content
    return AgentToolResult(content=[TextContent(text=output)], details=details, structured_content=output)


def create_read_tool(*, operations: ReadOperations | None = None, auto_resize_images: bool = True) -> ToolDefinition:
    ops = operations or local_read_operations()

    async def execute(params: ReadParams, call: ToolCallContext) -> AgentToolResult:
        from pi_rpc.tools.read_lines import select_streamed, select_text

        effective_cwd = call.cwd  # spec 1.10
        absolute = await anyio.to_thread.run_sync(resolve_read_path, params.path, effective_cwd)
        try:
            await ops.access(absolute)
        except OSError as exc:
            raise ToolError(node_error_message(exc, "access", absolute)) from exc
        offset = None if params.offset is UNSET else params.offset
        limit = None if params.limit is UNSET else params.limit
        try:
            mime_type = await ops.detect_image_mime_type(absolute) if ops.detect_image_mime_type else None
            if mime_type:
                data = await ops.read_file(absolute)
                return await anyio.to_thread.run_sync(_image_result, data, mime_type, auto_resize_images, call.model)
            if ops.read_chunks is not None and _streamable(offset, limit):
                chunks = ops.read_chunks(absolute)
                selection = await select_streamed(chunks, _start_line(offset), _limit_lines(limit))
            else:
                text = (await ops.read_file(absolute)).decode("utf-8", errors="replace")
                selection = select_text(text, _start_line(offset), _limit_lines(limit))
        except OSError as exc:
            # Node opens a directory fine and fails on the read that follows.
            syscall = "read" if exc.errno == errno.EISDIR else "open"
            raise ToolError(node_error_message(exc, syscall, absolute)) from exc
        return _page(selection, params.path, offset, limit)

    return ToolDefinition(
        name="read",
        label="read",
        description=DESCRIPTION,
        parameters=ReadParams,
        execute=execute,
        prompt_snippet=PROMPT_SNIPPET,
        prompt_guidelines=list(PROMPT_GUIDELINES),
        constrained_sampling=JsonSchemaSampling(strict="prefer"),
    )


__all__ = [
    "DESCRIPTION",
    "ReadOperations",
    "ReadParams",
    "create_read_tool",
    "local_read_operations",
    "text_page",
]

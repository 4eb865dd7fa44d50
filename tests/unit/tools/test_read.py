"""The read tool (spec 8) and its image handling (spec 8.5, 8.6)."""

from __future__ import annotations

import base64
import io
import os
import tracemalloc
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from pi_rpc.agent.types import AgentToolResult, ToolError
from pi_rpc.ai.types import ImageContent, JsonSchemaSampling, Model, TextContent
from pi_rpc.tools import images
from pi_rpc.tools.images import process_image, sniff_image_mime_type
from pi_rpc.tools.read import ReadDetails, ReadOperations, ReadParams, create_read_tool, text_page
from pi_rpc.tools.truncate import format_size

from .helpers import run_tool

pytestmark = pytest.mark.anyio


def _model(*inputs: str) -> Model:
    return Model(id="m", name="m", api="faux", provider="faux", input=list(inputs))  # type: ignore[arg-type]


async def _read(cwd: Path, args: dict[str, Any], model: Model | None = None, **options: Any) -> AgentToolResult:
    return await run_tool(create_read_tool(**options), args, cwd, model=model)


def _texts(result: AgentToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


def _text(result: AgentToolResult) -> str:
    (text,) = _texts(result)
    return text


def _image_bytes(size: tuple[int, int], fmt: str, mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, (200, 30, 30) if mode == "RGB" else None).save(out, format=fmt)
    return out.getvalue()


# --- declaration ---------------------------------------------------------------------------------


def test_declaration() -> None:
    """spec 8.1, 8.2, 4.2."""
    tool = create_read_tool()
    assert tool.name == tool.label == "read"
    assert tool.description == (
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images "
        "are sent "
        "as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit "
        "first). Use "
        "offset/limit for large files. When you need the full file, continue with offset until complete."
    )
    assert tool.prompt_snippet == "Read file contents"
    assert tool.prompt_guidelines == ["Use read to examine files instead of cat or sed."]
    assert tool.constrained_sampling == JsonSchemaSampling(strict="prefer")
    _, defs = msgspec.json.schema_components([ReadParams])
    schema = defs["ReadParams"]
    assert schema["required"] == ["path"]
    assert schema["properties"] == {
        "path": {"description": "Path to the file to read (relative or absolute)", "type": "string"},
        "offset": {"description": "Line number to start reading from (1-indexed)", "type": "number"},
        "limit": {"description": "Maximum number of lines to read", "type": "number"},
    }


# --- text ----------------------------------------------------------------------------------------


async def test_whole_small_file_is_returned_raw(tmp_path: Path) -> None:
    """spec 8.8 last case, 8.9: content unchanged, no line numbers, details undefined."""
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    result = await _read(tmp_path, {"path": "a.txt"})
    assert _text(result) == "one\ntwo\n"
    assert result.details is msgspec.UNSET


async def test_offset_and_limit_with_more_lines_notice(tmp_path: Path) -> None:
    """spec 8.7, 8.8: `[{remaining} more lines in file. Use offset={n} to continue.]`."""
    (tmp_path / "a.txt").write_text("\n".join(f"line{i}" for i in range(1, 11)))
    result = await _read(tmp_path, {"path": "a.txt", "offset": 3, "limit": 2})
    assert _text(result) == "line3\nline4\n\n[6 more lines in file. Use offset=5 to continue.]"
    assert result.details is msgspec.UNSET


async def test_limit_reaching_the_end_has_no_notice(tmp_path: Path) -> None:
    """spec 8.8: the user limit did not stop before the end."""
    (tmp_path / "a.txt").write_text("a\nb\nc")
    assert _text(await _read(tmp_path, {"path": "a.txt", "offset": 2, "limit": 5})) == "b\nc"


async def test_trailing_newline_counts_as_a_final_empty_line(tmp_path: Path) -> None:
    """spec 8.7: split on \\n, so `a\\nb\\n` has 3 lines for offsets and notices."""
    (tmp_path / "a.txt").write_text("a\nb\n")
    assert _text(await _read(tmp_path, {"path": "a.txt", "limit": 1})) == (
        "a\n\n[2 more lines in file. Use offset=2 to continue.]"
    )
    assert _text(await _read(tmp_path, {"path": "a.txt", "offset": 3})) == ""


async def test_offset_zero_behaves_like_one_and_strings_are_coerced(tmp_path: Path) -> None:
    """spec 8.7 (`offset: 0` is falsy) and 3.4 (numeric strings become numbers)."""
    (tmp_path / "a.txt").write_text("a\nb")
    assert _text(await _read(tmp_path, {"path": "a.txt", "offset": 0})) == "a\nb"
    assert _text(await _read(tmp_path, {"path": "a.txt", "offset": "2"})) == "b"


async def test_offset_beyond_end(tmp_path: Path) -> None:
    """spec 8.7: `Offset {offset} is beyond end of file ({n} lines total)`."""
    (tmp_path / "a.txt").write_text("a\nb\n")
    with pytest.raises(ToolError) as info:
        await _read(tmp_path, {"path": "a.txt", "offset": 4})
    assert str(info.value) == "Offset 4 is beyond end of file (3 lines total)"


async def test_truncated_by_lines(tmp_path: Path) -> None:
    """spec 8.8: `[Showing lines {start}-{end} of {total}. Use offset={end+1} to continue.]`."""
    (tmp_path / "big.txt").write_text("\n".join(f"L{i}" for i in range(1, 2501)))
    result = await _read(tmp_path, {"path": "big.txt", "offset": 11})
    text = _text(result)
    assert text.startswith("L11\nL12\n")
    assert text.endswith("L2010\n\n[Showing lines 11-2010 of 2500. Use offset=2011 to continue.]")
    assert isinstance(result.details, ReadDetails)
    truncation = result.details.truncation
    assert (truncation.truncated_by, truncation.output_lines, truncation.total_lines) == ("lines", 2000, 2490)


async def test_truncated_by_bytes(tmp_path: Path) -> None:
    """spec 8.8: `... of {total} (50.0KB limit). Use offset=...`."""
    line = "x" * 1000
    (tmp_path / "wide.txt").write_text("\n".join([line] * 100))
    result = await _read(tmp_path, {"path": "wide.txt"})
    text = _text(result)
    assert text.endswith(f"{line}\n\n[Showing lines 1-51 of 100 (50.0KB limit). Use offset=52 to continue.]")
    assert text.count(line) == 51
    assert isinstance(result.details, ReadDetails) and result.details.truncation.truncated_by == "bytes"


async def test_first_line_too_long_points_at_bash(tmp_path: Path) -> None:
    """spec 8.8: the path is shown as given, unquoted, and no content is returned."""
    (tmp_path / "min.js").write_text("short\n" + "y" * 60_000 + "\nend")
    result = await _read(tmp_path, {"path": "@min.js", "offset": 2})
    assert _text(result) == "[Line 2 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '2p' @min.js | head -c 51200]"
    assert isinstance(result.details, ReadDetails) and result.details.truncation.first_line_exceeds_limit


async def test_invalid_utf8_is_replaced_not_rejected(tmp_path: Path) -> None:
    """spec 8.7, 8.9: decoded as UTF-8 with no binary detection."""
    (tmp_path / "bin.dat").write_bytes(b"ok\xff\xfe\n")
    assert _text(await _read(tmp_path, {"path": "bin.dat"})) == "ok\ufffd\ufffd\n"


async def test_missing_file_is_a_node_style_enoent(tmp_path: Path) -> None:
    """spec 8.4: `ENOENT: no such file or directory, access '{absolutePath}'`."""
    with pytest.raises(ToolError) as info:
        await _read(tmp_path, {"path": "sub/../nope.txt"})
    assert str(info.value) == f"ENOENT: no such file or directory, access '{tmp_path / 'nope.txt'}'"


async def test_directory_is_an_error(tmp_path: Path) -> None:
    """spec 8.4: the OS error propagates (reading a directory)."""
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="^EISDIR: illegal operation on a directory, read$"):
        await _read(tmp_path, {"path": "d"})


async def test_macos_variant_and_effective_cwd(tmp_path: Path) -> None:
    """spec 6.3 via read, and 1.9: ctx.cwd wins over the construction cwd."""
    (tmp_path / "Shot 1.02\u202fPM.txt").write_text("found")
    result = await run_tool(create_read_tool(), {"path": "Shot 1.02 PM.txt"}, tmp_path)
    assert _text(result) == "found"


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab\u00e9", max_size=5), min_size=1, max_size=30),
    offset=st.integers(min_value=1, max_value=30),
    limit=st.integers(min_value=1, max_value=30),
)
def test_paging_never_loses_or_repeats_a_line(lines: list[str], offset: int, limit: int) -> None:
    """spec 8.7/8.8: following the continuation offsets visits every line exactly once."""
    text = "\n".join(lines)
    if offset > len(lines):
        with pytest.raises(ToolError):
            text_page(text, "f", offset, limit)
        return
    seen: list[str] = []
    current: int | None = offset
    while current is not None:
        page = text_page(text, "f", current, limit).content[0]
        assert isinstance(page, TextContent)
        body, _, notice = page.text.partition("\n\n[")
        seen.extend(body.split("\n"))
        current = int(notice.split("offset=")[1].split(" ")[0]) if notice else None
    assert seen == lines[offset - 1 :]


# --- images --------------------------------------------------------------------------------------


def test_sniffing_uses_magic_bytes() -> None:
    """spec 8.5: JPEG, PNG, GIF (full signature), WebP, BMP; anything else is text."""
    assert sniff_image_mime_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert sniff_image_mime_type(b"\x89PNG\r\n\x1a\n....") == "image/png"
    assert sniff_image_mime_type(b"GIF89a...") == "image/gif"
    assert sniff_image_mime_type(b"GIF87a...") == "image/gif"
    assert sniff_image_mime_type(b"GIF8") is None
    assert sniff_image_mime_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_image_mime_type(b"RIFF\x00\x00\x00\x00WAVEfmt ") is None
    assert sniff_image_mime_type(_image_bytes((2, 2), "BMP")) == "image/bmp"
    assert sniff_image_mime_type(b"BMW owners' club newsletter") is None
    assert sniff_image_mime_type(b"") is None


async def test_png_named_txt_is_an_image(tmp_path: Path) -> None:
    """spec 8.5, 8.6: detection ignores the extension; small images pass through unchanged."""
    data = _image_bytes((40, 30), "PNG")
    (tmp_path / "notes.txt").write_bytes(data)
    result = await _read(tmp_path, {"path": "notes.txt"})
    assert _texts(result) == ["Read image file [image/png]"]
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert (image.mime_type, base64.b64decode(image.data)) == ("image/png", data)
    assert result.details is msgspec.UNSET


async def test_text_named_png_is_text(tmp_path: Path) -> None:
    """spec 8.5: a file named `x.png` containing text is read as text; empty is not an image."""
    (tmp_path / "x.png").write_text("not really")
    (tmp_path / "empty.png").write_bytes(b"")
    assert _text(await _read(tmp_path, {"path": "x.png"})) == "not really"
    assert _text(await _read(tmp_path, {"path": "empty.png"})) == ""


async def test_bmp_is_converted_to_png(tmp_path: Path) -> None:
    """spec 8.6: `[Image converted from image/bmp to image/png.]`."""
    (tmp_path / "pic.bmp").write_bytes(_image_bytes((8, 6), "BMP"))
    result = await _read(tmp_path, {"path": "pic.bmp"})
    assert _texts(result) == ["Read image file [image/png]\n[Image converted from image/bmp to image/png.]"]
    image = result.content[1]
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert Image.open(io.BytesIO(base64.b64decode(image.data))).size == (8, 6)


async def test_large_image_is_resized_with_a_coordinate_note(tmp_path: Path) -> None:
    """spec 8.6: max 2000x2000; `Multiply coordinates by {W/w to 2 decimals}`."""
    (tmp_path / "wide.png").write_bytes(_image_bytes((3000, 1200), "PNG"))
    result = await _read(tmp_path, {"path": "wide.png"})
    (note,) = _texts(result)
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert note == (
        f"Read image file [{image.mime_type}]\n[Image: original 3000x1200, displayed at 2000x800. "
        "Multiply coordinates by 1.50 to map to original image.]"
    )
    assert Image.open(io.BytesIO(base64.b64decode(image.data))).size == (2000, 800)


async def test_no_resize_when_disabled(tmp_path: Path) -> None:
    """spec 8.6: auto-resize is a default, not a must."""
    data = _image_bytes((2100, 10), "PNG")
    (tmp_path / "wide.png").write_bytes(data)
    result = await _read(tmp_path, {"path": "wide.png"}, auto_resize_images=False)
    assert _texts(result) == ["Read image file [image/png]"]
    image = result.content[1]
    assert isinstance(image, ImageContent) and base64.b64decode(image.data) == data


async def test_non_vision_model_is_named_in_details(tmp_path: Path) -> None:
    """spec 8.6 (Pi 1.6.0): when the current model takes no images the text stays the plain note and
    `details.imageUnsupportedByModel` names the model; no model -> assume it does. Pi 1.6.0 answered
    `{"imageUnsupportedByModel": "m"}` for a text-only model `m`, with this text."""
    (tmp_path / "p.gif").write_bytes(_image_bytes((4, 4), "GIF"))
    result = await _read(tmp_path, {"path": "p.gif"}, model=_model("text"))
    assert _texts(result) == ["Read image file [image/gif]"]
    assert isinstance(result.content[1], ImageContent)
    assert msgspec.json.decode(msgspec.json.encode(result.details)) == {"imageUnsupportedByModel": "m"}
    vision = await _read(tmp_path, {"path": "p.gif"}, model=_model("text", "image"))
    assert _texts(vision) == ["Read image file [image/gif]"] and vision.details is msgspec.UNSET


async def test_structured_content_is_the_text_or_the_image(tmp_path: Path) -> None:
    """Pi 0.99: a text read's `structuredContent` is its text; an image read's, the image block
    with its note."""
    (tmp_path / "small.txt").write_text("one\ntwo\n")
    text = await _read(tmp_path, {"path": "small.txt"})
    assert text.structured_content == "one\ntwo\n"
    (tmp_path / "p.gif").write_bytes(_image_bytes((4, 4), "GIF"))
    image = await _read(tmp_path, {"path": "p.gif"})
    block = image.content[1]
    assert isinstance(block, ImageContent)
    assert msgspec.json.decode(msgspec.json.encode(image.structured_content)) == {
        "type": "image",
        "data": block.data,
        "mimeType": "image/gif",
        "note": "Read image file [image/gif]",
    }


async def test_unconvertible_image_is_omitted(tmp_path: Path) -> None:
    """spec 8.6: processing failure -> only text `Read image file [{mime}]\\n{message}`."""
    header = _image_bytes((2, 2), "BMP")[:18]
    (tmp_path / "broken.bmp").write_bytes(header + b"\x00" * 4)
    result = await _read(tmp_path, {"path": "broken.bmp"}, model=_model("text"))
    assert [type(block) for block in result.content] == [TextContent]
    assert _text(result) == (
        "Read image file [image/bmp]\n[Image omitted: could not be converted to a supported inline image format.]"
    )
    assert result.details is msgspec.UNSET and result.structured_content == _text(result)


def test_image_that_cannot_shrink_enough_is_rejected() -> None:
    """spec 8.6: the resize ladder gives up (None) when even its smallest attempt is too big."""
    noisy = Image.frombytes("RGB", (300, 300), os.urandom(300 * 300 * 3))
    out = io.BytesIO()
    noisy.save(out, format="PNG")
    assert images.resize_image(out.getvalue(), "image/png", max_bytes=1000) is None


def test_resize_failure_message_from_process_image(monkeypatch: pytest.MonkeyPatch) -> None:
    """spec 8.6: process_image reports the resize failure text."""
    monkeypatch.setattr(images, "resize_image", lambda data, mime: None)
    processed = process_image(_image_bytes((4, 4), "PNG"), "image/png")
    assert (processed.ok, processed.message) == (
        False,
        "[Image omitted: could not be resized below the inline image size limit.]",
    )


async def test_operations_route_io_elsewhere() -> None:
    """spec 1.11: readFile, access and detectImageMimeType are replaceable."""
    calls: list[str] = []

    async def read_file(path: str) -> bytes:
        calls.append(f"read {path}")
        return b"from the editor buffer"

    async def access(path: str) -> None:
        calls.append(f"access {path}")

    tool = create_read_tool(operations=ReadOperations(read_file=read_file, access=access))
    result = await run_tool(tool, {"path": "src/x.py"}, "/project")
    assert _text(result) == "from the editor buffer"
    assert calls == ["access /project/src/x.py", "read /project/src/x.py"]


@pytest.mark.anyio
async def test_a_fifo_is_refused_instead_of_blocking(tmp_path: Path) -> None:
    """Improvement over Pi (whose read would hang): pipes and devices are not read."""
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ToolError, match="not a regular file"):
        await run_tool(create_read_tool(), {"path": "pipe"}, str(tmp_path))


@pytest.mark.anyio
async def test_a_huge_file_is_refused_when_it_must_be_loaded_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Operations that only load whole files (editor buffers, images) still refuse a huge one, with
    a way to read part of it; the local read streams instead (next test)."""
    from pi_rpc.tools import read as read_module

    monkeypatch.setattr(read_module, "MAX_READ_BYTES", 1024)
    (tmp_path / "big.log").write_bytes(b"x\n" * 1000)
    local = read_module.local_read_operations()
    whole_only = ReadOperations(read_file=local.read_file, access=local.access)
    with pytest.raises(ToolError) as refused:
        await run_tool(create_read_tool(operations=whole_only), {"path": "big.log"}, str(tmp_path))
    assert "more than read loads at once (1.0KB)" in str(refused.value)
    assert "sed -n '1,200p'" in str(refused.value)
    streamed = await run_tool(create_read_tool(), {"path": "big.log"}, str(tmp_path))
    assert _text(streamed) == "x\n" * 1000


@pytest.mark.anyio
@pytest.mark.parametrize("shape", ["many lines", "one long line"])
async def test_read_streams_the_file(tmp_path: Path, shape: str) -> None:
    """Pi 1.5.1: read holds only what it can show, so a 24 MB file costs far less than 24 MB (it
    used to be decoded and split whole); the answer is the one the whole text gives."""
    big = tmp_path / "big.txt"
    size = 24 * 1024 * 1024
    with big.open("wb") as out:
        block = (b"0123456789abcdef" * 4 + b"\n") if shape == "many lines" else b"x" * 65
        for _ in range(size // len(block)):
            out.write(block)
    tracemalloc.start()
    try:
        args = {"path": "big.txt", "offset": 3} if shape == "many lines" else {"path": "big.txt"}
        result = await run_tool(create_read_tool(), args, str(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB"
    lines = size // 65
    if shape == "many lines":
        assert _text(result).endswith(
            f"[Showing lines 3-789 of {lines + 1} (50.0KB limit). Use offset=790 to continue.]"
        )
    else:
        assert _text(result) == (
            f"[Line 1 is {format_size(lines * 65)}, exceeds 50.0KB limit. "
            "Use bash: sed -n '1p' big.txt | head -c 51200]"
        )

"""Image sniffing and inline-image preparation for the read tool (spec 8.5, 8.6).

The type comes from magic bytes, never from the file name. Formats every provider accepts inline
(PNG, JPEG, GIF, WebP) pass through as they are; anything else (BMP) is converted to PNG. With
auto-resize on, an image larger than 2000x2000 pixels or 4.5 MB of base64 is scaled down and
re-encoded (PNG or JPEG, whichever is smaller), stepping down JPEG quality and then size until it
fits; the model is told the original size so it can map coordinates back.

Everything here is synchronous and CPU-bound: callers run it in a worker thread.
"""

from __future__ import annotations

import base64
import io
import math
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:  # Pillow is imported on the first image, not at the daemon's start
    from PIL import Image

SNIFF_BYTES = 4100
DEFAULT_MAX_WIDTH = 2000
DEFAULT_MAX_HEIGHT = 2000
DEFAULT_MAX_BYTES = int(4.5 * 1024 * 1024)  # of base64, below Anthropic's 5 MB limit
DEFAULT_JPEG_QUALITY = 80
# JPEG sources degrade in quality before they shrink in size.
JPEG_QUALITY_LADDER = (95, 80, 60, 40, 20)
QUALITY_STEPS = (85, 70, 55, 40)
SCALE_STEPS = (1.0, 0.75, 0.5, 0.35, 0.25)
MIN_SCALED_SIDE = 100

CONVERT_FAILED = "[Image omitted: could not be converted to a supported inline image format.]"
RESIZE_FAILED = "[Image omitted: could not be resized below the inline image size limit.]"

_INLINE_MIME_TYPES = {
    "image/png": "image/png",
    "image/jpeg": "image/jpeg",
    "image/jpg": "image/jpeg",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
}
# Sizes of the BMP info headers in use (core, v1-v5 and the two Adobe variants).
_BMP_INFO_HEADER_SIZES = {12, 16, 40, 52, 56, 64, 108, 124}


def sniff_image_mime_type(head: bytes) -> str | None:
    """The supported image type whose signature `head` starts with, else None (spec 8.5)."""
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    # "BM" alone would claim every text file starting "BM..."; the info-header size pins it down.
    if len(head) >= 18 and head[:2] == b"BM" and int.from_bytes(head[14:18], "little") in _BMP_INFO_HEADER_SIZES:
        return "image/bmp"
    return None


def detect_supported_image_mime_type_from_file(path: str) -> str | None:
    with open(path, "rb") as file:
        return sniff_image_mime_type(file.read(SNIFF_BYTES))


class ProcessedImage(msgspec.Struct):
    """Spec 8.6: either an attachable image plus hint lines, or (ok=False) the omission message."""

    ok: bool
    data: str = ""  # base64
    mime_type: str = ""
    hints: list[str] = msgspec.field(default_factory=list)
    message: str = ""


class _Resized(msgspec.Struct):
    data: bytes
    mime_type: str
    original_width: int
    original_height: int
    width: int
    height: int

    @property
    def was_resized(self) -> bool:
        return (self.width, self.height) != (self.original_width, self.original_height)


def _base64_size(n: int) -> int:
    return math.ceil(n / 3) * 4


def _js_round(value: float) -> int:
    # Math.round: halves go up, also for the exact .5 that Python's round() sends to even.
    return math.floor(value + 0.5)


def _to_fixed_2(value: float) -> str:
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def format_dimension_note(original: tuple[int, int], shown: tuple[int, int]) -> str:
    (ow, oh), (w, h) = original, shown
    return (
        f"[Image: original {ow}x{oh}, displayed at {w}x{h}. "
        f"Multiply coordinates by {_to_fixed_2(ow / w)} to map to original image.]"
    )


def _open_oriented(data: bytes) -> Image.Image:
    from PIL import Image, ImageOps

    image = Image.open(io.BytesIO(data))
    image.load()
    return ImageOps.exif_transpose(image)


def _encode(image: Image.Image, fmt: str, quality: int = DEFAULT_JPEG_QUALITY) -> bytes:
    out = io.BytesIO()
    if fmt == "JPEG":
        image.convert("RGB").save(out, format="JPEG", quality=quality)
    else:
        image.save(out, format="PNG")
    return out.getvalue()


def _prepared(image: Image.Image) -> Image.Image:
    # Palette and odd modes cannot be resampled with Lanczos; keep alpha when there is any.
    if image.mode in ("RGB", "RGBA"):
        return image
    has_alpha = image.mode in ("LA", "La", "PA", "RGBa") or "transparency" in image.info
    return image.convert("RGBA" if has_alpha else "RGB")


def _fit(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    if width > max_width:
        height, width = _js_round(height * max_width / width), max_width
    if height > max_height:
        width, height = _js_round(width * max_height / height), max_height
    return max(1, width), max(1, height)


def _smaller_encoding(image: Image.Image, size: tuple[int, int], quality: int) -> tuple[bytes, str]:
    from PIL import Image

    scaled = image.resize(size, Image.Resampling.LANCZOS)
    png = _encode(scaled, "PNG")
    jpeg = _encode(scaled, "JPEG", quality)
    return (png, "image/png") if len(png) <= len(jpeg) else (jpeg, "image/jpeg")


def _resize_jpeg_ladder(image: Image.Image, target: tuple[int, int], max_bytes: int) -> tuple[bytes, str] | None:
    from PIL import Image

    scaled = image.resize(target, Image.Resampling.LANCZOS)
    for quality in JPEG_QUALITY_LADDER:
        encoded = _encode(scaled, "JPEG", quality)
        if _base64_size(len(encoded)) < max_bytes:
            return encoded, "image/jpeg"
    return None


def _resize_general(
    image: Image.Image, target: tuple[int, int], max_bytes: int
) -> tuple[bytes, str, tuple[int, int]] | None:
    attempts: list[tuple[tuple[int, int], int]] = [(target, DEFAULT_JPEG_QUALITY)]
    attempts += [(target, quality) for quality in QUALITY_STEPS]
    for scale in SCALE_STEPS:
        size = (_js_round(target[0] * scale), _js_round(target[1] * scale))
        if size[0] < MIN_SCALED_SIDE or size[1] < MIN_SCALED_SIDE:
            break
        attempts += [(size, quality) for quality in QUALITY_STEPS]
    for size, quality in attempts:
        encoded, mime = _smaller_encoding(image, size, quality)
        if _base64_size(len(encoded)) < max_bytes:
            return encoded, mime, size
    return None


def resize_image(
    data: bytes,
    mime_type: str,
    *,
    max_width: int = DEFAULT_MAX_WIDTH,
    max_height: int = DEFAULT_MAX_HEIGHT,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> _Resized | None:
    """Fit an inline-format image into the limits; None when even the smallest attempt is too big."""
    try:
        image = _open_oriented(data)
    except Exception:
        # Undecodable: pass it through if it is small enough, as Pi does when its decoder fails.
        if _base64_size(len(data)) >= max_bytes:
            return None
        return _Resized(data, mime_type, 0, 0, 0, 0)
    width, height = image.size
    if width <= max_width and height <= max_height and _base64_size(len(data)) < max_bytes:
        return _Resized(data, mime_type, width, height, width, height)
    target = _fit(width, height, max_width, max_height)
    image = _prepared(image)
    if mime_type == "image/jpeg":
        laddered = _resize_jpeg_ladder(image, target, max_bytes)
        if laddered is not None:
            return _Resized(laddered[0], laddered[1], width, height, *target)
    general = _resize_general(image, target, max_bytes)
    if general is None:
        return None
    encoded, mime, size = general
    return _Resized(encoded, mime, width, height, *size)


def _convert_to_png(data: bytes) -> bytes | None:
    try:
        return _encode(_prepared(_open_oriented(data)), "PNG")
    except Exception:
        return None


def _conversion_hint(source: str | None, final: str) -> list[str]:
    return [f"[Image converted from {source} to {final}.]"] if source and source != final else []


def process_image(data: bytes, mime_type: str, *, auto_resize: bool = True) -> ProcessedImage:
    """Spec 8.6: the image block's data and type plus the hint lines for the text note."""
    source = mime_type.split(";", 1)[0].strip().lower()
    inline = _INLINE_MIME_TYPES.get(source)
    converted_from: str | None = None
    if inline is None:
        png = _convert_to_png(data)
        if png is None:
            return ProcessedImage(ok=False, message=CONVERT_FAILED)
        data, inline, converted_from = png, "image/png", source
    if not auto_resize:
        encoded = base64.b64encode(data).decode("ascii")
        return ProcessedImage(ok=True, data=encoded, mime_type=inline, hints=_conversion_hint(converted_from, inline))
    resized = resize_image(data, inline)
    if resized is None:
        return ProcessedImage(ok=False, message=RESIZE_FAILED)
    hints = _conversion_hint(converted_from, resized.mime_type)
    if resized.was_resized:
        hints.append(
            format_dimension_note((resized.original_width, resized.original_height), (resized.width, resized.height))
        )
    encoded = base64.b64encode(resized.data).decode("ascii")
    return ProcessedImage(ok=True, data=encoded, mime_type=resized.mime_type, hints=hints)


__all__ = [
    "CONVERT_FAILED",
    "RESIZE_FAILED",
    "ProcessedImage",
    "detect_supported_image_mime_type_from_file",
    "format_dimension_note",
    "process_image",
    "resize_image",
    "sniff_image_mime_type",
]

"""PNG screenshots of a headless Neovim's screen, for the README's pictures.

A second channel to the test's Neovim (a socket it opens with serverstart()) attaches as a UI with
ext_linegrid: the test's own channel never sees a redraw event. Without ext_multigrid Neovim
composes floats, splits and the winbar into grid 1, so one cell grid holds the whole screen; it is
painted with Pillow in JetBrains Mono, which the test extra installs from PyPI (fontpkg), so the
picture does not depend on the fonts of the machine. The marks the plugin writes that the font
lacks (✓ ✗ ⏳ ⏸) are drawn as lines instead of its missing-glyph box."""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import msgpack  # type: ignore[import-untyped]
import pynvim  # type: ignore[import-untyped]
from PIL import Image, ImageDraw, ImageFont

from .conftest import GUARD_S

ROOT = Path(__file__).resolve().parents[2]
MEDIA = ROOT / "editor-clients" / "nvim" / "media"
# PI_RPC_UPDATE_SCREENSHOTS=1: the tests that take a picture also copy it into MEDIA.
UPDATE_ENV = "PI_RPC_UPDATE_SCREENSHOTS"
FONT_SIZE = 15
FONT_DIR = files("fontpkg_jetbrains_mono") / "files"

# The size the pictures are taken at: set before the scenario opens its windows and floats.
COLUMNS, LINES = 100, 30

RGB = tuple[int, int, int]


def rgb(value: int) -> RGB:
    return (value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF


@dataclass
class Cell:
    text: str = " "
    hl: int = 0


@dataclass
class Grid:
    """Grid 1 as the redraw events left it at the last flush."""

    cols: int
    rows: int
    fg: RGB = (0xE0, 0xE2, 0xEA)
    bg: RGB = (0x14, 0x16, 0x1B)
    attrs: dict[int, dict[str, Any]] = field(default_factory=dict)
    cells: list[list[Cell]] = field(default_factory=list)
    cursor: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.cells = [[Cell() for _ in range(self.cols)] for _ in range(self.rows)]

    def redraw(self, message: list[Any]) -> bool:
        """Applies a msgpack-RPC message if it is a redraw notification: whether it ended a frame."""
        if message[0] != 2 or message[1] != "redraw":  # [2, method, params]: a notification
            return False
        flushed = False
        for name, *calls in message[2]:
            for args in calls:
                self.apply(name, list(args))
            flushed = flushed or name == "flush"
        return flushed

    def apply(self, name: str, args: list[Any]) -> None:
        """One redraw event (its argument tuple); events of other grids or extensions are ignored."""
        if name == "grid_resize" and args[0] == 1:
            self.cols, self.rows = args[1], args[2]
            self.clear()
        elif name == "default_colors_set":
            # -1 means "the UI's choice": keep ours.
            if args[0] >= 0:
                self.fg = rgb(args[0])
            if args[1] >= 0:
                self.bg = rgb(args[1])
        elif name == "hl_attr_define":
            self.attrs[args[0]] = args[1]
        elif name == "grid_clear" and args[0] == 1:
            self.clear()
        elif name == "grid_cursor_goto" and args[0] == 1:
            self.cursor = (args[1], args[2])
        elif name == "grid_line" and args[0] == 1:
            self.line(args[1], args[2], args[3])
        elif name == "grid_scroll" and args[0] == 1:
            self.scroll(*args[1:])

    def line(self, row: int, col: int, cells: list[list[Any]]) -> None:
        hl = 0
        for cell in cells:
            # [text, hl_id, repeat]: a missing hl_id is the previous cell's.
            if len(cell) > 1:
                hl = cell[1]
            for _ in range(cell[2] if len(cell) > 2 else 1):
                self.cells[row][col] = Cell(cell[0], hl)
                col += 1

    def scroll(self, top: int, bot: int, left: int, right: int, rows: int, _cols: int) -> None:
        """The region moves up by `rows` (down when negative); the rows it uncovers come as grid_line."""
        order = range(top, bot - rows) if rows > 0 else range(bot - 1, top - rows - 1, -1)
        for row in order:
            self.cells[row][left:right] = self.cells[row + rows][left:right]

    def colours(self, hl: int) -> tuple[RGB, RGB]:
        attr = self.attrs.get(hl, {})
        fg = rgb(attr["foreground"]) if "foreground" in attr else self.fg
        bg = rgb(attr["background"]) if "background" in attr else self.bg
        return (bg, fg) if attr.get("reverse") else (fg, bg)


class Fonts:
    """JetBrains Mono at one size in the four faces the highlight attributes ask for."""

    def __init__(self, size: int = FONT_SIZE) -> None:
        self.faces: dict[tuple[bool, bool], ImageFont.FreeTypeFont] = {}
        for italic, file in ((False, "JetBrainsMono[wght].ttf"), (True, "JetBrainsMono-Italic[wght].ttf")):
            for bold in (False, True):
                face = ImageFont.truetype(str(FONT_DIR / file), size)
                face.set_variation_by_axes([700 if bold else 400])
                self.faces[(bold, italic)] = face
        regular = self.faces[(False, False)]
        ascent, descent = regular.getmetrics()
        self.width, self.height, self.ascent = round(regular.getlength("M")), ascent + descent, ascent

    def face(self, attr: dict[str, Any]) -> ImageFont.FreeTypeFont:
        return self.faces[(bool(attr.get("bold")), bool(attr.get("italic")))]


def resize(nvim: pynvim.Nvim) -> None:
    """Gives a UI-less Neovim the pictures' size, before the scenario lays out its windows."""
    nvim.command(f"set columns={COLUMNS} lines={LINES}")


def draw_mark(draw: ImageDraw.ImageDraw, mark: str, box: tuple[int, int, int, int], fg: RGB) -> bool:
    """The plugin's marks that JetBrains Mono has no glyph for, as lines in the cell `box`; False
    for any other text."""
    x, y, w, h = box
    top, bottom = y + h * 0.3, y + h * 0.75

    def at(fx: float, fy: float) -> tuple[float, float]:
        return x + w * fx, top + (bottom - top) * fy

    if mark == "✓":
        draw.line([at(0.15, 0.55), at(0.4, 0.95), at(0.9, 0.0)], fill=fg, width=2)
    elif mark == "✗":
        draw.line([at(0.15, 0.0), at(0.85, 1.0)], fill=fg, width=2)
        draw.line([at(0.85, 0.0), at(0.15, 1.0)], fill=fg, width=2)
    elif mark == "⏸":
        for fx in (0.3, 0.7):
            draw.line([at(fx, 0.0), at(fx, 1.0)], fill=fg, width=2)
    elif mark == "⏳":  # two triangles meeting at the middle
        draw.line([at(0.15, 0.0), at(0.85, 0.0), at(0.15, 1.0), at(0.85, 1.0), at(0.15, 0.0)], fill=fg, width=1)
    else:
        return False
    return True


def render(grid: Grid, fonts: Fonts | None = None) -> Image.Image:
    """The grid painted cell by cell: each cell's background, then its glyph (a wide glyph's second
    cell is an empty string and paints only its background); the cursor is not drawn."""
    fonts = fonts or Fonts()
    w, h = fonts.width, fonts.height
    image = Image.new("RGB", (grid.cols * w, grid.rows * h), grid.bg)
    draw = ImageDraw.Draw(image)
    for r, row in enumerate(grid.cells):
        for c, cell in enumerate(row):
            fg, bg = grid.colours(cell.hl)
            x, y = c * w, r * h
            draw.rectangle((x, y, x + w - 1, y + h - 1), fill=bg)
            attr = grid.attrs.get(cell.hl, {})
            if cell.text.strip() and not draw_mark(draw, cell.text, (x, y, w, h), fg):
                draw.text((x, y + fonts.ascent), cell.text, fill=fg, font=fonts.face(attr), anchor="ls")
            if attr.get("underline") or attr.get("undercurl"):
                draw.line((x, y + h - 2, x + w - 1, y + h - 2), fill=fg)
    return image


def frame_ended(grid: Grid, message: list[Any]) -> bool:
    if message[0] == 1 and message[2] is not None:  # [1, id, error, result]: nvim_ui_attach's answer
        raise AssertionError(f"nvim_ui_attach failed: {message[2]}")
    return grid.redraw(message)


def capture(nvim: pynvim.Nvim) -> Grid:
    """Neovim's screen now, at its current size (&columns x &lines, so nothing is laid out again).

    The UI speaks msgpack-RPC on a plain socket: pynvim's socket session leaves its transport open
    when closed (a ResourceWarning, an error under the suite's filterwarnings)."""
    cols, rows = int(nvim.eval("&columns")), int(nvim.eval("&lines"))
    address = str(nvim.call("serverstart"))  # a socket of Neovim's choosing, under its own tmpdir
    try:
        with socket.socket(socket.AF_UNIX) as ui:
            ui.settimeout(GUARD_S)
            ui.connect(address)
            options = {"rgb": True, "ext_linegrid": True}
            ui.sendall(msgpack.packb([0, 1, "nvim_ui_attach", [cols, rows, options]]))
            grid = Grid(cols, rows)
            unpacker = msgpack.Unpacker(raw=False)
            # Attaching redraws the whole screen; its first flush ends a complete frame.
            while not any(map(lambda message: frame_ended(grid, message), unpacker)):
                data = ui.recv(1 << 16)
                if not data:
                    raise AssertionError("Neovim closed the screenshot's UI channel before a flush")
                unpacker.feed(data)
            # Closing the channel detaches the UI.
        return grid
    finally:
        nvim.call("serverstop", address)


def screenshot(nvim: pynvim.Nvim, tmp_path: Path, name: str) -> Path:
    """Writes `name` (a .png) into tmp_path, and into the README's media/ when UPDATE_ENV is 1."""
    out = tmp_path / name
    render(capture(nvim)).save(out)
    if os.environ.get(UPDATE_ENV) == "1":
        MEDIA.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, MEDIA / name)
    return out

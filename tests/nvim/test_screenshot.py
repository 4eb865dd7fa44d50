"""The screenshot helper without a Neovim: redraw events as Neovim sends them (ext_linegrid) make
the cells and colours the PNG shows; and against a real Neovim, its screen's text and colours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pynvim  # type: ignore[import-untyped]
import pytest
from PIL import Image

from .screenshot import Fonts, Grid, capture, render

RED, BLUE, WHITE, BLACK = 0xFF0000, 0x0000FF, 0xFFFFFF, 0x000000


def redraw(*events: list[Any]) -> list[Any]:
    return [2, "redraw", list(events)]


def two_highlighted_cells() -> Grid:
    grid = Grid(4, 2)
    ended = grid.redraw(
        redraw(
            ["default_colors_set", [WHITE, BLACK, RED, 15, 0]],
            ["hl_attr_define", [1, {"background": RED}, {}, []], [2, {"foreground": BLUE, "reverse": True}, {}, []]],
            # "A" in hl 1, then "B" with the hl carried over, "C" in hl 2 repeated twice
            ["grid_line", [1, 1, 0, [["A", 1], ["B"], ["C", 2, 2]], False]],
            ["grid_cursor_goto", [1, 1, 3]],
        )
    )
    assert not ended  # no flush yet
    assert grid.redraw(redraw(["flush", []]))
    return grid


def cell_colour(image: Image.Image, fonts: Fonts, row: int, col: int) -> Any:
    """The pixel at the cell's top left corner: always background, never glyph."""
    return image.getpixel((col * fonts.width, row * fonts.height))


def test_grid_lines_carry_their_highlight_and_repeat() -> None:
    grid = two_highlighted_cells()
    assert [(c.text, c.hl) for c in grid.cells[1]] == [("A", 1), ("B", 1), ("C", 2), ("C", 2)]
    assert [c.text for c in grid.cells[0]] == [" "] * 4
    assert grid.cursor == (1, 3)


def test_the_png_has_each_cells_background_and_a_glyph_in_its_foreground() -> None:
    fonts = Fonts()
    image = render(two_highlighted_cells(), fonts)
    assert image.size == (4 * fonts.width, 2 * fonts.height)
    assert cell_colour(image, fonts, 0, 0) == (0, 0, 0)  # the default background
    assert cell_colour(image, fonts, 1, 0) == (255, 0, 0)  # hl 1's background
    assert cell_colour(image, fonts, 1, 1) == (255, 0, 0)  # carried over to "B"
    assert cell_colour(image, fonts, 1, 3) == (0, 0, 255)  # reversed: the foreground behind the text
    # The glyph "A" is drawn in the default foreground on hl 1's red.
    a_cell = image.crop((0, fonts.height, fonts.width, 2 * fonts.height))
    assert (255, 255, 255) in {colour for _, colour in a_cell.getcolors(fonts.width * fonts.height) or []}


def test_scroll_moves_the_region_up() -> None:
    grid = Grid(2, 3)
    for row, text in enumerate("abc"):
        grid.apply("grid_line", [1, row, 0, [[text, 0, 2]], False])
    grid.apply("grid_scroll", [1, 0, 3, 0, 2, 1, 0])
    assert [row[0].text for row in grid.cells[:2]] == ["b", "c"]


@pytest.mark.nvim
def test_a_real_neovims_screen(nvim_bin: Path, tmp_path: Path) -> None:
    """A buffer's text with a highlighted word, captured from a headless Neovim: the text where it
    is, the highlight's colour in its cells."""
    nvim = pynvim.attach("child", argv=[str(nvim_bin), "--embed", "--headless", "--clean", "-n", "-i", "NONE"])
    try:
        nvim.current.buffer[:] = ["hello world"]
        nvim.command("highlight Shot guibg=#ff0000 guifg=#ffffff")
        nvim.command("call matchadd('Shot', 'world')")
        grid = capture(nvim)
    finally:
        try:
            nvim.command("qa!")
        except (OSError, EOFError):
            pass  # Neovim closed the pipe while exiting: that is the point
        nvim.close()
    assert (grid.cols, grid.rows) == (80, 24)
    assert "".join(c.text for c in grid.cells[0][:11]) == "hello world"
    assert grid.colours(grid.cells[0][6].hl) == ((255, 255, 255), (255, 0, 0))
    assert grid.colours(grid.cells[0][0].hl) != ((255, 255, 255), (255, 0, 0))
    fonts = Fonts()
    assert cell_colour(render(grid, fonts), fonts, 0, 6) == (255, 0, 0)

"""Path resolution shared by the file tools (spec 6)."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_rpc.tools.paths import expand_path, read_path_variants, resolve_read_path, resolve_to_cwd

CWD = "/work/project"


def test_unicode_spaces_become_ascii_spaces() -> None:
    """spec 6.1 step 1: every space in [U+00A0 U+2000-U+200A U+202F U+205F U+3000]."""
    weird = "a\u00a0b\u2000c\u2005d\u200ae\u202ff\u205fg\u3000h"
    assert resolve_to_cwd(weird, CWD) == f"{CWD}/a b c d e f g h"


def test_one_leading_at_is_stripped() -> None:
    """spec 6.1 step 2: exactly one `@`, as in the CLI's @file syntax."""
    assert resolve_to_cwd("@src/main.py", CWD) == f"{CWD}/src/main.py"
    assert resolve_to_cwd("@@x", CWD) == f"{CWD}/@x"
    assert resolve_to_cwd("@/etc/hosts", CWD) == "/etc/hosts"


def test_tilde_expands_to_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """spec 6.1 step 4: `~` alone and `~/rest`; `~user` is left alone."""
    monkeypatch.setenv("HOME", "/home/tester")
    assert resolve_to_cwd("~", CWD) == "/home/tester"
    assert resolve_to_cwd("~/notes/a.md", CWD) == "/home/tester/notes/a.md"
    assert resolve_to_cwd("@~/x", CWD) == "/home/tester/x"
    assert resolve_to_cwd("~other/x", CWD) == f"{CWD}/~other/x"
    assert expand_path("~/y") == "/home/tester/y"


def test_file_url_becomes_a_path() -> None:
    """spec 6.1 step 5: `file://` URLs, percent-decoded."""
    assert resolve_to_cwd("file:///tmp/some%20dir/a.txt", CWD) == "/tmp/some dir/a.txt"
    assert expand_path("file:///etc/hosts") == "/etc/hosts"


def test_absolute_normalised_relative_resolved_against_cwd() -> None:
    """spec 6.1 step 6 and 6.2: no confinement, `..` may leave the cwd."""
    assert resolve_to_cwd("/a/./b//c/../d", CWD) == "/a/b/d"
    assert resolve_to_cwd("src/../lib/x.py", CWD) == f"{CWD}/lib/x.py"
    assert resolve_to_cwd("../../../etc/passwd", CWD) == "/etc/passwd"
    assert resolve_to_cwd(".", CWD) == CWD
    assert resolve_to_cwd("//srv/x", CWD) == "/srv/x"


def _touch(path: Path) -> Path:
    path.write_text("x")
    return path


def test_read_path_prefers_the_plain_path(tmp_path: Path) -> None:
    """spec 6.3: variants are only tried when the resolved path does not exist."""
    plain = _touch(tmp_path / "Screenshot 10.00 AM.png")
    _touch(tmp_path / "Screenshot 10.00\u202fAM.png")
    assert resolve_read_path("Screenshot 10.00 AM.png", str(tmp_path)) == str(plain)


def test_read_path_am_pm_variant_case_insensitive(tmp_path: Path) -> None:
    """spec 6.3 (a): ` AM.`/` PM.` -> U+202F before AM/PM, case-insensitive."""
    target = _touch(tmp_path / "Shot 9.41.07\u202fpm.png")
    assert resolve_read_path("Shot 9.41.07 pm.png", str(tmp_path)) == str(target)


def test_read_path_nfd_variant(tmp_path: Path) -> None:
    """spec 6.3 (b): macOS stores names decomposed."""
    nfd_name = unicodedata.normalize("NFD", "café.txt")
    target = _touch(tmp_path / nfd_name)
    assert resolve_read_path(unicodedata.normalize("NFC", "café.txt"), str(tmp_path)) == str(target)


def test_read_path_curly_quote_variant(tmp_path: Path) -> None:
    """spec 6.3 (c): straight apostrophe -> U+2019."""
    target = _touch(tmp_path / "Capture d\u2019ecran.png")
    assert resolve_read_path("Capture d'ecran.png", str(tmp_path)) == str(target)


def test_read_path_nfd_and_curly_quote_variant(tmp_path: Path) -> None:
    """spec 6.3 (d): both at once, for French macOS screenshot names."""
    name = unicodedata.normalize("NFD", "Capture d\u2019écran.png")
    target = _touch(tmp_path / name)
    assert resolve_read_path("Capture d'écran.png", str(tmp_path)) == str(target)


def test_read_path_falls_back_to_the_resolved_path(tmp_path: Path) -> None:
    """spec 6.3: when nothing exists, errors name the path the model gave (resolved)."""
    assert resolve_read_path("missing 1 AM.png", str(tmp_path)) == str(tmp_path / "missing 1 AM.png")


def test_identical_variants_are_skipped() -> None:
    """spec 6.3: a variant equal to the resolved path is not tried again."""
    assert read_path_variants("/plain/ascii.txt") == []
    assert read_path_variants("/x/it's 1 AM.png") == [
        "/x/it's 1\u202fAM.png",
        "/x/it\u2019s 1 AM.png",
        "/x/it\u2019s 1 AM.png",
    ]


def test_dangling_symlink_does_not_exist(tmp_path: Path) -> None:
    """spec 6.4: existence is "can access" (F_OK), which follows symlinks."""
    link = tmp_path / "it's.txt"
    link.symlink_to(tmp_path / "gone")
    target = _touch(tmp_path / "it\u2019s.txt")
    assert resolve_read_path("it's.txt", str(tmp_path)) == str(target)


_segment = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00/"), min_size=1, max_size=8
)


@given(st.lists(_segment, min_size=1, max_size=5))
def test_resolution_is_absolute_and_idempotent(parts: list[str]) -> None:
    """spec 6.1: the result is absolute and normalised, so resolving it again changes nothing."""
    resolved = resolve_to_cwd("/".join(parts), CWD)
    assert os.path.isabs(resolved)
    assert resolve_to_cwd(resolved, "/elsewhere") == resolved

"""The ls tool (spec 13.15-13.19, 1.10, 1.11)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from msgspec import UNSET

from pi_rpc.agent.types import AgentToolResult, ToolError
from pi_rpc.ai.validation import json_schema_of
from pi_rpc.tools.ls import LsOperations, create_ls_tool

from .helpers import byte_limited_body, run_tool, text_of, wire_details

pytestmark = pytest.mark.anyio


async def ls(cwd: Path, **args: Any) -> AgentToolResult:
    return await run_tool(create_ls_tool(), args, cwd)


def test_declaration() -> None:
    """spec 13.15, 13.16"""
    tool = create_ls_tool()
    assert (tool.name, tool.label) == ("ls", "ls")
    assert tool.description == (
        "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. "
        "Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first)."
    )
    assert tool.prompt_snippet == "List directory contents"
    assert tool.constrained_sampling is UNSET
    schema = json_schema_of(tool.parameters)
    assert "required" not in schema or schema["required"] == []
    assert schema["properties"] == {
        "path": {"type": "string", "description": "Directory to list (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"},
    }


async def test_sorted_case_insensitively_with_dotfiles_and_slashes(tmp_path: Path) -> None:
    """spec 13.18: dotfiles included, case-insensitive order, `/` after directories"""
    for name in ["beta.txt", "Alpha.md", ".env", "gamma"]:
        (tmp_path / name).write_text("x")
    (tmp_path / "Delta").mkdir()
    (tmp_path / "charlie").mkdir()
    result = await ls(tmp_path)
    assert text_of(result) == ".env\nAlpha.md\nbeta.txt\ncharlie/\nDelta/\ngamma"
    assert result.details is UNSET


async def test_not_recursive_and_not_gitignore_aware(tmp_path: Path) -> None:
    """spec 13.18"""
    (tmp_path / ".gitignore").write_text("ignored.log\n")
    (tmp_path / "ignored.log").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.txt").write_text("x")
    assert text_of(await ls(tmp_path)) == ".gitignore\nignored.log\nsub/"


async def test_symlinks_are_followed_and_dangling_ones_skipped(tmp_path: Path) -> None:
    """spec 13.18: entries are stat'ed following links; those that cannot be stat'ed are skipped"""
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.symlink(tmp_path / "missing", tmp_path / "broken")
    assert text_of(await ls(tmp_path)) == "link/\nreal/"


async def test_empty_directory(tmp_path: Path) -> None:
    """spec 13.19: `(empty directory)`"""
    result = await ls(tmp_path)
    assert text_of(result) == "(empty directory)"
    assert result.details is UNSET


async def test_path_argument_and_effective_cwd(tmp_path: Path) -> None:
    """spec 13.15, 1.10: path relative to ctx.cwd, which wins over the construction cwd"""
    (tmp_path / "ws" / "src").mkdir(parents=True)
    (tmp_path / "ws" / "src" / "a.py").write_text("x")
    result = await run_tool(create_ls_tool(), {"path": "src"}, tmp_path / "ws")
    assert text_of(result) == "a.py"


async def test_missing_path(tmp_path: Path) -> None:
    """spec 13.17: `Path not found: {absPath}`"""
    with pytest.raises(ToolError) as info:
        await ls(tmp_path, path="nope")
    assert str(info.value) == f"Path not found: {tmp_path / 'nope'}"


async def test_not_a_directory(tmp_path: Path) -> None:
    """spec 13.17: `Not a directory: {absPath}`"""
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ToolError) as info:
        await ls(tmp_path, path="f.txt")
    assert str(info.value) == f"Not a directory: {tmp_path / 'f.txt'}"


async def test_readdir_failure(tmp_path: Path) -> None:
    """spec 13.17, 1.11: `Cannot read directory: {message}`, through replaceable operations"""

    async def denied(path: str) -> list[str]:
        raise PermissionError(errno.EACCES, "Permission denied", path)

    tool = create_ls_tool(operations=LsOperations(readdir=denied))
    with pytest.raises(ToolError) as info:
        await run_tool(tool, {}, tmp_path)
    assert str(info.value) == f"Cannot read directory: EACCES: permission denied, scandir '{tmp_path}'"


async def test_entry_limit(tmp_path: Path) -> None:
    """spec 13.18, 13.19: stop at the limit, `{L} entries limit reached. Use limit={2L} for more`"""
    for i in range(5):
        (tmp_path / f"f{i}").write_text("x")
    result = await ls(tmp_path, limit=3)
    assert text_of(result) == "f0\nf1\nf2\n\n[3 entries limit reached. Use limit=6 for more]"
    assert wire_details(result) == {"entryLimitReached": 3}


async def test_exactly_limit_entries_is_not_a_limit(tmp_path: Path) -> None:
    """spec 13.18: the limit is reached only when entries are left over"""
    for i in range(3):
        (tmp_path / f"f{i}").write_text("x")
    result = await ls(tmp_path, limit=3)
    assert text_of(result) == "f0\nf1\nf2"
    assert result.details is UNSET


async def test_default_limit_is_500(tmp_path: Path) -> None:
    """spec 13.15, 13.19"""
    for i in range(501):
        (tmp_path / f"f{i:03d}").write_text("x")
    text = text_of(await ls(tmp_path))
    assert text.endswith("f499\n\n[500 entries limit reached. Use limit=1000 for more]")


async def test_byte_limit(tmp_path: Path) -> None:
    """spec 13.19: bytes-only truncateHead, `50.0KB limit reached`, details.truncation"""
    names = [f"{i:03d}{'n' * 240}" for i in range(260)]
    for name in names:
        (tmp_path / name).write_text("x")
    result = await ls(tmp_path)
    body, _ = byte_limited_body(result)
    assert body.split("\n") == names[: len(body.split("\n"))]


async def test_both_notices(tmp_path: Path) -> None:
    """spec 13.19: notices joined by `. `"""
    for i in range(260):
        (tmp_path / f"{i:03d}{'n' * 240}").write_text("x")
    result = await ls(tmp_path, limit=250)
    assert text_of(result).endswith("\n\n[250 entries limit reached. Use limit=500 for more. 50.0KB limit reached]")
    assert list(wire_details(result)) == ["entryLimitReached", "truncation"]

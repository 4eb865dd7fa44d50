"""The write tool (spec 12) and the atomic write under it."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import anyio
import anyio.from_thread
import msgspec
import pytest

from pi_rpc.agent.types import AgentToolResult, ToolError
from pi_rpc.ai.types import JsonSchemaSampling
from pi_rpc.tools import fs
from pi_rpc.tools.fs import write_file_atomic
from pi_rpc.tools.write import WriteOperations, WriteParams, create_write_tool

from .helpers import run_tool, text_of

pytestmark = pytest.mark.anyio


def _names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


async def _write(cwd: Path, path: str, content: str) -> AgentToolResult:
    return await run_tool(create_write_tool(), {"path": path, "content": content}, cwd)


def test_declaration() -> None:
    """spec 12.1, 12.2, 4.2: schema, description, snippet, guideline, constrained sampling."""
    tool = create_write_tool()
    assert tool.name == tool.label == "write"
    assert tool.description == (
        "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. "
        "Automatically creates parent directories."
    )
    assert tool.prompt_snippet == "Create or overwrite files"
    assert tool.prompt_guidelines == ["Use write only for new files or complete rewrites."]
    assert tool.constrained_sampling == JsonSchemaSampling(strict="prefer")
    _, defs = msgspec.json.schema_components([WriteParams])
    schema = defs["WriteParams"]
    assert schema["required"] == ["path", "content"]
    assert schema["properties"]["path"] == {
        "description": "Path to the file to write (relative or absolute)",
        "type": "string",
    }
    assert schema["properties"]["content"] == {
        "description": "Content to write to the file",
        "type": "string",
    }


async def test_creates_parents_and_reports_the_path_as_given(tmp_path: Path) -> None:
    """spec 12.3, 12.4: `Successfully wrote to {path}`, parents created."""
    result = await _write(tmp_path, "deep/er/new.txt", "héllo\n")
    assert text_of(result) == "Successfully wrote to deep/er/new.txt"
    assert result.details is msgspec.UNSET
    assert (tmp_path / "deep/er/new.txt").read_bytes() == "héllo\n".encode()


async def test_overwrites_without_preserving_anything(tmp_path: Path) -> None:
    """spec 12.3: plain UTF-8 overwrite (no BOM / CRLF carried over)."""
    target = tmp_path / "f.txt"
    target.write_bytes(b"\xef\xbb\xbfold\r\ncontent\r\n")
    await _write(tmp_path, "f.txt", "new\n")
    assert target.read_bytes() == b"new\n"


async def test_effective_cwd_is_the_context_cwd(tmp_path: Path) -> None:
    """spec 1.10: one tool writes relative to the cwd of each call's context."""
    tool = create_write_tool()
    for folder in ("first", "second"):
        (tmp_path / folder).mkdir()
        await run_tool(tool, {"path": "x.txt", "content": folder}, tmp_path / folder)
    assert [(tmp_path / folder / "x.txt").read_text() for folder in ("first", "second")] == ["first", "second"]


async def test_path_forms_resolve_like_every_file_tool(tmp_path: Path) -> None:
    """spec 6.1: a leading `@` and absolute paths."""
    await _write(tmp_path, "@a.txt", "a")
    await _write(tmp_path, str(tmp_path / "b.txt"), "b")
    assert (tmp_path / "a.txt").read_text() == "a"
    assert (tmp_path / "b.txt").read_text() == "b"


async def test_keeps_mode_and_symlink(tmp_path: Path) -> None:
    """Atomic replacement keeps the existing file's permission bits and writes through symlinks."""
    real = tmp_path / "script.sh"
    real.write_text("old")
    real.chmod(0o751)
    (tmp_path / "link.sh").symlink_to(real)
    await _write(tmp_path, "link.sh", "new")
    assert (tmp_path / "link.sh").is_symlink()
    assert real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o751
    assert _names(tmp_path) == ["link.sh", "script.sh"]


async def test_keeps_owner_when_allowed(tmp_path: Path) -> None:
    """Atomic replacement hands the new inode back to the old owner (possible only as root)."""
    if os.geteuid() != 0:
        pytest.skip("only root may give files away")
    target = tmp_path / "owned.txt"
    target.write_text("old")
    os.chown(target, 1234, 5678)
    await _write(tmp_path, "owned.txt", "new")
    assert (target.stat().st_uid, target.stat().st_gid) == (1234, 5678)
    assert target.read_text() == "new"


async def test_parent_is_a_file_gives_a_node_style_error(tmp_path: Path) -> None:
    """spec 12.3: failures propagate as the OS error (Node wording)."""
    (tmp_path / "plain").write_text("x")
    with pytest.raises(ToolError) as info:
        await _write(tmp_path, "plain/child.txt", "y")
    assert str(info.value) == f"EEXIST: file already exists, mkdir '{tmp_path / 'plain'}'"


async def test_abort_mid_write_leaves_old_content_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Atomic writes (improvement over spec 12.3): cancelled while the bytes go out, nothing changes."""
    target = tmp_path / "f.txt"
    target.write_text("old content")
    started = anyio.Event()
    proceed = threading.Event()
    original_fill = fs._fill

    def slow_fill(fd: int, data: bytes, mode: int) -> None:
        os.write(fd, data[:3])  # half the bytes are already in the temporary file
        anyio.from_thread.run_sync(started.set)
        proceed.wait()
        original_fill(fd, data[3:], mode)

    monkeypatch.setattr(fs, "_fill", slow_fill)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def run() -> None:
                with scope:
                    await write_file_atomic(str(target), b"new content that never lands")
                    pytest.fail("the write should have been cancelled")

            tg.start_soon(run)
            await started.wait()
            scope.cancel()
            proceed.set()
    assert target.read_text() == "old content"
    assert _names(tmp_path) == ["f.txt"]


async def test_failed_write_removes_the_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Atomic writes: an I/O error leaves the old file and no temporary file."""
    target = tmp_path / "f.txt"
    target.write_text("old")

    def failing_fill(fd: int, data: bytes, mode: int) -> None:
        os.close(fd)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fs, "_fill", failing_fill)
    with pytest.raises(ToolError, match=r"^ENOSPC: no space left on device, open '.*f\.txt'$"):
        await _write(tmp_path, "f.txt", "new")
    assert target.read_text() == "old"
    assert _names(tmp_path) == ["f.txt"]


async def test_read_only_file_is_refused_like_an_in_place_write(tmp_path: Path) -> None:
    """A rename could replace a read-only file; the write refuses as Node's writeFile would."""
    if os.geteuid() == 0:
        pytest.skip("root may write read-only files")
    target = tmp_path / "ro.txt"
    target.write_text("keep")
    target.chmod(0o444)
    with pytest.raises(ToolError, match="^EACCES: permission denied, open"):
        await _write(tmp_path, "ro.txt", "new")
    assert target.read_text() == "keep"


async def test_operations_route_io_elsewhere(tmp_path: Path) -> None:
    """spec 1.11: write's mkdir and writeFile go through replaceable operations."""
    files: dict[str, str] = {}
    folders: list[str] = []

    async def write_file(path: str, content: str) -> None:
        files[path] = content

    async def mkdir(path: str) -> None:
        folders.append(path)

    tool = create_write_tool(operations=WriteOperations(write_file=write_file, mkdir=mkdir))
    result = await run_tool(tool, {"path": "a/b.txt", "content": "hi"}, "/remote")
    assert text_of(result) == "Successfully wrote to a/b.txt"
    assert files == {"/remote/a/b.txt": "hi"}
    assert folders == ["/remote/a"]
    assert _names(tmp_path) == []


@pytest.mark.anyio
async def test_a_symlink_loop_gets_node_style_text(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(ToolError, match=r"^ELOOP: too many symbolic links encountered, open '.*/a'$"):
        await run_tool(create_write_tool(), {"path": "a", "content": "x"}, str(tmp_path))

"""The per-file mutation queue (spec 14), alone and under the edit and write tools."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
from anyio import wait_all_tasks_blocked

from pi_rpc.agent.types import ToolCallContext
from pi_rpc.tools.edit import EditParams, create_edit_tool
from pi_rpc.tools.mutation_queue import mutation_queue_key, pending_keys, with_file_mutation_queue
from pi_rpc.tools.write import WriteParams, create_write_tool

pytestmark = pytest.mark.anyio

# Deadlock guard only: nothing asserts on elapsed time.
GUARD = 10


async def test_same_file_runs_one_at_a_time_in_submission_order(tmp_path: Path) -> None:
    """spec 14.1, 14.3: same key -> serial, in the order submitted."""
    path = str(tmp_path / "f.txt")
    release = anyio.Event()
    log: list[str] = []

    async def op(name: str, gate: anyio.Event | None) -> None:
        async def body() -> None:
            log.append(f"start {name}")
            if gate is not None:
                await gate.wait()
            log.append(f"end {name}")

        await with_file_mutation_queue(path, body)

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(op, "a", release)
            await wait_all_tasks_blocked()
            for name in ("b", "c", "d"):
                tg.start_soon(op, name, None)
                await wait_all_tasks_blocked()
            assert log == ["start a"]  # b, c, d are queued behind a
            release.set()
    assert log == ["start a", "end a", "start b", "end b", "start c", "end c", "start d", "end d"]
    assert pending_keys() == []  # spec 14.4: the entry is dropped when the chain drains


async def test_different_files_run_concurrently(tmp_path: Path) -> None:
    """spec 14.1: a mutation of one file never waits for another file's."""
    a_waits_for_b = anyio.Event()

    async def on_a() -> None:
        await a_waits_for_b.wait()

    async def on_b() -> None:
        a_waits_for_b.set()

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(with_file_mutation_queue, str(tmp_path / "a"), on_a)
            await wait_all_tasks_blocked()
            tg.start_soon(with_file_mutation_queue, str(tmp_path / "b"), on_b)


async def test_failure_releases_the_slot(tmp_path: Path) -> None:
    """spec 14.4: the slot is released in a finally; a failure does not block later calls."""
    path = str(tmp_path / "f")

    async def boom() -> None:
        raise ValueError("boom")

    async def fine() -> str:
        return "ok"

    with pytest.raises(ValueError, match="boom"):
        await with_file_mutation_queue(path, boom)
    with anyio.fail_after(GUARD):
        assert await with_file_mutation_queue(path, fine) == "ok"
    assert pending_keys() == []


async def test_cancelled_waiter_does_not_let_the_next_one_jump_ahead(tmp_path: Path) -> None:
    """spec 14.3/14.4: aborting a queued call keeps the holder exclusive and the order intact."""
    path = str(tmp_path / "f")
    release = anyio.Event()
    log: list[str] = []

    async def holder() -> None:
        log.append("a start")
        await release.wait()
        log.append("a end")

    async def quick(name: str) -> None:
        log.append(name)

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(with_file_mutation_queue, path, holder)
            await wait_all_tasks_blocked()
            b_scope = anyio.CancelScope()

            async def b() -> None:
                with b_scope:
                    await with_file_mutation_queue(path, lambda: quick("b"))

            tg.start_soon(b)
            await wait_all_tasks_blocked()
            tg.start_soon(with_file_mutation_queue, path, lambda: quick("c"))
            await wait_all_tasks_blocked()
            b_scope.cancel()
            await wait_all_tasks_blocked()
            assert log == ["a start"]  # c still waits for a
            release.set()
    assert log == ["a start", "a end", "c"]


async def test_two_symlinks_share_one_key(tmp_path: Path) -> None:
    """spec 14.2: key = realpath, so aliases of one file are one queue."""
    real = tmp_path / "real.txt"
    real.write_text("x")
    (tmp_path / "one").symlink_to(real)
    (tmp_path / "two").symlink_to(real)
    assert mutation_queue_key(str(tmp_path / "one")) == mutation_queue_key(str(tmp_path / "two")) == str(real)


async def test_missing_file_keys_by_absolute_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spec 14.2: ENOENT and ENOTDIR fall back to the resolved absolute path."""
    monkeypatch.chdir(tmp_path)
    assert mutation_queue_key("new/file.txt") == str(tmp_path / "new" / "file.txt")
    (tmp_path / "plain").write_text("x")
    assert mutation_queue_key(str(tmp_path / "plain" / "child")) == str(tmp_path / "plain" / "child")


async def test_concurrent_edits_and_write_through_two_symlinks_lose_nothing(tmp_path: Path) -> None:
    """spec 14.1/14.2: read-modify-writes via two aliases of one file are serialised."""
    real = tmp_path / "real.txt"
    count = 24
    real.write_text("".join(f"token{i}\n" for i in range(count)))
    (tmp_path / "one").symlink_to(real)
    (tmp_path / "two").symlink_to(real)
    edit = create_edit_tool()
    write = create_write_tool()
    ctx = ToolCallContext(cwd=str(tmp_path))

    async def replace(i: int) -> None:
        alias = "one" if i % 2 else "two"
        params = msgspec.convert(
            {"path": alias, "edits": [{"oldText": f"token{i}\n", "newText": f"DONE{i}\n"}]}, EditParams
        )
        result = await edit.execute(params, ctx)
        assert result.content[0].text == f"Successfully replaced 1 block(s) in {alias}."  # type: ignore[union-attr]

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(replace, i)
    assert real.read_text() == "".join(f"DONE{i}\n" for i in range(count))

    # A write submitted first and an edit submitted second, through different aliases: the edit sees
    # the written content, because the queue runs them in submission order.
    async def rewrite() -> None:
        await write.execute(WriteParams(path="one", content="fresh\n"), ctx)

    async def follow_up() -> None:
        params = msgspec.convert({"path": "two", "edits": [{"oldText": "fresh", "newText": "edited"}]}, EditParams)
        await edit.execute(params, ctx)

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            tg.start_soon(rewrite)
            tg.start_soon(follow_up)
    assert real.read_text() == "edited\n"
    assert (tmp_path / "one").is_symlink() and (tmp_path / "two").is_symlink()
    assert pending_keys() == []

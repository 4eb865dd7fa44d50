"""Checkpoints and rewind, the acceptance scenario (tests/e2e/rewind_scenario.py) in every front
end: JSON-RPC, Pi mode, ACP (`/rewind`, picked through `session/request_permission`) and LSP
(`pi.rewind`, picked through `window/showMessageRequest`), each daemon a subprocess over real
pipes with the scripted model.

Rewinding the files to before the second run gives the first run's result; a file the user
changed since is reported with its diff and left alone; forced, the rewind to before the first
run gives the original tree exactly (bytes and modes), and the user's `git status`, refs and index
file are as they were."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from .rewind_scenario import (
    FIRST,
    FIRST_RUN,
    SECOND,
    SECOND_RUN,
    git_view,
    make_workspace,
    open_front,
    tree,
    write_script,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.mark.parametrize("front_end", ["jsonrpc", "pi", "acp", "lsp"])
async def test_rewind_gives_the_first_runs_result_then_the_original_tree(tmp_path: Path, front_end: str) -> None:
    workspace = make_workspace(tmp_path)
    script = write_script(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    original = tree(workspace)
    index_before, status_before, refs_before = git_view(workspace)
    async with open_front(front_end, workspace, home, script) as front:
        await front.prompt(FIRST)
        after_first = tree(workspace)
        assert (workspace / "made.txt").exists() and not (workspace / "gone.txt").exists()
        await front.prompt(SECOND)
        assert (workspace / "a.txt").read_text() == "OMEGA\n"

        listed = await front.checkpoints()
        assert [text for text, _ in listed] == [SECOND, FIRST]  # the most recent first
        for (_, files), expected in zip(listed, [SECOND_RUN, FIRST_RUN], strict=True):
            assert files == expected if front.complete else files.items() <= expected.items()

        second = await front.rewind(1)
        assert second.conflicts == {} and second.restored == set(SECOND_RUN)
        assert tree(workspace) == after_first

        (workspace / "a.txt").write_text("ALPHA\nthe user's line\n")  # the user's edit in between
        kept = await front.rewind(2)
        assert set(kept.conflicts) == {"a.txt"}
        assert "-the user's line" in kept.conflicts["a.txt"] and "+alpha" in kept.conflicts["a.txt"]
        assert (workspace / "a.txt").read_text() == "ALPHA\nthe user's line\n"  # left alone
        assert kept.restored == (set(FIRST_RUN) | set(SECOND_RUN)) - {"a.txt"}  # every later checkpoint's file

        forced = await front.rewind(2, force=True)
        assert forced.conflicts == {} and "a.txt" in forced.restored

    assert tree(workspace) == original
    index_after, status_after, refs_after = git_view(workspace)
    assert hashlib.sha256(index_after).hexdigest() == hashlib.sha256(index_before).hexdigest()
    assert (status_after, refs_after) == (status_before, refs_before)

"""The trust list, read as Pi reads its `trust.json`: the nearest recorded folder at or above a
workspace decides, ours first, then Pi's own; a list that does not parse decides nothing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_rpc.session.configuration.trust import decide_trust, record_trust, recorded_trust, trust_file


@pytest.fixture(autouse=True)
def lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """(ours, Pi's): without PI_CODING_AGENT_DIR ours comes first, Pi's `~/.pi/agent` second."""
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    yield tmp_path / "config" / "pi-rpc" / "trust.json", tmp_path / "home" / ".pi" / "agent" / "trust.json"


def project(tmp_path: Path, *parts: str) -> Path:
    folder = tmp_path.joinpath("code", *parts)
    (folder / ".pi").mkdir(parents=True)
    (folder / ".pi" / "settings.json").write_text("{}")
    return folder


def test_the_nearest_recorded_folder_decides(tmp_path: Path, lists: tuple[Path, Path]) -> None:
    inner = project(tmp_path, "team", "app")
    record_trust(str(tmp_path / "code"), True)
    assert trust_file() == lists[0]
    assert decide_trust(str(inner), None, None).trusted is True
    record_trust(str(tmp_path / "code" / "team"), False)
    assert decide_trust(str(inner), None, None).source == "trust list"
    assert decide_trust(str(inner), None, None).trusted is False
    assert decide_trust(str(inner), True, None).trusted is True  # --approve, for this run
    record_trust(str(tmp_path / "code" / "team"), None)  # forgotten: the parent's decision again
    assert recorded_trust(str(inner)) is True
    assert json.loads(lists[0].read_text()) == {os.path.realpath(tmp_path / "code"): True}
    assert lists[0].stat().st_mode & 0o077 == 0


def test_pis_own_list_is_read_after_ours(tmp_path: Path, lists: tuple[Path, Path]) -> None:
    folder = project(tmp_path, "app")
    lists[1].parent.mkdir(parents=True)
    lists[1].write_text(json.dumps({os.path.realpath(folder): True}))
    assert decide_trust(str(folder), None, None) == decide_trust(str(folder), None, "never")
    assert decide_trust(str(folder), None, None).trusted is True
    record_trust(str(folder), False)
    assert decide_trust(str(folder), None, None).trusted is False


def test_undecided_folders_follow_default_project_trust(tmp_path: Path) -> None:
    folder = project(tmp_path, "app")
    assert [decide_trust(str(folder), None, d).trusted for d in (None, "ask", "never", "always")] == [
        False,
        False,
        False,
        True,
    ]
    bare = tmp_path / "bare"
    bare.mkdir()
    assert decide_trust(str(bare), None, None).source == "nothing to trust"


def test_a_broken_list_decides_nothing_and_says_so(
    tmp_path: Path, lists: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    folder = project(tmp_path, "app")
    lists[0].parent.mkdir(parents=True)
    lists[0].write_text("{not json")
    assert decide_trust(str(folder), None, None).trusted is False
    assert "trust list ignored" in caplog.text and str(lists[0]) in caplog.text

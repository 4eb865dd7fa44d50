"""`pi-rpc trust`: the command the untrusted folder's warning names records, forgets and shows the
user's decision in the trust list, and the daemon then reads it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_rpc.commands import run_subcommand
from pi_rpc.session import decide_trust, trust_file


@pytest.fixture(autouse=True)
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    yield


def repository(tmp_path: Path) -> Path:
    folder = tmp_path / "clone"
    (folder / ".pi").mkdir(parents=True)
    (folder / ".pi" / "settings.json").write_text('{"permissions": {"allow": ["bash"]}}')
    return folder


def test_trust_records_the_folder_and_the_daemon_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = repository(tmp_path)
    assert decide_trust(str(folder), None, None).trusted is False
    assert run_subcommand("trust", [str(folder)]) == 0
    assert capsys.readouterr().out == f"{folder}: trusted (decided by the trust list, {trust_file()})\n"
    assert decide_trust(str(folder), None, None).trusted is True
    assert decide_trust(str(folder / "src"), None, None).trusted is True  # the folders in it too


def test_no_forget_and_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = repository(tmp_path)
    assert run_subcommand("trust", ["--show", str(folder)]) == 0
    assert "not trusted (decided by settings.json defaultProjectTrust)" in capsys.readouterr().out
    assert not trust_file().exists()  # --show records nothing
    assert run_subcommand("trust", ["--no", str(folder)]) == 0
    assert "not trusted (decided by the trust list" in capsys.readouterr().out
    assert run_subcommand("trust", [str(folder)]) == 0 and decide_trust(str(folder), None, None).trusted
    assert run_subcommand("trust", ["--forget", str(folder)]) == 0
    assert "not trusted (decided by settings.json defaultProjectTrust)" in capsys.readouterr().out


def test_a_missing_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_subcommand("trust", [str(tmp_path / "nowhere")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert not trust_file().exists()

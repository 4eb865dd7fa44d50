"""`:checkhealth pi_rpc` includes `pi-rpc doctor`'s report, line by line at its own level."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import require_daemon

pytestmark = pytest.mark.nvim


def test_checkhealth_shows_the_doctor_report(make_editor: Any) -> None:
    require_daemon()  # the report is the checkout's own pi-rpc's, as the other Neovim tests run it
    ed = make_editor()
    ed.nvim.command("checkhealth pi_rpc")
    text = "\n".join(ed.nvim.current.buffer[:])
    assert "doctor: ripgrep: ripgrep 14.1.0" in text
    assert "doctor: anthropic key: ANTHROPIC_API_KEY is not set" in text

"""Folders with their own settings, and the daemon config the command line makes for one."""

from __future__ import annotations

import json
from pathlib import Path

from pi_rpc.cli import build_parser, build_session_config
from pi_rpc.pi_flags import parse_command_line
from pi_rpc.session.session import SessionConfig
from pi_rpc.tools import ProcessTables

SCRIPT = {
    "replies": [
        {
            "match": "^run it",
            "turns": [
                [{"toolCall": {"name": "bash", "arguments": {"command": "echo ran > ran.txt"}}}],
                [{"text": "Done."}],
            ],
        }
    ]
}


def folder(tmp_path: Path, name: str, settings: dict[str, object] | None) -> Path:
    made = tmp_path / name
    made.mkdir()
    if settings is not None:
        (made / ".pi").mkdir()
        (made / ".pi" / "settings.json").write_text(json.dumps(settings))
    return made


def daemon_config(tmp_path: Path, cwd: Path, *flags: str) -> SessionConfig:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    argv = ["--script", str(script), "--cwd", str(cwd), "--session-dir", str(tmp_path / "sessions"), *flags]
    args, _ = parse_command_line(build_parser(), argv)
    return build_session_config(args, None, ProcessTables())

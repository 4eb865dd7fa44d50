"""A folder chosen for sessions, by `--session-dir`, `PI_CODING_AGENT_SESSION_DIR` or settings.json
`sessionDir`, is one real Pi (1.6.0) and pi-rpc share: each keeps its files directly in it, and each
continues (`-c`) the other's (protocol/PROTOCOL.md, "Sessions on disk")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import daemon_env
from .pi_conversations import PI_RPC, Json, answer, converse, pi16_rpc
from .pi_parity import agent_dir_for, loopback_server, turn

pytestmark = pytest.mark.e2e

SAID = [{"id": "1", "type": "get_messages"}]


def texts(lines: list[Json]) -> list[str]:
    """The text of each user and assistant message `get_messages` answered."""
    messages = answer(lines, "1")["messages"]
    return [m["content"][0]["text"] for m in messages if m["role"] in ("user", "assistant")]


def prompt(text: str) -> list[Json]:
    return [{"id": "2", "type": "prompt", "message": text}]


def environment(home: Path, agent_dir: Path, **variables: str) -> dict[str, str]:
    env = daemon_env(home) | {"PI_CODING_AGENT_DIR": str(agent_dir)} | variables
    if "PI_CODING_AGENT_SESSION_DIR" not in variables:
        env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    env.pop("PI_RPC_SESSION_DIR", None)
    return env


def test_a_session_in_the_session_dir_continues_in_pi_and_back(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    chosen = tmp_path / "chosen"
    replies = [turn("Hello from pi-rpc."), turn("Hello from Pi.")]
    with loopback_server(replies) as server:
        env = environment(tmp_path / "home", agent_dir_for(tmp_path, server, {}))
        flag = ["--session-dir", str(chosen)]
        converse([*PI_RPC, *flag], prompt("hi"), env, workspace)
        [ours] = chosen.glob("*.jsonl")  # directly in the folder, as Pi keeps its own there
        in_pi = converse([*pi16_rpc(), *flag, "-c"], [*SAID, *prompt("and you?")], env, workspace)
        back = converse([*PI_RPC, *flag, "-c"], SAID, env, workspace)
    assert texts(in_pi) == ["hi", "Hello from pi-rpc."]
    assert list(chosen.glob("*.jsonl")) == [ours]  # Pi continued our file
    assert texts(back) == ["hi", "Hello from pi-rpc.", "and you?", "Hello from Pi."]


def test_the_variable_and_the_setting_name_the_same_folder_for_pi_and_pi_rpc(tmp_path: Path) -> None:
    """settings.json `sessionDir` when no variable names one, `PI_CODING_AGENT_SESSION_DIR` over it;
    `~` is the home folder in both."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    replies = [turn("Pi first."), turn("pi-rpc next."), turn("Pi again.")]
    pi = pi16_rpc()  # Pi 1.6.0, installed now
    with loopback_server(replies) as server:
        agent_dir = agent_dir_for(tmp_path, server, {"sessionDir": "~/chosen"})
        by_setting = environment(home, agent_dir)
        converse(pi, prompt("one"), by_setting, workspace)
        [pis] = (home / "chosen").glob("*.jsonl")
        ours = converse([*PI_RPC, "-c"], [*SAID, *prompt("two")], by_setting, workspace)
        (agent_dir / "settings.json").write_text(json.dumps({"sessionDir": "~/elsewhere"}))
        by_variable = environment(home, agent_dir, PI_CODING_AGENT_SESSION_DIR="~/chosen")
        in_pi = converse([*pi, "-c"], [*SAID, *prompt("three")], by_variable, workspace)
        back = converse([*PI_RPC, "-c"], SAID, by_variable, workspace)
    assert texts(ours) == ["one", "Pi first."]
    assert texts(in_pi) == ["one", "Pi first.", "two", "pi-rpc next."]
    assert texts(back) == ["one", "Pi first.", "two", "pi-rpc next.", "three", "Pi again."]
    assert list((home / "chosen").glob("*.jsonl")) == [pis] and not (home / "elsewhere").exists()

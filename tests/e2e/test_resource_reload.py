"""Context files and skills are read again for every session a daemon becomes, as Pi reads them
again: an AGENTS.md edited (or a skill added) between two prompts reaches the model's system
prompt after `new_session`, `switch_session`, `fork` and `clone` (spec 17.2). pi-rpc and real Pi
go through the same steps and must send the same."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import daemon_env
from .pi_conversations import Json, Step, answer, converse
from .pi_parity import agent_dir_for, loopback_server, turn

pytestmark = pytest.mark.e2e

FLAGS = ["--mode", "rpc", "--provider", "loop", "--model", "m"]
MARKERS = ["FIRST", "SECOND", "THIRD", "FOURTH", "FIFTH"]


def edit(agents_md: Path, marker: str, then: Json | Callable[[list[Json]], Json]) -> Step:
    """Rewrite AGENTS.md, then send `then` (or what it makes of the lines printed so far)."""

    def step(lines: list[Json]) -> Json:
        agents_md.write_text(f"{marker}: the project's rule.")
        return then(lines) if callable(then) else then

    return step


def prompt(text: str) -> Json:
    return {"id": f"p-{text}", "type": "prompt", "message": text}


def system_prompts_sent(argv: list[str], folder: Path) -> list[str]:
    workspace = folder / "ws"
    (workspace / ".pi" / "skills").mkdir(parents=True)
    agents_md = workspace / "AGENTS.md"
    agents_md.write_text("FIRST: the project's rule.")

    def add_skill_then_new_session(lines: list[Json]) -> Json:
        skill = workspace / ".pi" / "skills" / "late" / "SKILL.md"
        skill.parent.mkdir()
        skill.write_text("---\nname: late\ndescription: added after the start\n---\n")
        return {"id": "new", "type": "new_session"}

    def switch_to_the_first(lines: list[Json]) -> Json:
        return {"id": "switch", "type": "switch_session", "sessionPath": answer(lines, "state")["sessionFile"]}

    def fork_at_the_first_prompt(lines: list[Json]) -> Json:
        first = answer(lines, "points")["messages"][0]
        return {"id": "fork", "type": "fork", "entryId": first["entryId"]}

    steps: list[Step] = [
        prompt("one"),
        {"id": "state", "type": "get_state"},
        edit(agents_md, "SECOND", add_skill_then_new_session),
        prompt("two"),
        edit(agents_md, "THIRD", switch_to_the_first),
        prompt("three"),
        edit(agents_md, "FOURTH", {"id": "points", "type": "get_fork_messages"}),
        fork_at_the_first_prompt,
        prompt("four"),
        edit(agents_md, "FIFTH", {"id": "clone", "type": "clone"}),
        prompt("five"),
    ]
    with loopback_server([turn(f"reply {n}") for n in range(5)]) as server:
        env = daemon_env(folder / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(folder, server, {}))}
        lines = converse([*argv, "--session-dir", str(folder / "sessions")], steps, env, workspace)
        systems = [request.json["messages"][0]["content"] for request in server.requests]
    assert all(answer(lines, command)["cancelled"] is False for command in ("new", "switch", "fork", "clone"))
    return systems


def markers_in(system: str) -> list[str]:
    return [marker for marker in MARKERS if f"{marker}: the project's rule." in system]


def test_an_edited_agents_md_applies_to_each_session_a_daemon_becomes(pi16: list[str], tmp_path: Path) -> None:
    # Trusted: both load the project's skills only in a trusted workspace, and pi-rpc keeps that
    # for every session it becomes.
    ours = system_prompts_sent([sys.executable, "-m", "pi_rpc", *FLAGS, "--approve"], tmp_path / "pi-rpc")
    assert [markers_in(system) for system in ours] == [[marker] for marker in MARKERS]
    assert "<name>late</name>" not in ours[0] and all("<name>late</name>" in system for system in ours[1:])
    pis = system_prompts_sent([*pi16, "--offline", "--approve", *FLAGS], tmp_path / "pi")
    assert [markers_in(system) for system in pis] == [markers_in(system) for system in ours]
    assert ["<name>late</name>" in system for system in pis] == ["<name>late</name>" in system for system in ours]

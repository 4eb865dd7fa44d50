"""The commands Pi mode serves beyond Pi's npm release 0.73.1 are exactly the ones
protocol/PROTOCOL.md lists among what this mode sends differently: real Pi 0.73.1 is asked every
command this mode knows, and those it answers `Unknown command` are the list's. Pi 1.6.0, the
reference, knows every one of them but pi-rpc's own."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from pathlib import Path

import pytest

from pi_rpc.modes.pi.commands import COMMAND_TYPES
from tests.node_packages import real_pi

from .conftest import daemon_env
from .pi_conversations import Json, pi16_rpc
from .pi_parity import agent_dir_for, loopback_server, turn

pytestmark = pytest.mark.e2e

PROTOCOL = Path(__file__).parents[2] / "protocol" / "PROTOCOL.md"
# What a command needs for Pi to get past reading it (a prompt goes last: its run then streams).
FIELDS: dict[str, Json] = {
    "steer": {"message": "later"},
    "follow_up": {"message": "later"},
    "set_model": {"provider": "loop", "modelId": "m"},
    "set_thinking_level": {"level": "off"},
    "set_steering_mode": {"mode": "all"},
    "set_follow_up_mode": {"mode": "all"},
    "set_auto_compaction": {"enabled": True},
    "set_auto_retry": {"enabled": True},
    "bash": {"command": "true"},
    "fork": {"entryId": "none"},
    "rewind": {"entryId": "none", "restore": "files"},
    "set_session_name": {"name": "named"},
    "prompt": {"message": "hi"},
}


def listed_as_served_beyond_0731() -> set[str]:
    """The commands named in the bullet of PROTOCOL.md's list of differences that says they are served."""
    text = PROTOCOL.read_text()
    differences = text[text.index("What this mode sends differently from Pi's npm release 0.73.1") :]
    differences = differences[: differences.index("\n\n", differences.index("\n- "))]
    [served] = [item for item in differences.split("\n- ") if "are served" in item]
    return set(re.findall(r"`([a-z_]+)`", served[: served.index("are served")]))


def listed_as_pi_rpcs_own() -> set[str]:
    """The commands of the bullet that says they are pi-rpc's own (no Pi has them)."""
    text = PROTOCOL.read_text()
    differences = text[text.index("What this mode sends differently from Pi's npm release 0.73.1") :]
    [own] = [item for item in differences.split("\n- ") if "pi-rpc's own" in item]
    return set(re.findall(r"`([a-z_]+)`", own[: own.index("pi-rpc's own")]))


def pi_0731() -> list[str]:
    return ["node", str(real_pi()), "--mode", "rpc", "--offline", "--provider", "loop", "--model", "m"]


def unknown_to_pi(pi: list[str], commands: list[Json], env: dict[str, str], cwd: Path) -> set[str]:
    """The commands real Pi (`pi`) answers `Unknown command` (it names the command, leaving the id out)."""
    with subprocess.Popen(
        [*pi, "--no-session"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        answered: dict[str, Json] = {}
        done = threading.Event()

        def read() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = json.loads(raw)
                if line.get("type") == "response":
                    answered[line["command"]] = line
                if len(answered) == len(commands):
                    done.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        for command in commands:
            proc.stdin.write(json.dumps(command) + "\n")
        proc.stdin.flush()
        assert done.wait(60), sorted({c["type"] for c in commands} - set(answered))  # a guard against a hang
        proc.kill()
    return {name for name, line in answered.items() if line.get("error") == f"Unknown command: {name}"}


def test_the_commands_served_beyond_0731_are_the_ones_the_protocol_lists(tmp_path: Path) -> None:
    names = sorted(COMMAND_TYPES, key=lambda name: name == "prompt")
    commands = [{"id": name, "type": name, **FIELDS.get(name, {})} for name in names]
    with loopback_server([turn("hello"), turn("hello")]) as server:
        env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path, server, {}))}
        unknown = unknown_to_pi(pi_0731(), commands, env, tmp_path)
        unknown_to_pi16 = unknown_to_pi(pi16_rpc(), commands, env, tmp_path)
    own = listed_as_pi_rpcs_own()
    assert own == {"get_checkpoints", "rewind"}
    assert unknown == {"get_entries", "get_tree", "get_available_thinking_levels", "clear_queue"} | own
    assert listed_as_served_beyond_0731() == unknown - own
    assert unknown_to_pi16 == own

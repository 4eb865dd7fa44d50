"""What the daemon imports before it answers its handshake: nothing only a prompt needs.

httpx (providers), jsonschema (tool-argument validation) and Pillow (images) are imported on
first use; together they cost about a third of the daemon's import time without lsprotocol. So are
what one command alone needs: the HTML export's writer (and `html`'s entity table) and `difflib`
(an edit's diff, a rewind's, the nearest model names of a "Model not found" message).

A real daemon is started on pipes, answers `initialize` (JSON-RPC) or `get_state` (Pi mode), and
reports the modules it held when that answer was written: none of the run's code (the agent loop,
argument checking, the stream builder, the tools' running code, MCP's tool search), and no more of
pi-rpc's own modules than `MAX_PI_RPC_MODULES`. The warm-up then loads the run's code
(tests/unit/session/test_warm_up.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_rpc.ai.apis import API_DECLARATIONS

DEFERRED = (
    "httpx",
    "jsonschema",
    "PIL",
    "pi_rpc.ai.http",
    # every HTTP API's provider module (the scripted model's is light, and the demo's default)
    *(declaration.module for declaration in API_DECLARATIONS.values() if declaration.provider is not None),
    "pi_rpc.session.storage.export_html",
    "html.entities",
    "difflib",
)

# What only a prompt (a run, a tool call, an MCP server, an approval rule) needs: imported by it or
# by the warm-up, after the handshake is answered.
RUN_ONLY = (
    *DEFERRED,
    "pi_rpc.agent.loop",
    "pi_rpc.agent.tool_calls",
    "pi_rpc.ai.coercion",
    "pi_rpc.ai.schema_errors",
    "pi_rpc.ai.stream",
    "pi_rpc.ai.providers.faux",
    "pi_rpc.tools.output",
    "pi_rpc.tools.supervisor",
    "pi_rpc.tools.edit_diff",
    "pi_rpc.tools.mutation_queue",
    "pi_rpc.tools.images",
    "pi_rpc.tools.read_lines",
    "pi_rpc.tools.codemode_declarations",
    "pi_rpc.tools.codemode_values",
    "pi_rpc.tools.tool_search",
    "pi_rpc.tools.tool_ranking",
    "pi_rpc.tools.mcp_prompt",
    "pi_rpc.tools.mcp",
    "pi_rpc.session.approvals.shell_commands",
    "_ctypes",
)
# pi-rpc's own modules loaded when the handshake is answered (120 when this was written, of 140
# before the run's code was left to the run): a new import chain on the way shows here first.
MAX_PI_RPC_MODULES = 125

_PROBE = """
import sys
import pi_rpc.cli, pi_rpc.modes.stdio, pi_rpc.session.session, pi_rpc.tools.registry, pi_rpc.modes.jsonrpc.server
print(" ".join(name for name in sys.argv[1:] if name in sys.modules))
"""

# The daemon's own entry point, with its protocol writes watched: the modules it holds when the
# handshake's answer leaves are written to the file named by argv[1], then it runs on.
_DAEMON = """
import json, os, sys
report, sys.argv = sys.argv[1], ["pi-rpc", *sys.argv[2:]]
writev = os.writev

def watched(fd, buffers):
    if not os.path.exists(report):
        with open(report, "w") as out:
            json.dump(sorted(sys.modules), out)
    return writev(fd, buffers)

os.writev = watched
from pi_rpc.__main__ import run
run()
"""

HANDSHAKES = {
    "jsonrpc": ["--mode", "jsonrpc", "--framing", "jsonl"],
    "pi": ["--mode", "rpc"],
}
REQUESTS = {
    "jsonrpc": b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"test"}}}\n',
    "pi": b'{"id":"ready","type":"get_state"}\n',
}


def test_start_up_leaves_providers_validation_and_images_unloaded() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *DEFERRED], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == []


def modules_at_the_handshake(tmp_path: Path, mode: str) -> list[str]:
    """The modules a daemon held when it wrote the answer to its handshake."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    report = tmp_path / "modules.json"
    # A model on a port nothing listens on (9, discard): the handshake never dials it.
    argv = ["--cwd", str(workspace), "--api", "openai-completions", "--base-url", "http://127.0.0.1:9/v1"]
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("PI_CODING_AGENT_DIR", None)
    daemon = subprocess.Popen(
        [sys.executable, "-c", _DAEMON, str(report), *argv, "--model", "m", *HANDSHAKES[mode]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert daemon.stdin is not None and daemon.stdout is not None
    try:
        daemon.stdin.write(REQUESTS[mode])
        daemon.stdin.flush()
        answer = daemon.stdout.readline()
        assert b'"result"' in answer or b'"success":true' in answer, answer
    finally:
        daemon.stdin.close()
        daemon.wait(timeout=60)
        daemon.stdout.close()
    modules: list[str] = json.loads(report.read_text())
    return modules


@pytest.mark.parametrize("mode", ["jsonrpc", "pi"])
def test_the_handshake_is_answered_before_the_run_code_is_imported(tmp_path: Path, mode: str) -> None:
    modules = modules_at_the_handshake(tmp_path, mode)
    assert [name for name in RUN_ONLY if name in modules] == []
    own = [name for name in modules if name == "pi_rpc" or name.startswith("pi_rpc.")]
    assert len(own) <= MAX_PI_RPC_MODULES, f"{len(own)} of pi-rpc's modules: {own}"

"""What codemode saves on a multi-file task: model turns, tokens sent, wall time.

Run: `.venv/bin/python bench/bench_codemode.py [--files 5]`

The task: read N source files and grep them for a word, then answer. Direct, the scripted model
asks for one `read` per turn and then one `grep` (N + 2 requests, each resending the whole
context with every file read so far). With codemode it sends one program that reads the files
and greps them in the sandbox and returns only the matching lines (2 requests). Both run in a
real AgentSession with the real tools and the real QuickJS child. "Tokens sent" counts what each
request carries: the system prompt, the tool declarations and the transcript, at 4 characters a
token (the estimate Pi's codemode uses).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec

from pi_rpc.ai import AssistantBuilder, Context, Model, StreamOptions
from pi_rpc.ai.providers.faux import FAUX_MODEL, FauxProvider, Script
from pi_rpc.session.configuration.config import ModelStart, PersistenceConfig, ToolsConfig
from pi_rpc.session.session import AgentSession, ModelChoice, SessionConfig
from pi_rpc.tools.registry import create_tool_definitions

TOOLS = ["read", "bash", "edit", "write", "grep", "codemode"]


def make_tree(root: Path, files: int) -> list[str]:
    names = []
    for n in range(files):
        body = "".join(f"def helper_{n}_{k}(value):\n    return value * {k}  # line {k}\n" for k in range(60))
        body += f"# TODO: remove helper_{n}_7 once callers move\n"
        (root / f"module_{n}.py").write_text(body)
        names.append(f"module_{n}.py")
    return names


def direct_turns(names: list[str]) -> list[list[dict[str, Any]]]:
    turns: list[list[dict[str, Any]]] = [[{"toolCall": {"name": "read", "arguments": {"path": n}}}] for n in names]
    turns.append([{"toolCall": {"name": "grep", "arguments": {"pattern": "TODO", "path": "."}}}])
    turns.append([{"text": "Each module has one TODO about a helper to remove."}])
    return turns


def codemode_turns(names: list[str]) -> list[list[dict[str, Any]]]:
    code = (
        f"const names = {json.dumps(names)};\n"
        "const texts = await Promise.all(names.map((path) => tools.read({ path })));\n"
        'const hits = await tools.grep({ pattern: "TODO", path: "." });\n'
        "const sizes = names.map((n, i) => `${n}: ${texts[i].split('\\n').length} lines`);\n"
        'return sizes.join("\\n") + "\\n" + hits;'
    )
    return [
        [{"toolCall": {"name": "codemode", "arguments": {"code": code}}}],
        [{"text": "Each module has one TODO about a helper to remove."}],
    ]


class Metered:
    """The scripted model, counting requests and the characters each one carries."""

    def __init__(self, script: Script) -> None:
        self.faux = FauxProvider(script)
        self.requests = 0
        self.chars = 0

    async def stream(self, model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder) -> Any:
        self.requests += 1
        self.chars += len(msgspec.json.encode(context))
        return await self.faux.stream(model, context, options, builder)


async def run(workspace: Path, turns: list[list[dict[str, Any]]]) -> tuple[int, int, float]:
    script = msgspec.convert({"replies": [{"match": "^go", "turns": turns}]}, Script)
    metered = Metered(script)
    choice = ModelChoice(model=FAUX_MODEL, stream_fn=metered.stream, scripted=True)
    config = SessionConfig(
        cwd=str(workspace),
        models=ModelStart(choice=choice),
        tools=ToolsConfig(definitions=create_tool_definitions(TOOLS), active=TOOLS),
        persistence=PersistenceConfig(root=workspace.parent / "sessions"),
    )
    async with anyio.create_task_group() as tasks:
        session = AgentSession(config, tasks)
        started = time.perf_counter()
        await session.prompt("go: find the TODOs in the modules")
        wall = time.perf_counter() - started
        await session.close()
    return metered.requests, metered.chars // 4, wall


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        names = make_tree(workspace, args.files)
        rows = [
            ("direct", await run(workspace, direct_turns(names))),
            ("codemode", await run(workspace, codemode_turns(names))),
        ]
    direct, code = rows[0][1], rows[1][1]
    report = [
        f"task: read {args.files} files and grep them, then answer",
        f"{'mode':<10} {'requests':>8} {'tokens sent':>12} {'wall s':>8}",
        *(f"{mode:<10} {requests:>8} {tokens:>12} {wall:>8.2f}" for mode, (requests, tokens, wall) in rows),
        f"codemode/direct: requests {code[0] / direct[0]:.2f}x, tokens {code[1] / direct[1]:.2f}x",
    ]
    print("\n".join(report))  # noqa: T201 - the report


if __name__ == "__main__":
    anyio.run(main)

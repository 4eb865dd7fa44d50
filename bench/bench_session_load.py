"""Loading a long session file: the time to read its entries and build the model's context, and the
memory its entries hold, for this checkout against another source tree in the same run.

Run: `.venv/bin/python bench/bench_session_load.py --base DIR [--entries 10000] [--repeat 7]`

`DIR` holds another `pi_rpc` package, for example main's: `git archive main | tar -x -C DIR`. The
file is written once, in Pi's shape (a model and a thinking level change, then turns of a prompt,
a reply calling a tool, its result and an answer, a label now and then), and each tree loads it in
a process of its own, as `session/load` does: every entry read, then the branch's context. Time is
the median of `--repeat` loads; memory is what tracemalloc sees held by the loaded entries (kept)
and at most during the load (peak). Ratios below 1 favour this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_WORKER = """
import gc, json, sys, time, tracemalloc
from pathlib import Path
from statistics import median
import pi_rpc
from pi_rpc.session import load_entries

path, repeat = Path(sys.argv[1]), int(sys.argv[2])
samples = []
for _ in range(repeat):
    gc.collect()
    start = time.perf_counter()
    _, entries = load_entries(path)
    context = entries.context()
    samples.append(time.perf_counter() - start)
    del entries, context
gc.collect()
tracemalloc.start()
_, entries = load_entries(path)
context = entries.context()
gc.collect()
kept, peak = tracemalloc.get_traced_memory()
print(json.dumps({"seconds": median(samples), "kept": kept, "peak": peak, "messages": len(context),
                  "source": pi_rpc.__file__}))
"""


def _stamp(number: int) -> str:
    return f"2026-01-01T00:{number // 60 % 60:02d}:{number % 60:02d}.000Z"


def session_lines(count: int) -> list[dict[str, Any]]:
    """A header and `count` entries, one branch, as Pi writes them."""
    header = {"type": "session", "version": 3, "id": "bench", "timestamp": _stamp(0), "cwd": "/w"}
    entries: list[dict[str, Any]] = [
        {"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"},
        {"type": "thinking_level_change", "thinkingLevel": "medium"},
    ]
    usage: dict[str, Any] = {"input": 1200, "output": 80, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1280}
    usage |= {"cost": {"input": 0.01, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.012}}
    reply = {"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    turn = 0
    while len(entries) < count:
        text = f"turn {turn}: please look at src/module_{turn}.py and tell me what it does " * 3
        call = {"type": "toolCall", "id": f"call_{turn}", "name": "read", "arguments": {"path": f"src/m{turn}.py"}}
        output = "\n".join(f"{line:4d}  def function_{line}(value): return value * {line}" for line in range(40))
        entries += [
            {"type": "message", "message": {"role": "user", "content": text, "timestamp": turn}},
            {
                "type": "message",
                "message": reply
                | {"content": [{"type": "thinking", "thinking": "Reading it."}, call], "usage": usage}
                | {"stopReason": "toolUse", "timestamp": turn},
            },
            {
                "type": "message",
                "message": {"role": "toolResult", "toolCallId": f"call_{turn}", "toolName": "read"}
                | {"content": [{"type": "text", "text": output}], "isError": False, "timestamp": turn},
            },
            {
                "type": "message",
                "message": reply
                | {"content": [{"type": "text", "text": "It multiplies. " * 20}], "usage": usage}
                | {"stopReason": "stop", "timestamp": turn},
            },
        ]
        if turn % 50 == 49:
            entries.append({"type": "label", "targetId": f"{len(entries) - 4:08x}", "label": f"turn {turn}"})
        turn += 1
    lines: list[dict[str, Any]] = [header]
    for number, entry in enumerate(entries[:count]):
        parent = f"{number - 1:08x}" if number else None
        lines.append(
            {"type": entry.pop("type"), "id": f"{number:08x}", "parentId": parent}
            | {"timestamp": _stamp(number), **entry}
        )
    return lines


def measure(tree: Path, path: Path, repeat: int) -> dict[str, Any]:
    env = os.environ | {"PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-P", "-c", _WORKER, str(path), str(repeat)],
        env=env,
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    assert Path(result["source"]).is_relative_to(tree.resolve()), result["source"]  # not another checkout's
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="another source tree holding pi_rpc/")
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    ours_tree = Path(__file__).resolve().parent.parent
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "session.jsonl")
        path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in session_lines(args.entries)))
        size = path.stat().st_size
        ours = measure(ours_tree, path, args.repeat)
        base = measure(args.base, path, args.repeat)
    load_after = os.getloadavg()
    print(  # noqa: T201
        f"{args.entries} entries ({size / 2**20:.1f} MiB), {ours['messages']} messages in context; "
        f"median of {args.repeat}; load average {load_before[0]:.2f} before / {load_after[0]:.2f} after"
    )
    print(f"  {'':<22} {'this checkout':>14} {'base':>14} {'ratio':>8}")  # noqa: T201
    for label, key, scale, unit in (
        ("load + context", "seconds", 1000, "ms"),
        ("kept by the entries", "kept", 2**-20, "MiB"),
        ("peak while loading", "peak", 2**-20, "MiB"),
    ):
        print(  # noqa: T201
            f"  {label:<22} {ours[key] * scale:>11.1f} {unit:<3}"
            f"{base[key] * scale:>11.1f} {unit:<3}{ours[key] / base[key]:>8.3f}"
        )


if __name__ == "__main__":
    main()

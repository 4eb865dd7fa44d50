"""Per-call cost of the tool-process supervisor: `run_process_group` against a direct spawn.

Run: `.venv/bin/python bench/bench_spawn.py [--calls 40]`

Both sides run the same command (`/bin/bash -c true` by default) through anyio on the asyncio
backend and read its output to the end. The baseline spawns the shell directly in a new session,
as the bash tool did before the supervisor; pi-rpc's `run_process_group` starts it below a keeper
forked by the daemon's one supervisor (`supervisor.py`, started on the first call) on Linux. Calls
alternate between the two, so load from other jobs falls on both alike. To measure an older tree,
put it first on the path: `PYTHONPATH=/tmp/before .venv/bin/python bench/bench_spawn.py`.
Reported: the median and the 10th percentile per call, the ratio, and the difference, which is
the supervisor's overhead per bash call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

import anyio
from daemons import source_revision

from pi_rpc.tools.process import SUPERVISED, run_process_group


async def direct(argv: list[str]) -> int:
    async with await anyio.open_process(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    ) as proc:
        assert proc.stdout is not None
        async for _ in proc.stdout:
            pass
        return await proc.wait()


async def supervised(argv: list[str]) -> int | None:
    return await run_process_group(argv, os.getcwd(), None, lambda _: None)


async def measure(argv: list[str], calls: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    base: list[float] = []
    for _ in range(calls):
        started = time.perf_counter()
        await supervised(argv)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        await direct(argv)
        base.append(time.perf_counter() - started)
    return ours, base


def p10(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 10]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--command", default="true")
    args = parser.parse_args(argv)
    command = ["/bin/bash", "-c", args.command]
    load_before = os.getloadavg()
    ours, base = anyio.run(measure, command, args.calls)
    load_after = os.getloadavg()
    ours_ms, base_ms = statistics.median(ours) * 1e3, statistics.median(base) * 1e3
    print(
        f"pi-rpc {source_revision(None)} spawn: {args.calls} calls of {command}, supervised={SUPERVISED}, "  # noqa: T201
        f"{os.cpu_count()} CPUs, load average {load_before[0]:.2f} before / {load_after[0]:.2f} after"
    )
    print(
        f"  median per call: pi-rpc {ours_ms:.1f} ms, direct spawn {base_ms:.1f} ms, "  # noqa: T201
        f"ratio {ours_ms / base_ms:.2f}, overhead {ours_ms - base_ms:.1f} ms"
    )
    print(f"  10th percentile: pi-rpc {p10(ours) * 1e3:.1f} ms, direct spawn {p10(base) * 1e3:.1f} ms")  # noqa: T201


if __name__ == "__main__":
    main()

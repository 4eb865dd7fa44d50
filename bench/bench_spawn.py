"""Per-call cost of the tool-process supervisor: `run_process_group` against a direct spawn.

Run: `.venv/bin/python bench/bench_spawn.py [--calls 40]`

Both sides run the same command (`/bin/bash -c true` by default) through anyio on the asyncio
backend and read its output to the end. The baseline spawns the shell directly in a new session,
as the bash tool did before the supervisor; pi-rpc's `run_process_group` starts it below a keeper
forked by the daemon's one supervisor (`supervisor.py`, started on the first call) on Linux. Calls
alternate between the two, so load from other jobs falls on both alike. To measure an older tree,
put it first on the path: `PYTHONPATH=/tmp/before .venv/bin/python bench/bench_spawn.py`.
Reported: the median and the 10th percentile per call, the ratio, and the difference, which is
the supervisor's overhead per bash call; and each call split at its first output chunk (start ->
first output, first output -> exit status read and the call returned), so a cost of starting is
told apart from one of ending. The default command prints one line, as the bench's tool turns do.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

import anyio
from daemons import source_revision

from pi_rpc.tools.process import SUPERVISED, ProcessTable, run_process_group


class Timing:
    """One call's time to its first output chunk and to its return."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.first_output: float | None = None

    def on_chunk(self, _chunk: bytes) -> None:
        if self.first_output is None:
            self.first_output = time.perf_counter()

    def split(self) -> tuple[float, float, float]:
        """(total, start -> first output, first output -> return); no output counts as all start."""
        ended = time.perf_counter()
        first = ended if self.first_output is None else self.first_output
        return ended - self.started, first - self.started, ended - first


async def direct(argv: list[str]) -> tuple[float, float, float]:
    timing = Timing()
    async with await anyio.open_process(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    ) as proc:
        assert proc.stdout is not None
        async for chunk in proc.stdout:
            timing.on_chunk(chunk)
        await proc.wait()
    return timing.split()


async def supervised(argv: list[str], processes: ProcessTable) -> tuple[float, float, float]:
    timing = Timing()
    await run_process_group(argv, os.getcwd(), None, timing.on_chunk, processes=processes)
    return timing.split()


Samples = list[tuple[float, float, float]]


async def measure(argv: list[str], calls: int) -> tuple[Samples, Samples]:
    ours: Samples = []
    base: Samples = []
    processes = ProcessTable()
    for _ in range(calls):
        ours.append(await supervised(argv, processes))
        base.append(await direct(argv))
    return ours, base


def column(samples: Samples, index: int) -> list[float]:
    return [sample[index] for sample in samples]


def p10(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 10]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--command", default="echo one")
    args = parser.parse_args(argv)
    command = ["/bin/bash", "-c", args.command]
    load_before = os.getloadavg()
    ours, base = anyio.run(measure, command, args.calls)
    load_after = os.getloadavg()
    ours_ms, base_ms = (statistics.median(column(samples, 0)) * 1e3 for samples in (ours, base))
    lines = [
        f"pi-rpc {source_revision(None)} spawn: {args.calls} calls of {command}, supervised={SUPERVISED}, "
        f"{os.cpu_count()} CPUs, load average {load_before[0]:.2f} before / {load_after[0]:.2f} after",
        f"  median per call: pi-rpc {ours_ms:.1f} ms, direct spawn {base_ms:.1f} ms, "
        f"ratio {ours_ms / base_ms:.2f}, overhead {ours_ms - base_ms:.1f} ms",
        f"  10th percentile: pi-rpc {p10(column(ours, 0)) * 1e3:.1f} ms, "
        f"direct spawn {p10(column(base, 0)) * 1e3:.1f} ms",
    ]
    for index, label in ((1, "start -> first output"), (2, "first output -> return")):
        mine, theirs = (statistics.median(column(samples, index)) * 1e3 for samples in (ours, base))
        lines.append(f"  median {label}: pi-rpc {mine:.2f} ms, direct spawn {theirs:.2f} ms")
    print("\n".join(lines))  # noqa: T201


if __name__ == "__main__":
    main()

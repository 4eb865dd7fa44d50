"""Where a daemon's time goes per prompt: pi-rpc under cProfile, driven through N prompts.

Run: `.venv/bin/python bench/profile_turns.py [--prompts 50] [--turns | --big] [--sort tottime] [--top 40]`

Each prompt is one bash call and an answer, or with `--turns` the benchmark's 20-turn prompt
(`TURNS` bash calls in one run), or with `--big` its 200 MB one (workload h). One such prompt runs
before profiling starts, so the lazy imports and caches of the first request are not counted as
per-turn cost.

The daemon runs as in `bench_vs_pi.py` (a fresh HOME, the loopback model, JSON lines), wrapped
so that cProfile covers everything after start-up: profiling starts once the daemon answered
`initialize`, and the stats are written when it exits. Only the daemon's own process is profiled
(tool processes are its children). The profile file is kept when `--out` is given.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pstats
import signal
import sys
import tempfile
import time

from bench_vs_pi import BIG_PROMPT, ECHO_PROMPT, TURNS_PROMPT
from daemons import RunningDaemon, Sandbox, pi_rpc_spec
from loopback import TURNS, LoopbackModel

# The signal that turns the profiler on: not SIGUSR1 or SIGUSR2, which the daemon takes for its
# stack dumps (modes/stack_dumps.py; with SIGUSR1 the profiler was never turned on).
PROFILE_SIGNAL = signal.SIGRTMIN + 1
# Runs the daemon's main with a profiler that PROFILE_SIGNAL turns on, dumping the stats at exit
# (the daemon leaves through os._exit, which skips atexit).
WRAPPER = f"""
import cProfile, os, signal, sys
profiler = cProfile.Profile()
signal.signal({int(PROFILE_SIGNAL)}, lambda *_: profiler.enable())
real_exit = os._exit
def leave(code):
    profiler.disable()
    profiler.dump_stats(os.environ["PI_RPC_PROFILE_OUT"])
    real_exit(code)
os._exit = leave
from pi_rpc.cli import main
sys.argv[0] = "pi-rpc"
main(sys.argv[1:])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--turns", action="store_true", help=f"each prompt runs {TURNS} tool turns")
    parser.add_argument("--big", action="store_true", help="each prompt is bench_vs_pi's (h): bash prints 200 MB")
    parser.add_argument("--sort", default="tottime", help="pstats sort key (tottime, cumulative, ...)")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--out", help="keep the profile here")
    args = parser.parse_args()
    out = args.out or tempfile.mktemp(suffix=".prof")
    sandbox = Sandbox()
    try:
        with LoopbackModel() as model:
            cwd = sandbox.workspace()
            spec = pi_rpc_spec(sandbox, model.base_url, cwd)
            spec = dataclasses.replace(
                spec,
                argv=[sys.executable, "-c", WRAPPER, *spec.argv[spec.argv.index("--cwd") :]],
                env={**spec.env, "PI_RPC_PROFILE_OUT": out},
            )
            with RunningDaemon(spec, cwd) as daemon:
                daemon.send(spec.ready_request)
                daemon.wait("ready", 60)
                prompt = BIG_PROMPT if args.big else TURNS_PROMPT if args.turns else ECHO_PROMPT
                daemon.send(spec.prompt_request(prompt))  # warm-up: first-request imports and caches
                daemon.wait_count("idle", 1, 60)
                time.sleep(0.5)
                os.kill(daemon.pid, PROFILE_SIGNAL)  # start profiling
                time.sleep(0.1)
                started = time.perf_counter()
                for count in range(2, args.prompts + 2):
                    daemon.send(spec.prompt_request(prompt))
                    daemon.wait_count("idle", count, 60)
                wall = time.perf_counter() - started
                daemon.close()
    finally:
        sandbox.cleanup()
    print(  # noqa: T201 - the report
        f"{args.prompts} prompts, {wall / args.prompts * 1000:.1f} ms each, load average {os.getloadavg()[0]:.2f}"
    )
    stats = pstats.Stats(out)
    stats.sort_stats(args.sort).print_stats(args.top)
    if not args.out:
        os.unlink(out)


if __name__ == "__main__":
    main()

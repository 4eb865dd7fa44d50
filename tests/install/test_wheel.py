"""The wheel a user installs (pipx, uv tool, pip) works on its own (docs/CONFIGURATION.md,
"Install").

The wheel is built from the files git knows (a clean copy, as `python -m build` would see them),
installed offline into a fresh venv (dependencies repacked from the project venv, see
wheelhouse.py), and every user-facing command runs from an unrelated folder with an empty HOME,
so nothing of the checkout or of the developer's configuration can stand in for what the wheel
lacks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import daemon_env

from .wheelhouse import build_wheelhouse

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Installed:
    venv: Path
    wheel: Path
    home: Path
    elsewhere: Path
    timings: dict[str, float]

    @property
    def pi_rpc(self) -> Path:
        return self.venv / "bin" / "pi-rpc"

    def env(self, **extra: str) -> dict[str, str]:
        env = daemon_env(self.home)
        env.pop("VIRTUAL_ENV", None)
        env.pop("PYTHONPATH", None)
        env.update(extra)
        return env

    def run(self, *args: str, timeout: float = 120, **extra_env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.pi_rpc), *args],
            cwd=self.elsewhere,
            env=self.env(**extra_env),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def _source_copy(target: Path) -> Path:
    """The files git tracks or would track (untracked but not ignored): what a clone builds from."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if not os.path.lexists(source):
            continue  # deleted in the work tree
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            destination.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, destination)
    return target


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(name).decode().splitlines()
    return [
        line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    base = tmp_path_factory.mktemp("install")
    timings: dict[str, float] = {}
    started = time.monotonic()
    source = _source_copy(base / "src")
    dist = base / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(dist),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(dist.glob("pi_rpc-*.whl"))
    timings["build"] = time.monotonic() - started
    started = time.monotonic()
    wheelhouse = base / "wheelhouse"
    build_wheelhouse(_requirements(wheel), wheelhouse)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheelhouse),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    timings["install"] = time.monotonic() - started
    home, elsewhere = base / "home", base / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    yield Installed(venv=venv, wheel=wheel, home=home, elsewhere=elsewhere, timings=timings)


def test_the_wheel_carries_the_protocol_and_py_typed(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as archive:
        names = set(archive.namelist())
    assert {"pi_rpc/py.typed", "pi_rpc/protocol_files/PROTOCOL.md", "pi_rpc/protocol_files/schema.json"} <= names
    assert not any(name.startswith(("tests/", "protocol/", "editor-clients/")) for name in names)


def test_help_and_version_refer_to_what_is_installed(installed: Installed) -> None:
    result = installed.run("--help")
    assert result.returncode == 0, result.stderr
    assert "protocol/PROTOCOL.md" not in result.stdout  # a path only a checkout has
    for subcommand in ("models", "tools", "doctor", "protocol", "demo"):
        assert f"pi-rpc {subcommand}" in result.stdout
    version = installed.run("--version")
    assert version.returncode == 0 and version.stdout.startswith("pi-rpc 0.1.0 (protocol 1, ACP protocol ")


def test_protocol_prints_the_contract_of_this_version(installed: Installed) -> None:
    assert installed.run("protocol").stdout == (ROOT / "protocol" / "PROTOCOL.md").read_text(encoding="utf-8")
    assert installed.run("protocol", "--schema").stdout == (ROOT / "protocol" / "schema.json").read_text()
    where = Path(installed.run("protocol", "--path").stdout.strip())
    assert where.is_relative_to(installed.venv) and where.is_file()


def test_models_lists_the_catalogue_and_marks_the_default(installed: Installed) -> None:
    without_key = installed.run("models")
    assert without_key.returncode == 0, without_key.stderr
    assert "anthropic/claude-sonnet-4-6" in without_key.stdout and "No model is configured" in without_key.stdout
    with_key = installed.run("models", OPENAI_API_KEY="sk-test-not-real")
    assert "* openai/gpt-5.4" in with_key.stdout
    assert "sk-test-not-real" not in with_key.stdout


def test_tools_lists_every_tool_and_the_pinned_ripgrep(installed: Installed) -> None:
    result = installed.run("tools")
    assert result.returncode == 0, result.stderr
    assert "read        yes" in result.stdout and "grep        no" in result.stdout
    assert f"ripgrep: {installed.venv / 'bin' / 'rg'}" in result.stdout


def test_doctor_passes_offline_on_a_fresh_install(installed: Installed) -> None:
    result = installed.run("doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("ok    pi-rpc: 0.1.0, protocol 1") and str(installed.venv) in line for line in lines)
    assert any(
        line.startswith("ok    ripgrep: ripgrep 14.1.0") and "the pinned ripgrep wheel" in line for line in lines
    )
    assert "info  anthropic key: ANTHROPIC_API_KEY is not set" in lines


def test_doctor_names_a_broken_models_json_line_and_a_missing_key(installed: Installed, tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / ".config" / "pi-rpc"
    config.mkdir(parents=True)
    (config / "models.json").write_text(
        '{\n  "providers": {\n    "local": {\n      "baseUrl": "http://x",\n'
        '      "models": [{"id": "m",}]\n    }\n  }\n}\n'
    )
    xdg_config = str(home / ".config")
    broken = installed.run("doctor", HOME=str(home), XDG_CONFIG_HOME=xdg_config)
    assert broken.returncode == 1
    assert "fail  models.json: Invalid models config" in broken.stdout and ", line 5, column 29:" in broken.stdout
    (config / "models.json").write_text(
        '{"providers": {"proxy": {"baseUrl": "http://127.0.0.1:9/v1", '
        '"api": "openai-completions", "apiKey": "$PROXY_TOKEN", '
        '"models": [{"id": "m"}]}}}'
    )
    missing = installed.run("doctor", HOME=str(home), XDG_CONFIG_HOME=xdg_config)
    assert missing.returncode == 1
    assert "fail  proxy key: models.json apiKey reads PROXY_TOKEN, which is not set" in missing.stdout
    fixed = installed.run("doctor", PROXY_TOKEN="secret-value-1234", HOME=str(home), XDG_CONFIG_HOME=xdg_config)
    assert fixed.returncode == 0 and "ok    proxy key: set: PROXY_TOKEN (models.json apiKey)" in fixed.stdout
    assert "secret-value-1234" not in fixed.stdout


def test_the_demo_runs_from_an_unrelated_folder(installed: Installed) -> None:
    result = installed.run("demo", "--no-color", timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "scripted model" in result.stdout and "Done." in result.stdout


def test_install_figures(installed: Installed) -> None:
    """Not a timing assertion: the figures go to the test report (pytest -rA shows them)."""
    sys.stdout.write(
        f"wheel build {installed.timings['build']:.1f} s, "
        f"offline install into a fresh venv {installed.timings['install']:.1f} s\n"
    )
    assert set(installed.timings) == {"build", "install"}

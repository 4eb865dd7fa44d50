"""The offline checks of `pi-rpc doctor`: what a user's first hour depends on, one `Check` each.

No check prints a key or a header value: keys are reported by the variable that holds them
(`ModelRegistry.key_origin`), and config errors by file, line and JSON path.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Literal

import msgspec
import platformdirs

import pi_rpc
from pi_rpc.ai import ConfigError, ModelRegistry, config_paths, known_providers, list_models, no_model_message
from pi_rpc.session import (
    ResourceOptions,
    RuleError,
    Settings,
    SettingsError,
    chosen_session_root,
    decide_trust,
    load_settings,
    needs_trust,
    parse_rules,
    sessions_folder,
    settings_paths,
    untrusted_resources,
    with_workspace_settings,
    workspace_settings,
    workspace_settings_path,
)
from pi_rpc.tools import locate_rg, wheel_rg

Status = Literal["ok", "info", "warn", "fail"]

MIN_PYTHON = (3, 11)
# The libraries whose versions explain most "works for me" differences.
KEY_DEPENDENCIES = ("pygls", "msgspec", "anyio", "httpx", "agent-client-protocol", "ripgrep")
_VERSION_TIMEOUT = 10.0


class Check(msgspec.Struct, frozen=True):
    status: Status
    label: str
    detail: str
    hint: str = ""


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] < MIN_PYTHON:
        return Check("fail", "python", f"Python {version} ({sys.executable})", "pi-rpc needs Python 3.11 or newer")
    return Check("ok", "python", f"Python {version} ({sys.executable})")


def check_package() -> Iterator[Check]:
    from pi_rpc.modes.jsonrpc.protocol import PROTOCOL_VERSION

    where = Path(pi_rpc.__file__).parent
    yield Check("ok", "pi-rpc", f"{pi_rpc.__version__}, protocol {PROTOCOL_VERSION} ({where})")
    versions, missing = [], []
    for name in KEY_DEPENDENCIES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing:
        yield Check(
            "fail",
            "dependencies",
            f"missing: {', '.join(missing)}",
            "reinstall pi-rpc (pipx install --force, uv tool install --reinstall, or pip install)",
        )
    else:
        yield Check("ok", "dependencies", ", ".join(versions))


def _mode(path: Path) -> str:
    return f"mode {stat.S_IMODE(path.stat().st_mode):03o}"


def check_folder(label: str, path: Path, *, private: bool) -> Check:
    """A folder pi-rpc reads or writes: present (or creatable), usable, and private if it must be."""
    if not path.exists():
        parent = next((p for p in path.parents if p.exists()), None)
        if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
            return Check("fail", label, f"{path} does not exist and {parent} is not writable")
        return Check("ok", label, f"{path} (created on first use)")
    if not path.is_dir():
        return Check("fail", label, f"{path} is not a folder")
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        return Check("fail", label, f"{path} is not readable and writable by you ({_mode(path)})")
    if private and path.stat().st_mode & 0o077:
        return Check("warn", label, f"{path} is readable by others ({_mode(path)})", f"chmod 700 {path}")
    return Check("ok", label, f"{path} ({_mode(path)})")


def check_models_file() -> tuple[Check, ModelRegistry | None]:
    path = next((candidate for candidate in config_paths() if candidate.is_file()), None)
    try:
        registry = ModelRegistry.load(path)
    except ConfigError as exc:
        return Check("fail", "models.json", str(exc)), None
    if path is None:
        return Check("info", "models.json", f"none (optional: {config_paths()[0]}); built-in models only"), registry
    custom = sum(1 for model in registry.all() if model.base_url and model.provider not in known_providers())
    check = Check("ok", "models.json", f"{path}: valid, {custom} model(s) of custom providers")
    if path.stat().st_mode & 0o044 and _has_literal_key(registry):
        check = Check(
            "warn",
            "models.json",
            f"{path}: valid, but holds a key and is readable by others ({_mode(path)})",
            f"chmod 600 {path}",
        )
    return check, registry


def _has_literal_key(registry: ModelRegistry) -> bool:
    providers = {model.provider for model in registry.all()}
    return any(registry.key_origin(name)[0] == "written in models.json" for name in providers)


def check_settings_file(cwd: str) -> Iterator[Check]:
    path = next((candidate for candidate in settings_paths() if candidate.is_file()), None)
    workspace = workspace_settings_path(cwd)
    for label, where in (("settings.json", path), ("workspace settings", workspace if workspace.is_file() else None)):
        if where is None:
            if label == "settings.json":
                yield Check("info", label, f"none (optional: {settings_paths()[0]}); defaults apply")
            elif needs_trust(cwd):  # no settings, but resources of its own that trust decides on
                yield check_workspace_trust(cwd)
            continue
        try:
            permissions = load_settings(where).permissions
            parse_rules([*permissions.allow, *permissions.deny])
        except (SettingsError, RuleError) as exc:
            yield Check("fail", label, str(exc) if str(where) in str(exc) else f"{where}: {exc}")
            continue
        yield Check("ok", label, f"{where}: valid")
        if label == "workspace settings":
            yield check_workspace_trust(cwd)


def check_workspace_trust(cwd: str) -> Check:
    """Whether the workspace's own settings may loosen anything and its own resources load, and
    what is ignored or not loaded until they may (session/configuration/trust.py): a daemon started here
    without --approve or --no-approve decides so."""
    try:
        user = load_settings()
    except SettingsError:
        user = Settings()  # reported by the settings.json check
    default = user.default_project_trust if isinstance(user.default_project_trust, str) else None
    decision = decide_trust(cwd, None, default)
    if decision.trusted:
        return Check("ok", "workspace trust", f"{cwd}: trusted ({decision.source}); its allow rules apply")
    ignored = workspace_settings(user, cwd, False).ignored
    skipped = untrusted_resources(cwd, ResourceOptions())
    fix = f"start pi-rpc with --approve, or trust it for good: pi-rpc trust {shlex.quote(cwd)}"
    if not ignored and not skipped:
        return Check("info", "workspace trust", f"{cwd}: not trusted ({decision.source}); nothing of it is ignored")
    said = [
        *([f"ignored: {', '.join(ignored)}"] if ignored else []),
        *([f"not loaded: {', '.join(skipped)}"] if skipped else []),
    ]
    return Check("warn", "workspace trust", f"{cwd}: not trusted ({decision.source}); {'; '.join(said)}", fix)


def sessions_folder_of(cwd: str) -> Path:
    """Where a daemon started in `cwd` without `--session-dir` keeps its sessions (a settings
    file that cannot be read is reported by its own check)."""
    try:
        setting = with_workspace_settings(load_settings(), cwd).session_dir
    except SettingsError:
        setting = None
    return sessions_folder(chosen_session_root(None, setting or None, cwd))


def check_keys(registry: ModelRegistry | None) -> Iterator[Check]:
    """Each provider's key by the name of what holds it; never the value. With no registry (a
    models.json that cannot be read, reported by its own line) the built-in providers' keys are
    still reported: the environment is as it is whatever the file says."""
    file_broken = registry is None
    if registry is None:
        registry = ModelRegistry(list_models())
    providers = list(dict.fromkeys(model.provider for model in registry.all()))
    any_key = False
    for provider in providers:
        origin, present = registry.key_origin(provider)
        any_key = any_key or present
        # A configured key that cannot be resolved; a provider with no apiKey (a local server) is fine.
        configured_but_broken = (
            not present and provider not in known_providers() and ("not set" in origin or "shell command" in origin)
        )
        status: Status = "ok" if present else ("fail" if configured_but_broken else "info")
        hint = ""
        if configured_but_broken:
            hint = "export the variable before starting pi-rpc (or your editor)"
        yield Check(status, f"{provider} key", f"set: {origin}" if present else origin, hint)
    for known in known_providers().values():
        if os.environ.get(known.base_url_variable):
            yield Check(
                "info", f"base URL: {known.name}", f"{known.base_url_variable} overrides the {known.name} base URL"
            )
    default = registry.default_model()
    if file_broken:
        yield Check(
            "warn",
            "default model",
            "unknown until models.json can be read: a daemon refuses to start on it",
            "fix models.json (its line above says where)",
        )
    elif default is not None:
        yield Check("ok", "default model", f"{default.provider}/{default.id}")
    else:
        yield Check(
            "warn",
            "default model",
            "none: prompts fail until a model is configured",
            no_model_message() if not any_key else "",
        )


def _first_line(argv: list[str]) -> str | None:
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=_VERSION_TIMEOUT, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    output = (result.stdout or result.stderr).strip()
    return output.splitlines()[0] if result.returncode == 0 and output else None


def check_ripgrep(locate: Callable[[], str | None] = locate_rg) -> Check:
    path = locate()
    if path is None:
        return Check(
            "fail",
            "ripgrep",
            "not found: grep and find cannot run",
            "reinstall pi-rpc: it depends on the ripgrep wheel, which carries the binary",
        )
    version = _first_line([path, "--version"])
    if version is None:
        return Check("fail", "ripgrep", f"{path} does not run")
    origin = "the pinned ripgrep wheel" if path == wheel_rg() else "not the pinned wheel's"
    return Check("ok", "ripgrep", f"{version} ({path}, {origin})")


def check_programs() -> Iterator[Check]:
    """Node and the editors whose clients this repository ships, when present."""
    programs = {
        "node": "node (the VS Code extension's build)",
        "nvim": "Neovim",
        "code": "VS Code",
        "zed": "Zed",
        "zeditor": "Zed",
    }
    for program, what in programs.items():
        path = shutil.which(program)
        if path is None:
            continue
        version = _first_line([path, "--version"]) or "version unknown"
        yield Check("info", program, f"{what}: {version} ({path})")


def offline_checks(cwd: str) -> Iterator[Check]:
    yield check_python()
    yield from check_package()
    config = Path(platformdirs.user_config_dir("pi-rpc"))
    yield check_folder("config folder", config, private=False)
    models_check, registry = check_models_file()
    yield models_check
    yield from check_settings_file(cwd)
    yield from check_keys(registry)
    yield check_folder("sessions folder", sessions_folder_of(cwd), private=True)
    yield check_ripgrep()
    yield from check_programs()

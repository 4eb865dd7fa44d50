"""Workspace trust, as Pi 1.6.0 has project trust, and the user's own rules for a workspace.

A repository's `.pi/settings.json` is the repository's to write, not the user's: until the user
trusts the folder, what it says may tighten (deny rules) but never loosen (allow rules, a default
policy, MCP servers), and its own skills, prompt templates and `SYSTEM.md` do not load
(session/resources/loading.py). Whether a folder is trusted is decided in Pi's order (its
`resolveProjectTrusted`):

1. the command line for this run: `--approve`/`-a` trusts, `--no-approve`/`-na` does not (an
   editor passes one of them from its own trust of the workspace); not recorded;
2. the trust list, `trust.json` in the user's config folder beside settings.json (Pi's format:
   `{"/abs/folder": true|false}`, the nearest recorded folder at or above the workspace decides),
   ours first, then Pi's own (`~/.pi/agent/trust.json`, which Pi's own prompt writes);
3. settings.json `defaultProjectTrust` (user settings only): `always` trusts, `never` does not,
   `ask` (Pi's default) does not either here: a daemon has no prompt to ask with, and Pi in RPC
   mode, which has none either, leaves the project untrusted too.

"Allow always" rules the user saves for a workspace are the user's, so they live in the user's
config folder too (`workspace-rules.json`: `{"/abs/folder": {"allow": [...]}}`), never in the
repository where the model could write one: they apply whether or not the folder is trusted.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal

import msgspec

from pi_rpc.ai import agent_config_paths

_log = logging.getLogger(__name__)

TRUST_FILE = "trust.json"
RULES_FILE = "workspace-rules.json"

TrustSource = Literal["command line", "trust list", "defaultProjectTrust", "nothing to trust"]


class TrustFileError(ValueError):
    pass


class TrustDecision(msgspec.Struct, frozen=True):
    """Whether a folder's own settings may loosen anything, and what decided it (for the log and doctor)."""

    trusted: bool
    source: TrustSource


def normal_folder(folder: str) -> str:
    """The key a folder is recorded under: absolute, symlinks resolved, as Pi canonicalises it."""
    return os.path.realpath(os.path.abspath(os.path.expanduser(folder)))


def _read_object(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = msgspec.json.decode(path.read_bytes())
    except (OSError, msgspec.DecodeError) as exc:
        raise TrustFileError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise TrustFileError(f"{path}: expected a JSON object")
    return data


def _write_object(path: Path, data: dict[str, Any]) -> None:
    """Atomically, readable by the user alone (it says which folders may run what)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(msgspec.json.format(msgspec.json.encode(dict(sorted(data.items()))), indent=2) + b"\n")
    os.replace(temporary, path)


def trust_file() -> Path:
    """Where pi-rpc records trust: beside the settings.json it reads first."""
    return agent_config_paths(TRUST_FILE)[0]


def recorded_trust(folder: str) -> bool | None:
    """The trust list's decision for `folder`: the nearest recorded folder at or above it, in our
    list, else in Pi's; None when neither names it. A list that does not parse decides nothing
    (warned about): the folder stays untrusted unless something else trusts it."""
    for path in agent_config_paths(TRUST_FILE):
        try:
            data = _read_object(path)
        except TrustFileError as exc:
            _log.warning("trust list ignored: %s", exc)
            continue
        current = normal_folder(folder)
        while True:
            decision = data.get(current)
            if isinstance(decision, bool):
                return decision
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return None


def record_trust(folder: str, trusted: bool | None) -> None:
    """Record (or with None forget) the user's decision for `folder` in our trust list."""
    path = trust_file()
    data = _read_object(path)
    key = normal_folder(folder)
    data.pop(key, None)
    if trusted is not None:
        data[key] = trusted
    _write_object(path, data)


# What in a folder's `.pi/` asks for trust (Pi's TRUST_REQUIRING_PROJECT_CONFIG_RESOURCES).
_TRUST_REQUIRING = (
    "settings.json",
    "mcp.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
)


def needs_trust(folder: str) -> bool:
    """Whether the folder holds anything an untrusted folder does not get (its settings, its own
    resources: session/resources/loading.py): an entry of `.pi/` above, or an `.agents/skills` in it or a
    folder above it other than the user's own, as Pi's `hasTrustRequiringProjectResources` asks."""
    current = Path(normal_folder(folder))
    if any((current / ".pi" / name).exists() for name in _TRUST_REQUIRING):
        return True
    users = Path(normal_folder("~")) / ".agents" / "skills"
    return any(
        (f / ".agents" / "skills").exists() and f / ".agents" / "skills" != users for f in (current, *current.parents)
    )


def decide_trust(folder: str, command_line: bool | None, default_project_trust: str | None) -> TrustDecision:
    """Pi's order (the module's docstring). A folder without settings or resources of its own
    (`needs_trust`) has nothing to trust: it counts as trusted, as Pi counts it, since nothing of
    it would be read anyway."""
    if command_line is not None:
        return TrustDecision(command_line, "command line")
    recorded = recorded_trust(folder)
    if not needs_trust(folder):
        return TrustDecision(True if recorded is None else recorded, "nothing to trust")
    if recorded is not None:
        return TrustDecision(recorded, "trust list")
    return TrustDecision(default_project_trust == "always", "defaultProjectTrust")


# --- the user's own rules for a workspace ---------------------------------------------------


def rules_file() -> Path:
    return agent_config_paths(RULES_FILE)[0]


def saved_allow_rules(folder: str) -> list[str]:
    """The allow rules the user saved ("allow always") for exactly this folder."""
    try:
        entry = _read_object(rules_file()).get(normal_folder(folder))
    except TrustFileError as exc:
        _log.warning("saved rules ignored: %s", exc)
        return []
    allow = entry.get("allow") if isinstance(entry, dict) else None
    return [rule for rule in allow if isinstance(rule, str)] if isinstance(allow, list) else []


def save_allow_rule(folder: str, rule: str) -> None:
    """Add an allow rule to the user's own rules for `folder`, keeping everything else."""
    path = rules_file()
    data = _read_object(path)
    key = normal_folder(folder)
    entry = data.get(key)
    if not isinstance(entry, dict):
        entry = data[key] = {}
    allow = entry.get("allow")
    if not isinstance(allow, list):
        allow = entry["allow"] = []
    if rule not in allow:
        allow.append(rule)
    _write_object(path, data)

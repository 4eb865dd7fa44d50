"""Path resolution shared by every file tool (spec 6).

Models write paths the way people paste them: with a CLI-style `@` prefix, a `~`, a `file://`
URL, or the odd no-break space copied from a file manager. All of that is normalised before the
path is resolved against the effective cwd. There is no confinement (spec 6.2): absolute paths
and `..` beyond the cwd are accepted as they are.
"""

from __future__ import annotations

import os
import re
import unicodedata
from urllib.parse import unquote, urlsplit

# Spec 6.1 step 1: the Unicode spaces that look like an ASCII space in a terminal.
_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
# macOS screenshot names put U+202F before AM/PM ("Screenshot 2024-01-01 at 10.00.00 AM.png").
_AM_PM = re.compile(r" (AM|PM)\.", re.IGNORECASE)
_NARROW_NO_BREAK_SPACE = "\u202f"
_WINDOWS_SHELL_DRIVE = re.compile(r"^/(?:mnt/|cygdrive/)?([a-zA-Z])(?:/(.*))?$")


def _windows_shell_path(path: str) -> str:
    """MSYS / WSL / Cygwin drive paths (`/c/x`, `/mnt/c/x`, `/cygdrive/c/x`) -> `C:\\x`."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return path
    match = _WINDOWS_SHELL_DRIVE.match(path)
    if match is None:
        return path
    rest = (match.group(2) or "").replace("/", "\\")
    return f"{match.group(1).upper()}:\\{rest}"


def _file_url_to_path(url: str) -> str:
    parts = urlsplit(url)
    path = unquote(parts.path)
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
        path = path[1:].replace("/", "\\")
    return path


def _expand(path: str, *, normalize_input: bool) -> str:
    if normalize_input:
        path = _UNICODE_SPACES.sub(" ", path)
        if path.startswith("@"):
            path = path[1:]
    if os.name == "nt":
        path = _windows_shell_path(path)
    if path == "~":
        return os.path.expanduser("~")
    if path.startswith("~/") or (os.name == "nt" and path.startswith("~\\")):
        return os.path.join(os.path.expanduser("~"), path[2:])
    if path.startswith("file://"):
        return _file_url_to_path(path)
    return path


def expand_path(path: str) -> str:
    """Spec 6.1 steps 1-5: Unicode spaces, one leading `@`, drive paths, `~`, `file://` URLs."""
    return _expand(path, normalize_input=True)


def _normalize_absolute(path: str) -> str:
    normalized = os.path.normpath(path)
    # POSIX keeps a leading `//` as implementation-defined; Node's path.resolve collapses it.
    if os.name != "nt" and normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    return normalized


def resolve_to_cwd(path: str, cwd: str) -> str:
    """Spec 6.1: the absolute, normalised path that `path` names when relative to `cwd`."""
    expanded = expand_path(path)
    if os.path.isabs(expanded):
        return _normalize_absolute(expanded)
    base = _expand(cwd, normalize_input=False)
    return _normalize_absolute(os.path.join(base, expanded))


def real_path(path: str) -> str:
    """Where an absolute path really is: every symlink resolved, also for a path that does not
    exist yet (its deepest existing parent resolved, the rest appended, as `os.path.realpath`
    does component by component). Approval rules and the workspace boundary look at this too,
    since a write through `src/up -> ..` lands outside `src/`."""
    return os.path.realpath(path)


def _exists(path: str) -> bool:
    # Spec 6.4: "can access" (F_OK) semantics; a dangling symlink does not exist.
    return os.access(path, os.F_OK)


def read_path_variants(resolved: str) -> list[str]:
    """Spec 6.3: the macOS filename spellings tried, in order, when `resolved` does not exist."""
    nfd = unicodedata.normalize("NFD", resolved)
    candidates = [
        _AM_PM.sub(lambda m: f"{_NARROW_NO_BREAK_SPACE}{m.group(1)}.", resolved),
        nfd,
        resolved.replace("'", "\u2019"),
        nfd.replace("'", "\u2019"),
    ]
    return [candidate for candidate in candidates if candidate != resolved]


def resolve_read_path(path: str, cwd: str) -> str:
    """Spec 6.3: like `resolve_to_cwd`, but finds files whose names macOS spells differently.

    When no variant exists either, the plain resolved path is returned so errors name it.
    """
    resolved = resolve_to_cwd(path, cwd)
    if _exists(resolved):
        return resolved
    for candidate in read_path_variants(resolved):
        if _exists(candidate):
            return candidate
    return resolved


__all__ = ["expand_path", "read_path_variants", "real_path", "resolve_read_path", "resolve_to_cwd"]

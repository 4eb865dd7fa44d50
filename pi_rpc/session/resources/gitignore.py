"""Ignore rules in `.gitignore` syntax, as Pi's skill loader applies them (it uses the npm `ignore`
package, which follows git's rules).

What is honoured: blank lines and `#` comments (`\\#` escapes); trailing spaces (unless escaped);
`!` negation (`\\!` escapes), the last matching rule deciding; a trailing `/` for directories
only; a pattern with a `/` at its start or in its middle anchored at the rules' root, any other
matching a name at any depth; `*`, `?` and `[...]` (never matching `/`), `**/`, `/**` and `/**/`.
A path inside an ignored directory is ignored whatever rules follow, as in git (a file cannot be
re-included when its folder is excluded).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import msgspec

from pi_rpc.session.resources.limits import LoadBudget, read_bounded

# Read in every folder Pi's resource discovery searches, their rules relative to the searched root.
IGNORE_FILE_NAMES = (".gitignore", ".ignore", ".fdignore")


class _Rule(msgspec.Struct, frozen=True):
    regex: re.Pattern[str]
    negated: bool
    directory_only: bool


def glob_class(pattern: str, start: int) -> tuple[str, int] | None:
    """The regex of the `[...]` class opening at `start`, and the index after it; None when it is
    not closed (then `[` is a literal). Shared with the settings' globs (path_patterns.py)."""
    index = start + 1
    negated = index < len(pattern) and pattern[index] in "!^"
    index += negated
    body = ""
    first = True
    while index < len(pattern):
        char = pattern[index]
        if char == "]" and not first:
            return ("[^" if negated else "[") + body + "]", index + 1
        if char == "\\" and index + 1 < len(pattern):
            index += 1
            body += re.escape(pattern[index])
        else:
            body += "-" if char == "-" else re.escape(char)
        first = False
        index += 1
    return None


def _translate(pattern: str) -> str:
    """The regex body of a glob (no anchoring)."""
    out = ""
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index) and (index == 0 or pattern[index - 1] == "/"):
            out += "(?:.*/)?"
            index += 3
            continue
        if pattern.startswith("/**", index) and index + 3 == len(pattern):
            out += "/.*"
            break
        if pattern == "**":  # the whole pattern: everything
            out += ".*"
            break
        char = pattern[index]
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "[" and (klass := glob_class(pattern, index)) is not None:
            out += "(?!/)" + klass[0]
            index = klass[1]
            continue
        elif char == "\\" and index + 1 < len(pattern):
            index += 1
            out += re.escape(pattern[index])
        else:
            out += re.escape(char)
        index += 1
    return out


def _strip_trailing_spaces(line: str) -> str:
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + " "  # `\ ` keeps one escaped space
    return stripped


def parse_rule(line: str) -> _Rule | None:
    """One line of an ignore file; None for a blank line or a comment."""
    line = _strip_trailing_spaces(line.rstrip("\r"))
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated or line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    directory_only = line.endswith("/") and not line.endswith("\\/")
    line = line.rstrip("/") if directory_only else line
    if not line:
        return None
    anchored = "/" in line
    body = _translate(line.lstrip("/"))
    regex = re.compile(("^" if anchored else "^(?:.*/)?") + body + "$", re.DOTALL)
    return _Rule(regex=regex, negated=negated, directory_only=directory_only)


class IgnoreRules(msgspec.Struct):
    """Rules added in order; `ignores` takes a `/`-separated path relative to the rules' root,
    ending in `/` for a directory."""

    _rules: list[_Rule] = msgspec.field(default_factory=list)

    def add(self, lines: Iterable[str]) -> None:
        self._rules += [rule for line in lines if (rule := parse_rule(line)) is not None]

    def ignores(self, path: str) -> bool:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            if self._decide("/".join(parts[:depth]), is_dir=True):
                return True
        return self._decide("/".join(parts), is_dir=path.endswith("/"))

    def _decide(self, path: str, is_dir: bool) -> bool:
        ignored = False
        for rule in self._rules:
            if rule.negated != ignored:
                continue  # only a rule that would change the verdict matters
            if (is_dir or not rule.directory_only) and rule.regex.match(path):
                ignored = not rule.negated
        return ignored


def _prefixed(line: str, prefix: str) -> str | None:
    """A line of an ignore file in folder `prefix` as a rule relative to the searched root (Pi's
    `prefixIgnorePattern`); None for a blank line or a comment."""
    trimmed = line.strip()
    if not trimmed or (trimmed.startswith("#") and not trimmed.startswith("\\#")):
        return None
    negated = line.startswith("!")
    pattern = line[1:] if negated or line.startswith("\\!") else line
    pattern = pattern.removeprefix("/")
    return ("!" if negated else "") + prefix + pattern


def add_ignore_files(rules: IgnoreRules, folder: Path, root: Path, budget: LoadBudget | None = None) -> None:
    """The rules of `folder`'s ignore files, made relative to `root`, the folder being searched;
    each read within the resource load's bounds (limits.py)."""
    relative = folder.relative_to(root).as_posix()
    prefix = "" if relative == "." else f"{relative}/"
    for name in IGNORE_FILE_NAMES:
        path = folder / name
        if not path.exists():
            continue
        text = read_bounded(path, budget, "ignore file", strict=True)
        if text is not None:
            rules.add(rule for line in text.splitlines() if (rule := _prefixed(line, prefix)) is not None)

"""Glob patterns as Pi matches its settings' resource filters (`"!old-skill"`, `"skills/*.md"`):
the npm `minimatch` package with its default options.

What is honoured: `*` and `?` (never `/`), `[...]` classes (`[!...]` or `[^...]` negated, ranges),
`\\` escaping the next character, `{a,b}` alternatives (nested too), `**` as a whole segment for
any number of segments, a leading `!` negating the whole pattern and a leading `#` making it a
comment that matches nothing. As in minimatch, no wildcard matches a segment that starts with
`.` unless the pattern's segment starts with a literal `.`, `**` never crosses such a segment, and
a trailing `/**` needs at least one segment after it. Not honoured: extglobs (`+(a|b)`) and
numeric ranges (`{1..3}`), which are taken literally. Pi's `--models` scope uses the same matcher
with `nocase` (session/models/patterns.py).
"""

from __future__ import annotations

import re
from functools import lru_cache

from pi_rpc.session.resources.gitignore import glob_class

_GLOBSTAR = None  # a `**` segment
Segment = re.Pattern[str] | str | None  # a compiled wildcard segment, a literal one, or `**`


def _alternatives(pattern: str) -> list[str]:
    """`a{b,c{d,e}}` -> [ab, acd, ace]; a brace with no top-level comma stays literal."""
    depth, start, escaped = 0, -1, False
    for index, char in enumerate(pattern):
        if escaped or char == "\\":  # a backslash, or the character it escapes
            escaped = not escaped
            continue
        if char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _split_top_level(pattern[start + 1 : index])
                if len(options) < 2:
                    rest = _alternatives(pattern[index + 1 :])
                    return [pattern[: index + 1] + tail for tail in rest]
                tails = _alternatives(pattern[index + 1 :])
                return [
                    head + tail
                    for option in options
                    for head in _alternatives(pattern[:start] + option)
                    for tail in tails
                ]
    if depth:  # an unclosed `{` is literal; braces after it still expand
        return [pattern[: start + 1] + tail for tail in _alternatives(pattern[start + 1 :])]
    return [pattern]


def _split_top_level(body: str) -> list[str]:
    parts, depth, current, escaped = [], 0, "", False
    for char in body:
        if escaped or char == "\\":
            escaped = not escaped
            current += char
        elif char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            depth += (char == "{") - (char == "}")
            current += char
    return [*parts, current]


def _segment(text: str) -> Segment:
    if text == "**":
        return _GLOBSTAR
    regex, magic, index = "", False, 0
    dot_allowed = text.startswith(".")
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            regex += re.escape(text[index + 1])
            index += 2
            continue
        if char == "*":
            while index + 1 < len(text) and text[index + 1] == "*":
                index += 1
            regex += "[^/]*"
            magic = True
        elif char == "?":
            regex += "[^/]"
            magic = True
        elif char == "[" and (found := glob_class(text, index)) is not None:
            # `[.]` is a literal `.` to minimatch: then the segment may match a dot file's name
            dot_allowed = dot_allowed or (index == 0 and found[0] == r"[\.]")
            regex += found[0]
            index = found[1]
            magic = True
            continue
        else:
            regex += re.escape(char)
        index += 1
    if not magic:
        return re.sub(r"\\(.)", r"\1", text)
    if text == "*":
        regex = "[^/]+"  # a lone `*` needs something to match
    if not dot_allowed:
        regex = r"(?!\.)" + regex  # a wildcard never matches a dot file unless the pattern names it
    try:
        return re.compile(regex)
    except re.error:  # a class like `[z-a]`: matches nothing, as in minimatch
        return re.compile("(?!)")


def _collapse(parts: list[str]) -> list[str]:
    """minimatch's default optimisation: `**/**` is `**`, and `x/..` goes (x not `..`, `.`, `**`)."""
    kept: list[str] = []
    for part in parts:
        previous = kept[-1] if kept else None
        if part == "**" and previous == "**":
            continue
        if part == ".." and previous and previous not in ("..", ".", "**"):
            kept.pop()
            continue
        kept.append(part)
    return kept or [""]


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> tuple[bool, list[list[Segment]]]:
    negated = False
    while pattern.startswith("!"):
        negated = not negated
        pattern = pattern[1:]
    return negated, [
        [_segment(part) for part in _collapse(re.sub("/+", "/", alt).split("/"))] for alt in _alternatives(pattern)
    ]


def _matches(path: list[str], pattern: list[Segment]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head is _GLOBSTAR:
        if not rest:  # a trailing `**`: one segment or more, none hidden
            return bool(path) and all(not part.startswith(".") for part in path)
        for skipped in range(len(path) + 1):
            if _matches(path[skipped:], rest):
                return True
            if skipped < len(path) and path[skipped].startswith("."):
                return False
        return False
    if not path:
        return False
    if isinstance(head, str):
        matched = head == path[0]
    else:  # no wildcard matches `.` or `..`, whatever the pattern
        matched = path[0] not in (".", "..") and head.fullmatch(path[0]) is not None
    return matched and _matches(path[1:], rest)


def glob_matches(path: str, pattern: str, *, nocase: bool = False) -> bool:
    """Whether minimatch(path, pattern) is true (POSIX paths, `/`-separated); with `nocase`, as
    minimatch's option of that name (both sides compared case-folded)."""
    if nocase:
        path, pattern = path.lower(), pattern.lower()
    if pattern.startswith("#"):
        return False
    negated, alternatives = _compiled(pattern)
    if pattern.lstrip("!") == "":
        return (path == "") != negated
    parts = path.split("/")
    return any(_matches(parts, alternative) for alternative in alternatives) != negated

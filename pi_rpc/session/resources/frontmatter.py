"""Front matter of Markdown resources (prompt templates, skills): a `---` block of `key: value`
lines before the body, as Pi reads it.

Only flat scalars are read (strings, quoted or not, and booleans), which is all the keys Pi looks
at (`description`, `argument-hint`, `name`, `disable-model-invocation`) ever hold; anything else is
skipped rather than misread.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^([A-Za-z0-9_-]+)\s*:\s*(.*)$")
Scalar = str | bool


def _scalar(raw: str) -> Scalar:
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace('\\"', '"')
    if value in ("true", "false"):
        return value == "true"
    return re.sub(r"\s+#.*$", "", value)  # a YAML comment after a plain value


def parse_frontmatter(text: str) -> tuple[dict[str, Scalar], str]:
    """(keys, body); the body is stripped of surrounding blank space when there was a block."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.startswith("---"):
        return {}, text
    end = text.find("\n---", 3)
    if end == -1:
        return {}, text
    keys: dict[str, Scalar] = {}
    for line in text[4:end].split("\n"):
        match = _LINE.match(line)
        if match and match.group(2).strip():
            keys[match.group(1)] = _scalar(match.group(2))
    return keys, text[end + 4 :].strip()


def text_value(keys: dict[str, Scalar], name: str) -> str:
    value = keys.get(name)
    return value if isinstance(value, str) else ""

"""What the Pi-parity test compares beyond the event sequence: the keys each kind of line carries,
and which row of the 0.73.1 → 1.6.0 change list a key or an event belongs to (tests/e2e/pi16_differences.py).

A line's shape is the set of its dotted key paths (`message.usage.cost.total`), through nested
objects but not into lists or free-form payloads (tool arguments and details, whose keys are
the tool's own). Lines are grouped by kind (`normalise`'s type, command, role and event, and
whether a compaction failed) and their shapes joined, so each kind's keys are compared once per
scenario."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from .pi_parity import Json, normalise

PAYLOADS = frozenset({"arguments", "details", "args", "partialResult"})


def shape(line: Json, prefix: str = "") -> set[str]:
    paths = set()
    for key, value in line.items():
        path = prefix + key
        paths.add(path)
        if isinstance(value, dict) and key not in PAYLOADS:
            paths |= shape(value, path + ".")
    return paths


def kind(line: Json) -> str:
    kept = {key: value for key, value in normalise(line).items() if key in ("type", "command", "role", "event")}
    if line.get("type") == "compaction_end":
        kept["failed"] = "errorMessage" in line
    return json.dumps(kept, sort_keys=True)


def shapes(lines: list[Json]) -> dict[str, set[str]]:
    joined: dict[str, set[str]] = {}
    for line in lines:
        joined.setdefault(kind(line), set()).update(shape(line))
    return joined


@dataclass(frozen=True)
class KeyRow:
    """The keys of a row: a path equal to or under `path`, in lines whose type is in `types`
    (any type when empty)."""

    row: str
    path: str
    types: frozenset[str] = frozenset()

    def owns(self, line_kind: str, path: str) -> bool:
        typed = not self.types or json.loads(line_kind)["type"] in self.types
        return typed and (path == self.path or path.startswith(self.path + "."))


MESSAGES = frozenset({"message_start", "message_end", "turn_end"})
# The rows whose keys pi-rpc lacks or names differently today (the first that owns a path wins).
KEY_ROWS = (
    KeyRow("P2", "usage", frozenset({"message_update"})),
    KeyRow("P3", "assistantMessageEvent.toolName"),
    KeyRow("P3", "assistantMessageEvent.name"),
    KeyRow("P3", "assistantMessageEvent.arguments"),
    KeyRow("P4", "aborted", frozenset({"agent_settled"})),
    KeyRow("P13", "result.estimatedTokensAfter"),
    KeyRow("P13", "result.usage"),
    KeyRow("P13", "data.estimatedTokensAfter"),  # the compact response's data is the result
    KeyRow("P13", "data.usage"),
    KeyRow("P6", "data", frozenset({"response"})),
    KeyRow("P17", "message.sections"),
    KeyRow("P18", "message.rawStopReason"),
    KeyRow("P19", "message.durationMs", MESSAGES),
    KeyRow("P19", "message.thinkingLevel", MESSAGES),
    KeyRow("P19", "message.responseId", MESSAGES),
    KeyRow("P19", "message.usage.reasoning", MESSAGES),
    KeyRow("P19", "message.usage.cost.totalFromProvider", MESSAGES),
    KeyRow("P21", "result.structuredContent", frozenset({"tool_execution_end"})),
)


def row_of(line_kind: str, path: str) -> str | None:
    return next((key.row for key in KEY_ROWS if key.owns(line_kind, path)), None)


# The events of a row, which the sequence comparison sets aside to see whether that row differs.
SEQUENCE_ROWS: dict[str, Callable[[Json], bool]] = {
    "P15": lambda line: line["type"] == "entry_appended",
    "P17": lambda line: line.get("role") == "system",
}

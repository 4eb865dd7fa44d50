"""Pi mode's `get_entries` and `get_tree` (newer Pi's commands; Pi's npm release 0.73.1 has
neither): the session's entries as its file holds them, every branch included.

`get_entries {since?}` lists every entry in the order written (not only the current branch: an
abandoned branch and what a compaction summarised are there too), strictly after `since` when
given, with the leaf's id, so a client that remembers the last id it saw gets what it missed.
`get_tree` nests the same entries under their parents, children oldest first, an entry whose parent
is missing being a root, and names each entry's label (Pi's `label` entries). The tree is encoded
here, one node at a time: a long session is a chain deeper than a recursive encoder may go.
"""

from __future__ import annotations

import datetime
from typing import Any

import msgspec

from pi_rpc.ai import encode_json
from pi_rpc.session import SYSTEM_ENTRY_TYPE, Entry, SessionEntries, UnknownSessionOrEntry


class UnknownEntryError(UnknownSessionOrEntry, LookupError):
    """`get_entries` with a `since` that names no entry of the session."""


def _whole(entries: SessionEntries, entry: Entry) -> Entry:
    """The entry with its message in it: this session's messages are kept as objects, not in the
    entry's JSON."""
    message = entries.message_kept(entry)
    if message is None:
        return entry
    key = "data" if entry.get("customType") == SYSTEM_ENTRY_TYPE else "message"
    return {**entry, key: message}


def entries_after(entries: SessionEntries, since: str | None) -> dict[str, Any]:
    """`get_entries` data: `{entries, leafId}`."""
    ordered = list(entries.entries.values())
    if since is not None:
        position = next((i for i, entry in enumerate(ordered) if entry["id"] == since), None)
        if position is None:
            raise UnknownEntryError(f"Entry not found: {since}")
        ordered = ordered[position + 1 :]
    return {"entries": [_whole(entries, entry) for entry in ordered], "leafId": entries.leaf}


def _labels(ordered: list[Entry]) -> dict[str, tuple[str, Any]]:
    """Each labelled entry's label and its time: the latest `label` entry naming it wins, and an
    empty one takes the label away."""
    labels: dict[str, tuple[str, Any]] = {}
    for entry in ordered:
        target = entry.get("targetId")
        if entry.get("type") != "label" or not isinstance(target, str):
            continue
        label = entry.get("label")
        if isinstance(label, str) and label:
            labels[target] = (label, entry.get("timestamp"))
        else:
            labels.pop(target, None)
    return labels


def _time(entry: Entry) -> float:
    try:
        stamp = str(entry.get("timestamp", "")).replace("Z", "+00:00")
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


def tree(entries: SessionEntries) -> msgspec.Raw:
    """`get_tree` data, `{tree: [{entry, children, label?, labelTimestamp?}], leafId}`, as JSON."""
    ordered = list(entries.entries.values())
    children: dict[str, list[Entry]] = {}
    roots: list[Entry] = []
    for entry in ordered:
        parent = entry.get("parentId")
        if parent is None or parent == entry["id"] or parent not in entries.entries:
            roots.append(entry)
        else:
            children.setdefault(parent, []).append(entry)
    for siblings in children.values():
        siblings.sort(key=_time)  # stable: entries written at the same moment keep their order
    labels = _labels(ordered)
    out = bytearray(b'{"tree":[')
    # A stack of what is left to write: an entry to open, or the bytes that close a node.
    stack: list[Entry | bytes] = [*reversed(_separated(roots))]
    while stack:
        item = stack.pop()
        if isinstance(item, bytes):
            out += item
            continue
        out += b'{"entry":' + encode_json(_whole(entries, item))
        if item["id"] in labels:
            label, stamp = labels[item["id"]]
            out += b',"label":' + encode_json(label) + b',"labelTimestamp":' + encode_json(stamp)
        out += b',"children":['
        stack.append(b"]}")
        stack.extend(reversed(_separated(children.get(item["id"], []))))
    out += b'],"leafId":' + encode_json(entries.leaf) + b"}"
    return msgspec.Raw(bytes(out))


def _separated(nodes: list[Entry]) -> list[Entry | bytes]:
    """`nodes` with a comma between each two, in the order they are written."""
    items: list[Entry | bytes] = []
    for index, node in enumerate(nodes):
        if index:
            items.append(b",")
        items.append(node)
    return items

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

import msgspec

from pi_rpc.ai import Wire, encode_json
from pi_rpc.session import Entry, LabelEntry, SessionEntries, UnknownSessionOrEntry


class UnknownEntryError(UnknownSessionOrEntry, LookupError):
    """`get_entries` with a `since` that names no entry of the session."""


class EntriesPage(Wire, kw_only=True):
    """`get_entries` data: each entry as its file's line has it (or as it was made here)."""

    entries: list[msgspec.Raw]
    leaf_id: str | None


def entries_after(entries: SessionEntries, since: str | None) -> EntriesPage:
    """`get_entries` data: `{entries, leafId}`."""
    ordered = list(entries.entries.values())
    if since is not None:
        position = next((i for i, entry in enumerate(ordered) if entry.id == since), None)
        if position is None:
            raise UnknownEntryError(f"Entry not found: {since}")
        ordered = ordered[position + 1 :]
    return EntriesPage(entries=[msgspec.Raw(entries.json_of(entry)) for entry in ordered], leaf_id=entries.leaf)


def _labels(ordered: list[Entry]) -> dict[str, tuple[str, str]]:
    """Each labelled entry's label and its time: the latest `label` entry naming it wins, and an
    empty one takes the label away."""
    labels: dict[str, tuple[str, str]] = {}
    for entry in ordered:
        if not isinstance(entry, LabelEntry):
            continue
        if isinstance(entry.label, str) and entry.label:
            labels[entry.target_id] = (entry.label, entry.timestamp)
        else:
            labels.pop(entry.target_id, None)
    return labels


def _time(entry: Entry) -> float:
    try:
        stamp = entry.timestamp.replace("Z", "+00:00")
        return datetime.datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


def tree(entries: SessionEntries) -> msgspec.Raw:
    """`get_tree` data, `{tree: [{entry, children, label?, labelTimestamp?}], leafId}`, as JSON."""
    ordered = list(entries.entries.values())
    children: dict[str, list[Entry]] = {}
    roots: list[Entry] = []
    for entry in ordered:
        parent = entry.parent_id
        if parent is None or parent == entry.id or parent not in entries.entries:
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
        out += b'{"entry":' + entries.json_of(item)
        if item.id in labels:
            label, stamp = labels[item.id]
            out += b',"label":' + encode_json(label) + b',"labelTimestamp":' + encode_json(stamp)
        out += b',"children":['
        stack.append(b"]}")
        stack.extend(reversed(_separated(children.get(item.id, []))))
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

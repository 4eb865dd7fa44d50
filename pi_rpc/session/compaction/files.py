"""The files a compaction's summarised turns read and changed, as Pi records them: the compaction
entry's `details` are `{readFiles, modifiedFiles}`, and the summary ends with the two lists, so
the model still knows which files the forgotten turns touched.

The lists come from the summarised assistant messages' `read`, `edit` and `write` calls (their
`path` argument, as the model wrote it) and from the previous compaction's details, so they
accumulate over compactions. A file both read and changed counts as changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from pi_rpc.ai import AssistantMessage, Message, ToolCall, Wire

_READS = frozenset({"read"})
_CHANGES = frozenset({"edit", "write"})


class CompactionDetails(Wire, kw_only=True):
    """A compaction entry's `details`, as Pi writes them (both lists always present)."""

    read_files: list[str]
    modified_files: list[str]


class FileLists(msgspec.Struct):
    read: set[str] = msgspec.field(default_factory=set)
    modified: set[str] = msgspec.field(default_factory=set)

    def add_calls(self, messages: Iterable[Message]) -> None:
        """The paths of the file calls in `messages`' assistant turns."""
        for message in messages:
            if not isinstance(message, AssistantMessage):
                continue
            for call in (block for block in message.content if isinstance(block, ToolCall)):
                path = call.arguments.get("path")
                if not isinstance(path, str) or not path:
                    continue
                if call.name in _READS:
                    self.read.add(path)
                elif call.name in _CHANGES:
                    self.modified.add(path)

    def add_details(self, details: Mapping[str, Any] | None) -> None:
        """A previous compaction's lists (a Pi extension's entry may carry other details: skipped)."""
        if not details:
            return
        for key, into in (("readFiles", self.read), ("modifiedFiles", self.modified)):
            listed = details.get(key)
            if isinstance(listed, list):
                into.update(path for path in listed if isinstance(path, str))

    def details(self) -> CompactionDetails:
        """The compaction entry's `details`: each list sorted, a changed file only under modified."""
        return CompactionDetails(read_files=sorted(self.read - self.modified), modified_files=sorted(self.modified))


def files_section(details: CompactionDetails) -> str:
    """What the summary ends with: Pi's `<read-files>` and `<modified-files>` blocks, one path a
    line, after a blank line; nothing when no file was touched."""
    sections = [
        f"<{tag}>\n" + "\n".join(paths) + f"\n</{tag}>"
        for paths, tag in ((details.read_files, "read-files"), (details.modified_files, "modified-files"))
        if paths
    ]
    return "\n\n" + "\n\n".join(sections) if sections else ""

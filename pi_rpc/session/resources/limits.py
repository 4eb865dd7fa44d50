"""The bounds of one resource load (context files, skills, prompt templates, SYSTEM.md), and the one
way those files are read.

A repository decides what its folders hold, so whatever they hold, a load stays small: at most
`MAX_ENTRIES_PER_SOURCE` folder entries are looked at per source (one folder searched, one settings
entry, one command-line path), a file is read up to `MAX_FILE_BYTES`, and the whole load stops after
`DEADLINE_S` of its own work (or `WALL_DEADLINE_S` waiting for files). What a bound cuts is said
in a warning. The load runs when a session is made, before the daemon answers its first request,
so these bounds are what keep `initialize`, ACP's `session/new` and Pi mode's first command quick
(docs/SECURITY.md, "Context files and resources").

A file found in a folder must also resolve inside that folder's tree (`resolves_inside`): a
symlink that points out is skipped, so a repository cannot make pi-rpc send another file of the
user's to the provider.
"""

from __future__ import annotations

import codecs
import logging
import os
import stat
import time
from pathlib import Path

import msgspec

_log = logging.getLogger(__name__)

# Pi users keep tens of skills; a thousand entries is far past any real folder and a few ms to scan.
MAX_ENTRIES_PER_SOURCE = 1000
# A context file or template past this is no instruction a model can use; the rest is cut.
MAX_FILE_BYTES = 256 * 1024
# The whole load, safety net of the two above: a session is made before the first answer. The
# daemon's own work is counted (its CPU time), not the clock: a machine whose cores are busy with
# other work would otherwise cut a normal workspace's resources at random. What does not use the
# CPU (a slow or hung file system) is bounded by the clock, at `WALL_DEADLINE_S`.
DEADLINE_S = 0.3
WALL_DEADLINE_S = 3.0


class LoadBudget(msgspec.Struct):
    """One load's clock and the warnings of everything it left out."""

    deadline: float  # process CPU time (`time.process_time`)
    max_entries: int
    max_file_bytes: int
    warnings: list[str] = msgspec.field(default_factory=list)
    wall_deadline: float = float("inf")  # `time.monotonic`
    _expired: bool = False

    @classmethod
    def start(cls) -> LoadBudget:
        return cls(
            time.process_time() + DEADLINE_S,
            MAX_ENTRIES_PER_SOURCE,
            MAX_FILE_BYTES,
            wall_deadline=time.monotonic() + WALL_DEADLINE_S,
        )

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        _log.warning("%s", message)

    def expired(self) -> bool:
        """Past the deadline (said once): everything still to be found or read is left out."""
        if self._expired:
            return True
        if time.process_time() >= self.deadline:
            self._expired = True
            self.warn(f"resources: loading stopped after {DEADLINE_S} s of work; the rest is not loaded")
        elif time.monotonic() >= self.wall_deadline:
            self._expired = True
            self.warn(f"resources: loading stopped after {WALL_DEADLINE_S} s waiting for files; the rest is not loaded")
        return self._expired

    def source(self, where: Path | str) -> SourceBudget:
        return SourceBudget(self, str(where))


class SourceBudget(msgspec.Struct):
    """The entries one source may still look at."""

    load: LoadBudget
    where: str
    seen: int = 0
    cut: bool = False

    def take(self) -> bool:
        """Whether one more folder entry may be looked at."""
        if self.cut:
            return False
        if self.load.expired():
            self.cut = True
            return False
        if self.seen >= self.load.max_entries:
            self.cut = True
            self.load.warn(
                f"resources: stopped after {self.seen} entries of {self.where} (the limit per source);"
                " the rest is not loaded"
            )
            return False
        self.seen += 1
        return True


def resolves_inside(path: Path, tree: Path) -> bool:
    """Whether `path`, symlinks resolved, is `tree` or lies below it (`tree` resolved too)."""
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(tree))


def read_bounded(path: Path, budget: LoadBudget | None, what: str, strict: bool = False) -> str | None:
    """A regular file's text, cut at the byte limit (with a warning); None when it is not a
    regular file or cannot be read (`strict`: or is not UTF-8), or the load is past its deadline.
    Opened without blocking, so a named pipe in a repository cannot stall the load."""
    if budget is not None and budget.expired():
        return None
    limit = budget.max_file_bytes if budget is not None else MAX_FILE_BYTES
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        _log.warning("cannot read %s %s: %s", what, path, exc)
        return None
    with os.fdopen(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            return None
        try:
            data = source.read(limit + 1)
        except OSError as exc:
            _log.warning("cannot read %s %s: %s", what, path, exc)
            return None
    cut = len(data) > limit
    if cut:
        message = f"resources: {what} {path} is read up to its first {limit} bytes; the rest is left out"
        if budget is not None:
            budget.warn(message)
        else:
            _log.warning("%s", message)
        data = data[:limit]
    try:  # after a cut, a character the cut split is dropped, not an error
        return codecs.getincrementaldecoder("utf-8")("strict" if strict else "replace").decode(data, final=not cut)
    except UnicodeDecodeError as exc:
        _log.warning("cannot read %s %s: %s", what, path, exc)
        return None

"""Where the temporary files of unfinished atomic writes are, so that a killed daemon's are removed.

`write_file_atomic` (tools/fs.py) writes into a temporary file beside its target, in the user's
workspace. A daemon killed before the rename would leave that file (as big as the file being
written) behind for good. So each temporary file's path is appended to this process's journal,
`{user data dir}/pi-rpc/pending-writes/{pid}`, before the file is created, and the journal is
removed whenever no write is in flight. At start-up, `sweep_stale_temp_files` deletes the files
listed by the journals of processes that no longer run, and those journals.

Only files named as ours (`.{name}.pi-rpc.{hex}.tmp`) are ever deleted, so a journal cannot
point the sweep at anything else. A journal whose pid now belongs to another live process waits
for a later sweep.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
from pathlib import Path

import platformdirs

_log = logging.getLogger(__name__)

TEMP_MARK = "pi-rpc"
_OUR_TEMP_NAME = re.compile(rf"\..+\.{TEMP_MARK}\.[0-9a-f]{{12}}\.tmp")


def temp_name(name: str, token: str) -> str:
    return f".{name}.{TEMP_MARK}.{token}.tmp"


def is_our_temp_name(basename: str) -> bool:
    return _OUR_TEMP_NAME.fullmatch(basename) is not None


def journal_folder() -> Path:
    return Path(platformdirs.user_data_dir("pi-rpc")) / "pending-writes"


class PendingWrites:
    """This process's journal of in-flight temporary files."""

    def __init__(self, folder: Path | None = None, pid: int | None = None) -> None:
        self._folder = folder
        self.pid = os.getpid() if pid is None else pid
        self._in_flight = 0
        self._broken = False

    @property
    def folder(self) -> Path:
        return self._folder or journal_folder()

    @property
    def path(self) -> Path:
        return self.folder / str(self.pid)

    def begin(self, temp_path: str) -> None:
        """Note `temp_path` before the file is created; pair with `end`."""
        self._in_flight += 1
        if self._broken:
            return
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, os.fsencode(os.path.abspath(temp_path)) + b"\n")
            finally:
                os.close(fd)
        except OSError as exc:
            # The write itself must not fail for this; only the cleanup after a crash is lost.
            _log.warning("cannot record pending writes in %s: %s", self.path, exc)
            self._broken = True

    def end(self) -> None:
        self._in_flight = max(0, self._in_flight - 1)
        if self._in_flight == 0 and not self._broken:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def sweep_stale(self) -> int:
        """Delete the temporary files of dead processes' journals; returns how many."""
        removed = 0
        try:
            journals = [p for p in self.folder.iterdir() if p.name.isdigit()]
        except OSError:
            return 0
        for journal in journals:
            pid = int(journal.name)
            # Our own pid's journal is a dead predecessor's while we have recorded nothing.
            if _alive(pid) and not (pid == self.pid and self._in_flight == 0):
                continue
            try:
                listed = journal.read_bytes().splitlines()
            except OSError:
                continue
            removed += sum(_remove_our_temp(os.fsdecode(line)) for line in listed if line)
            with contextlib.suppress(OSError):
                journal.unlink()
        if removed:
            _log.warning("removed %d temporary file(s) left by an interrupted write", removed)
        return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_our_temp(path: str) -> bool:
    if not is_our_temp_name(os.path.basename(path)):
        return False
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        os.unlink(path)
    except OSError:
        return False
    return True


# Process state on purpose: the journal is this OS process's, named by its pid (a sweep tells a
# dead daemon's by that pid), and every session's atomic writes go in it.
PENDING_WRITES = PendingWrites()


def sweep_stale_temp_files() -> int:
    """Start-up: remove what killed daemons' atomic writes left in workspaces."""
    return PENDING_WRITES.sweep_stale()

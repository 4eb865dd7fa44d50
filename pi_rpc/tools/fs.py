"""Local file primitives for the file tools: atomic writes and Node-style error messages.

`write_file_atomic` improves on Pi's plain overwrite (spec 12.3): the bytes go to a temporary file
in the same folder (`.{name}.pi-rpc.{hex}.tmp`), are fsynced, and only then renamed over the
target with `os.replace`. Readers see the old file or the new one, never a half-written one, and
an abort or a crash mid-write leaves the old content in place. An abort removes the temporary
file at once; after a crash (a killed daemon) it stays until the next daemon starts, which
removes it (tools/pending_writes.py).

Error texts imitate Node's (`ENOENT: no such file or directory, access '/x'`) because the model
reads them and Pi's spec pins some of them (8.4).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat

import anyio
import anyio.lowlevel

from pi_rpc.tools.pending_writes import PENDING_WRITES, temp_name

# libuv's wording for the errors file tools meet most; others fall back to the OS text.
_UV_MESSAGES = {
    errno.ENOENT: "no such file or directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "illegal operation on a directory",
    errno.ENOTDIR: "not a directory",
    errno.ELOOP: "too many symbolic links encountered",
    errno.ENAMETOOLONG: "name too long",
    errno.EEXIST: "file already exists",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.EMFILE: "too many open files",
    errno.EBUSY: "resource busy or locked",
}


def error_code(exc: BaseException) -> str | None:
    """The symbolic code of an OS error (`ENOENT`), or a `code` attribute some backends set."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return errno.errorcode.get(exc.errno)
    code = getattr(exc, "code", None)
    return code if isinstance(code, str) and code else None


def node_error_message(exc: OSError, syscall: str, path: str | None = None) -> str:
    """`{CODE}: {message}, {syscall} '{path}'`, as Node's fs module words errors."""
    code = error_code(exc)
    if code is None:
        return str(exc)
    text = _UV_MESSAGES.get(exc.errno or 0)
    if text is None:
        reason = exc.strerror or code
        text = reason[:1].lower() + reason[1:]
    # Node names no path for errors on an already-open descriptor (reading a directory).
    where = f" '{path}'" if path is not None and syscall != "read" else ""
    return f"{code}: {text}, {syscall}{where}"


def _read_umask() -> int:
    # Python 3.11 has no os.get_umask; setting and restoring it at import time is the portable way.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def _target_of(path: str) -> str:
    # Replace the file a symlink points at, never the link itself.
    return os.path.realpath(path) if os.path.islink(path) else path


def _existing(target: str) -> os.stat_result | None:
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        return None
    # A rename only needs a writable folder; refuse like an in-place write would on a read-only file.
    if not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), target)
    return existing


def _keep_owner(fd: int, existing: os.stat_result) -> None:
    # The replacement is a new inode owned by us; give it back to the old owner when allowed (root).
    if (existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(OSError):
            os.fchown(fd, existing.st_uid, existing.st_gid)


def _fill(fd: int, data: bytes, mode: int) -> None:
    """Write all of `data` to the temporary file, give it the final mode, and make it durable."""
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: str) -> None:
    # Makes the rename itself durable; some file systems refuse, and that is not a failed write.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _create_temp(folder: str, name: str) -> tuple[int, str]:
    """A new temporary file beside the target, recorded as pending before it exists."""
    while True:
        temp = os.path.join(folder, temp_name(name, secrets.token_hex(6)))
        PENDING_WRITES.begin(temp)
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), temp
        except FileExistsError:
            PENDING_WRITES.end()
        except BaseException:
            PENDING_WRITES.end()
            raise


async def write_file_atomic(path: str, data: bytes) -> None:
    """Replace `path` with `data` atomically, keeping the old file's mode and, where allowed, owner.

    The parent folder must exist. If `path` is a symlink, the file it points to is replaced and the
    link is kept. Cancellation while the data is being written discards the temporary file and
    leaves the old content untouched.
    """
    target = _target_of(path)
    folder, name = os.path.split(target)
    existing = _existing(target)
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o666 & ~_UMASK
    fd, temp = _create_temp(folder or ".", name)
    try:
        if existing is not None:
            _keep_owner(fd, existing)  # before _fill's chmod: chown clears set-id bits
        await anyio.to_thread.run_sync(_fill, fd, data, mode)
        # An abort that arrived during the write lands here, before the rename.
        await anyio.lowlevel.checkpoint_if_cancelled()
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    finally:
        PENDING_WRITES.end()
    await anyio.to_thread.run_sync(_fsync_dir, folder or ".")


__all__ = ["error_code", "node_error_message", "write_file_atomic"]

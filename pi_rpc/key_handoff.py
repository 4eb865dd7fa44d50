"""Provider keys out of what `/proc` shows: the daemon re-executes itself without them.

Any process of the same user can read `/proc/<pid>/environ` (the environment block the process
was exec'd with; changing `os.environ` later does not change it) and anyone can read
`/proc/<pid>/cmdline` (its argv). So a tool's command could print the daemon's keys with
`cat /proc/$PPID/environ`, and `ps` shows `--api-key VALUE` to every user. When there is a key to
hide (a provider key variable is set, or `--api-key` is on the command line), `hide_keys_from_proc`
writes the values to a pipe, and re-executes the same interpreter with the same arguments minus
`--api-key VALUE` and an environment minus the key variables, plus `PI_RPC_KEY_HANDOFF_FD` naming
the pipe's inherited read end. The new image (same pid, same stdio) reads the pipe, closes it and
puts the values back into `os.environ` and `sys.argv`: in its memory only, where `/proc` does not
look. Its children do not inherit them from there: the tool supervisor, its keepers and ripgrep
start with `tool_env.helper_process_env()`, and tool commands with the session's scrubbed
environment.

Nothing is done when there is nothing to hide (the scripted and test paths pay one set lookup),
nor when `main` is called in-process with its own argv (that argv is not the process's). POSIX
only: Windows has no exec that keeps the process (and no /proc). macOS has no /proc, but `ps -E`
shows a same-user process's environment, so the re-exec helps there as well.

The standard library only: this runs before the daemon does anything else.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Collection, Sequence

HANDOFF_FD_VARIABLE = "PI_RPC_KEY_HANDOFF_FD"
API_KEY_FLAG = "--api-key"
API_KEY_ENV_FLAG = "--api-key-env"

# Process state on purpose: which variables this image got back from the hand-off (the helper
# processes it starts leave them out, tool_env.helper_process_env). One set for the process's life.
_restored: set[str] = set()


def key_from_file(path: str) -> str:
    """`--api-key-file PATH`: the key on the file's first line (surrounding blanks dropped)."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as file:
            key = file.readline().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not key:
        raise argparse.ArgumentTypeError(f"{path} holds no key")
    return key


def restored_variable_names() -> frozenset[str]:
    """The key variables this process received through the hand-off (empty if it did not re-exec)."""
    return frozenset(_restored)


def hide_keys_from_proc(argv: Sequence[str] | None, key_variables: Callable[[], Collection[str]]) -> None:
    """Re-execute without the keys if there are any to hide, or take them back after doing so.

    `argv` is what `main` was given: None means the process's own command line. `key_variables`
    names every variable that holds a provider key (the known providers' and models.json's); the
    variable `--api-key-env` names is hidden too.
    """
    if argv is not None:
        return
    if HANDOFF_FD_VARIABLE in os.environ:
        _take_back(os.environ.pop(HANDOFF_FD_VARIABLE))
        return
    if os.name != "posix":
        return
    args = sys.argv[1:]
    api_key, api_key_at, rest = _without_api_key(args)
    named = _flag_value(rest, API_KEY_ENV_FLAG)
    present = {name: value for name in (named,) if name and (value := os.environ.get(name))}
    present |= {name: os.environ[name] for name in key_variables() if os.environ.get(name)}
    if api_key is None and not present:
        return
    _reexec(rest, present, api_key, api_key_at)


def _without_api_key(args: list[str]) -> tuple[str | None, int, list[str]]:
    """(the `--api-key` value, where it stood, the arguments without it); the last one wins, as
    argparse reads it. Nothing after `--` is an option."""
    key: str | None = None
    at = 0
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest += args[index:]
            break
        if arg == API_KEY_FLAG and index + 1 < len(args):
            key, at = args[index + 1], len(rest)
            index += 2
            continue
        if arg.startswith(API_KEY_FLAG + "="):
            key, at = arg.partition("=")[2], len(rest)
        else:
            rest.append(arg)
        index += 1
    return key, at, rest


def _flag_value(args: list[str], flag: str) -> str | None:
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == flag and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(flag + "="):
            return arg.partition("=")[2]
    return None


def _reexec(rest: list[str], present: dict[str, str], api_key: str | None, api_key_at: int) -> None:
    """Exec the same interpreter and arguments without the keys; returns only if that cannot be
    done safely (an unknown launch, a full pipe, a failed exec), and the keys then stay visible."""
    orig = sys.orig_argv
    tail = len(sys.argv) - 1
    if orig[len(orig) - tail :] != sys.argv[1:] or not sys.executable:
        return  # the interpreter's own options cannot be told from ours
    prefix = orig[: len(orig) - tail]
    payload = json.dumps({"env": present, "apiKey": api_key, "apiKeyAt": api_key_at}).encode()
    read_end, write_end = os.pipe()
    try:
        # Written whole before the exec, so nobody needs to read concurrently: a pipe holds 64 KiB
        # on Linux (16 KiB at least on macOS), keys are far smaller; more would block, so give up.
        os.set_blocking(write_end, False)
        written = os.write(write_end, payload)
    except OSError:
        written = -1
    finally:
        os.close(write_end)
    if written != len(payload):
        os.close(read_end)
        return
    os.set_inheritable(read_end, True)
    env = {name: value for name, value in os.environ.items() if name not in present}
    env[HANDOFF_FD_VARIABLE] = str(read_end)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        os.execve(sys.executable, [*prefix, *rest], env)
    except OSError:
        os.close(read_end)


def _take_back(fd_text: str) -> None:
    """In the re-executed image: the keys back into os.environ and sys.argv (memory only)."""
    try:
        fd = int(fd_text)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        os.close(fd)
        payload = json.loads(b"".join(chunks))
    except (ValueError, OSError):
        return  # no hand-off after all (the variable was set by hand): nothing to take back
    if not isinstance(payload, dict):
        return
    env = payload.get("env")
    if isinstance(env, dict):
        for name, value in env.items():
            if isinstance(name, str) and isinstance(value, str):
                os.environ[name] = value
                _restored.add(name)
    api_key = payload.get("apiKey")
    at = payload.get("apiKeyAt")
    if isinstance(api_key, str) and isinstance(at, int):
        sys.argv[1 + at : 1 + at] = [API_KEY_FLAG, api_key]

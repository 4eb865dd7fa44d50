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

Nothing is done when there is nothing to hide (the scripted and test paths pay a few lookups),
nor when `main` is called in-process with its own argv (that argv is not the process's). POSIX
only: Windows has no exec that keeps the process (and no /proc). macOS has no /proc, but `ps -E`
shows a same-user process's environment, so the re-exec helps there as well.

The standard library only: this runs before the daemon does anything else.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Callable, Collection, Sequence

HANDOFF_FD_VARIABLE = "PI_RPC_KEY_HANDOFF_FD"
API_KEY_FLAG = "--api-key"
API_KEY_ENV_FLAG = "--api-key-env"

# Every variable in which a provider Pi knows looks for its key (ours too: ai/apis.py
# `key_variables`, kept a subset of this by a test). Here, not in tool_env.py, because the early call
# (`__main__.py`) runs before any of the daemon is imported; models.json's variables are added by
# the call at the top of `cli.main`.
KNOWN_PROVIDER_KEY_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_OAUTH_TOKEN",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "CEREBRAS_API_KEY",
    "XAI_API_KEY",
    "OPENROUTER_API_KEY",
    "AI_GATEWAY_API_KEY",
    "ZAI_API_KEY",
    "MISTRAL_API_KEY",
    "MINIMAX_API_KEY",
    "MINIMAX_CN_API_KEY",
    "DEEPSEEK_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "PERPLEXITY_API_KEY",
    "OPENCODE_API_KEY",
    "KIMI_API_KEY",
)


# Process state on purpose: what this image got back from the hand-off, for the process's life.
# The helper processes it starts leave these variables out (tool_env.helper_process_env), and a
# later call hides them again with anything new rather than re-executing for them.
class _Restored:
    names: set[str] = set()
    api_key = False
    # The interpreter and its options (sys.orig_argv minus our arguments), read before the
    # take-back puts `--api-key` back into sys.argv; None: not read yet, []: cannot be told apart.
    interpreter: list[str] | None = None


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
    return frozenset(_Restored.names)


def hide_keys_from_proc(
    argv: Sequence[str] | None, key_variables: Callable[[], Collection[str]] = lambda: KNOWN_PROVIDER_KEY_VARS
) -> None:
    """Re-execute without the keys if there are any to hide, or take them back after doing so.

    `argv` is what `main` was given: None means the process's own command line. `key_variables`
    names every variable that holds a provider key (by default the known providers'; `cli.main`
    adds models.json's); the variable `--api-key-env` names is hidden too. Called twice, early
    (`__main__.py`, before the daemon's imports, so a re-exec costs one interpreter start) and at
    the top of `cli.main` (which also sees models.json's variables, and any launch that calls
    `cli.main` directly): the second re-executes only for what the first did not hide.
    """
    if argv is not None:
        return
    if _Restored.interpreter is None:
        _Restored.interpreter = _interpreter_command()
    if HANDOFF_FD_VARIABLE in os.environ:
        _take_back(os.environ.pop(HANDOFF_FD_VARIABLE))
    if os.name != "posix":
        return
    api_key, api_key_at, rest = _without_api_key(sys.argv[1:])
    named = _flag_value(rest, API_KEY_ENV_FLAG)
    names = {*key_variables(), *([named] if named else [])}
    unseen = [name for name in names if name not in _Restored.names and os.environ.get(name)]
    if not unseen and (api_key is None or _Restored.api_key):
        return
    hidden = {name: os.environ[name] for name in [*_Restored.names, *unseen] if name in os.environ}
    _reexec(rest, hidden, api_key, api_key_at)


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


def _interpreter_command() -> list[str]:
    """How this interpreter was started, without the program's arguments (`python -P -m pi_rpc`,
    `python /path/pi-rpc`); empty when they cannot be told from ours."""
    orig = sys.orig_argv
    tail = len(sys.argv) - 1
    if orig[len(orig) - tail :] != sys.argv[1:]:
        return []
    return orig[: len(orig) - tail]


def _reexec(rest: list[str], present: dict[str, str], api_key: str | None, api_key_at: int) -> None:
    """Exec the same interpreter and arguments without the keys; returns only if that cannot be
    done safely (an unknown launch, a full pipe, a failed exec), and the keys then stay visible."""
    prefix = _Restored.interpreter
    if not prefix or not sys.executable:
        return
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
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        # argv[0] as the path itself: a bare `python` would be looked up on PATH again.
        os.execve(sys.executable, [sys.executable, *prefix[1:], *rest], env)
    except (OSError, ValueError):
        os.close(read_end)


def _take_back(fd_text: str) -> None:
    """In the re-executed image: the keys back into os.environ and sys.argv (memory only)."""
    try:
        fd = int(fd_text)
        # Only a pipe of ours: a variable set by hand must not make us read the protocol's stdin.
        if fd <= 2 or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
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
                _Restored.names.add(name)
    api_key = payload.get("apiKey")
    at = payload.get("apiKeyAt")
    if isinstance(api_key, str) and isinstance(at, int):
        sys.argv[1 + at : 1 + at] = [API_KEY_FLAG, api_key]
        _Restored.api_key = True

"""Pi's reading of a command line (spec 18.8), for what argparse cannot read the same way.

A Pi client passes `pi`'s own arguments. Pi reads them in one pass (its `parseArgs`): an option it
knows takes the next argument as its value whatever that looks like; `@path` is a file to attach;
an unknown `--name=value` or `--name value` (the value only when the next argument starts with
neither `-` nor `@`) or bare `--name` is kept for the extensions that may register it; an unknown
`-x` is an error; anything else is a message. `-p`/`--print` takes the next argument as a message
unless it looks like an option or a file (`---` counts as text), and `--list-models` takes an
optional search term the same way.

`split_pi_argv` walks the arguments that way and hands the options the daemon's parser knows to
argparse, each value joined to its option (`--model=-x` cannot be mistaken for an option), and
returns the rest as `PiExtras` for the command line to honour, warn about or refuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

PRINT_FLAGS = ("-p", "--print")
LIST_MODELS_FLAG = "--list-models"


class PiExtras(msgspec.Struct):
    """What a Pi command line holds beyond the daemon's own options."""

    messages: list[str] = msgspec.field(default_factory=list)
    file_args: list[str] = msgspec.field(default_factory=list)  # `@path`, without the `@`
    # Flags Pi keeps for its extensions, by name without the dashes (a later one wins, as in Pi).
    unknown_flags: dict[str, str | bool] = msgspec.field(default_factory=dict)
    unknown_short: list[str] = msgspec.field(default_factory=list)  # `-x`: Pi stops with "Unknown option"
    print_mode: bool = False
    list_models: str | bool | None = None  # None: not asked; True: every model; text: a search


def _is_value(text: str | None) -> bool:
    """The next argument is an unknown flag's value only when it is no option and no file."""
    return text is not None and not text.startswith(("-", "@"))


def split_pi_argv(argv: Sequence[str], options: Mapping[str, str | None]) -> tuple[list[str], PiExtras]:
    """(the arguments for argparse, the rest). `options` maps every option string the parser knows
    to the long form that carries a value (`-t` -> `--tools`), or to None for a flag."""
    known: list[str] = []
    extras = PiExtras()
    i = 0
    while i < len(argv):
        arg = argv[i]
        following = argv[i + 1] if i + 1 < len(argv) else None
        i += 1
        name, equals, inline = arg.partition("=")
        if arg in options:
            long_form = options[arg]
            if long_form is not None and following is not None:
                known.append(f"{long_form}={following}")
                i += 1
            else:
                known.append(arg)  # a flag; or a value option at the end, which argparse reports
        elif equals and name.startswith("--") and name in options:
            known.append(arg)  # `--cwd=DIR`: the daemon's own spelling of a value
        elif arg in PRINT_FLAGS:
            extras.print_mode = True
            if following is not None and not following.startswith("@"):
                if not following.startswith("-") or following.startswith("---"):
                    extras.messages.append(following)
                    i += 1
        elif arg == LIST_MODELS_FLAG:
            extras.list_models = True
            if _is_value(following):
                assert following is not None
                extras.list_models = following
                i += 1
        elif arg.startswith("@"):
            extras.file_args.append(arg[1:])
        elif arg.startswith("--"):
            if equals:
                extras.unknown_flags[name[2:]] = inline
            elif _is_value(following):
                assert following is not None
                extras.unknown_flags[arg[2:]] = following
                i += 1
            else:
                extras.unknown_flags[arg[2:]] = True
        elif arg.startswith("-"):
            extras.unknown_short.append(arg)
        else:
            extras.messages.append(arg)
    return known, extras

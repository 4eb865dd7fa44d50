"""What a shell command will run, as the approval rules need to know it (pi_rpc/session/approvals/gate.py).

A rule is matched against the command as bash parses it, never against its text: a regular
expression over text cannot see what bash's parameter, arithmetic and prompt expansions run
(`npm test ${x:=$(touch C)} ${x@P}`). Two questions are answered here:

- `literal_words`: is the whole command one simple command whose every word is literal? Only such
  a command can be covered by an allow rule. No expansion of any kind (`$`, backticks, globs,
  braces, `~`), no redirection, no `X=1` prefix, no here-document, no list or pipeline. Quoted
  words are literal (`git commit -m 'a b'`).
- `command_words`: every simple command anywhere in the text (pipelines, lists, subshells,
  command and process substitutions, `bash -c '…'`, `eval`, wrappers such as `sudo` and `xargs`,
  `find -exec`), for deny rules, each normalised by `normal_form` (program path to its name,
  flag clusters split, so `/bin/rm -fr` and `rm -r -f` both read as `rm` with `-r -f`).

The parser is tree-sitter-bash (a C grammar behind a small wheel for every platform and Python).
Measured on a shared 2-core machine over typical commands (`npm test`, `git status`, pipelines,
here-documents): 5.5 µs a parse warm (median; 9.5 µs at p90), 90 µs for a whole gate check of a
bash call (deny rule, allow rule, suggested rule), about 20 ms for the first check, which imports
the parser, and 1 to 3.4 MiB of RSS. bashlex, the other maintained option, took 216 µs a parse,
160 ms to import and 4.9 MiB, and refuses constructs it does not know. The import happens at the
first bash approval, never at start-up. tree-sitter never refuses input: a command it cannot
parse comes back with error nodes, and is then asked (never allowed) and, for deny, matched by
its words.

`code_running_option` is the table of options that make an allowed program run other code.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

# Unquoted characters that mean nothing to bash inside a word. Everything else (`$ ` * ? [ ] { } ~ !
# # ( ) < > | & ; ' "` and white space) is either quoted, escaped, or makes the word not literal.
_PLAIN = frozenset(string.ascii_letters + string.digits + "_-./:=,+@%^")
# Argument nodes whose text `_literal` decides about; anything else (expansions, redirections,
# assignments) makes the command not literal.
_WORD_NODES = frozenset({"word", "raw_string", "string", "concatenation", "number"})
_REDIRECT = re.compile(r"redirect")
# A deny rule's program inside a command that failed to parse: any word spelled like it.
_WORD_SPLIT = re.compile(r"[\s;&|<>()`'\"$={}]+")
_MAX_DEPTH = 6  # `bash -c "bash -c '…'"` nesting followed for deny rules


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter  # deferred: the daemon's start-up does not pay for the parser
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@lru_cache(maxsize=64)
def _parse(command: str) -> tuple[Node, bool]:
    tree = _parser().parse(command.encode())
    return tree.root_node, tree.root_node.has_error


def _text(node: Node) -> str:
    return (node.text or b"").decode(errors="replace")


def _literal(text: str) -> str | None:
    """The word bash makes of `text` when nothing in it expands; None when something might."""
    out: list[str] = []
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        if char == "'":
            close = text.find("'", index + 1)
            if close < 0:
                return None
            out.append(text[index + 1 : close])
            index = close + 1
        elif char == '"':
            index += 1
            while index < end and text[index] != '"':
                char = text[index]
                if char in "$`!":
                    return None
                if char == "\\" and index + 1 < end:
                    following = text[index + 1]
                    if following == "\n":
                        return None
                    out.append(following if following in '$`"\\' else char + following)
                    index += 2
                    continue
                out.append(char)
                index += 1
            if index >= end:
                return None
            index += 1
        elif char == "\\":
            if index + 1 >= end or text[index + 1] == "\n":
                return None
            out.append(text[index + 1])
            index += 2
        elif char in _PLAIN or (ord(char) > 127 and char.isprintable() and not char.isspace()):
            out.append(char)
            index += 1
        else:
            return None
    return "".join(out)


def _blank(text: str) -> bool:
    return text.strip(" \t") == ""


def literal_words(command: str) -> tuple[str, ...] | None:
    """The words of `command` when it is one simple command with nothing that expands; else None."""
    if "\n" in command.strip() or not command.strip():
        return None
    root, failed = _parse(command)
    if failed or len(root.children) != 1 or root.children[0].type != "command":
        return None
    node = root.children[0]
    raw = command.encode()
    if not _blank(raw[: node.start_byte].decode(errors="replace")) or raw[node.end_byte :].strip():
        return None
    words: list[str] = []
    previous_end = node.start_byte
    for child in node.children:
        gap = raw[previous_end : child.start_byte].decode(errors="replace")
        if (words and not gap) or not _blank(gap):
            return None  # words bash would join, or something between them that is not a blank
        previous_end = child.end_byte
        target = child
        if child.type == "command_name":
            if len(child.children) != 1:
                return None
            target = child.children[0]
        if target.type not in _WORD_NODES:
            return None
        word = _literal(_text(target))
        if word is None:
            return None
        words.append(word)
    return tuple(words) if words else None


# PowerShell quotes and escapes otherwise (a backtick escapes, `\\` does not, `@x` splats a
# variable): only words of these characters, separated by spaces, are literal to both shells.
_PLAIN_POWERSHELL = frozenset(string.ascii_letters + string.digits + "_-./:=+")


def shell_literal_words(tool: str, command: str) -> tuple[str, ...] | None:
    """`literal_words` for the shell tool `tool`: for `powershell` only unquoted plain words."""
    if tool != "powershell":
        return literal_words(command)
    words = tuple(command.split(" "))
    words = tuple(word for word in words if word)
    if not words or any(char not in _PLAIN_POWERSHELL for word in words for char in word):
        return None
    return words


# --- every command in a text, for deny rules --------------------------------------------------------

# Programs that run the rest of their arguments as a command: every later word may start one.
_WRAPPERS = frozenset(
    {
        "sudo",
        "doas",
        "env",
        "command",
        "exec",
        "builtin",
        "nice",
        "nohup",
        "time",
        "timeout",
        "xargs",
        "stdbuf",
        "ionice",
        "chrt",
        "setsid",
        "strace",
        "ltrace",
        "watch",
        "flock",
        "unbuffer",
        "chroot",
    }
)
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "busybox"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})

Words = tuple[str | None, ...]  # None: a word that expands, so its value is unknown


def _word(node: Node) -> str | None:
    target = node.children[0] if node.type == "command_name" and len(node.children) == 1 else node
    return _literal(_text(target))


def _commands(root: Node) -> Iterator[Node]:
    """Every `command` node, in source order; a loop, not recursion: nesting has no limit."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "command":
            yield node
        stack.extend(reversed(node.children))


def command_words(command: str, depth: int = 0) -> tuple[list[Words], bool]:
    """The words of every simple command in `command` (and in the scripts it hands to a shell),
    and whether the text failed to parse (then some commands may be missing)."""
    root, failed = _parse(command)
    found: list[Words] = []
    for node in _commands(root):
        words: Words = tuple(
            _word(child)
            for child in node.children
            if child.type != "variable_assignment" and not _REDIRECT.search(child.type)
        )
        if not words:
            continue
        for candidate in _runs(words):
            found.append(candidate)
            if depth < _MAX_DEPTH:
                for script in _scripts(candidate):
                    more, broken = command_words(script, depth + 1)
                    found += more
                    failed = failed or broken
    return found, failed


def _name(word: str | None) -> str | None:
    return word.rsplit("/", 1)[-1] if word is not None else None


def _runs(words: Words) -> Iterator[Words]:
    """The command itself, and for a wrapper (`sudo rm`, `find -exec rm`) each command it may run:
    after a wrapper every later word may be the program, after find's `-exec` the next one is."""
    starts, index = {0}, 0
    while index < len(words):
        program = _name(words[index]) if index in starts else None
        if program in _WRAPPERS:
            starts.update(range(index + 1, len(words)))
        elif program == "find":
            starts.update(i + 1 for i in range(index, len(words) - 1) if words[i] in _FIND_EXEC)
        index += 1
    for start in sorted(starts):
        yield words[start:]


def _scripts(words: Words) -> list[str]:
    """The scripts a command hands to a shell: `bash -c '…'`, `eval …`."""
    program = _name(words[0])
    if program == "eval":
        return [" ".join(word for word in words[1:] if word is not None)]
    if program in _SHELLS and any(w and re.fullmatch(r"-[A-Za-z]*c[A-Za-z]*", w) for w in words[1:]):
        return [word for word in words[1:] if word is not None and not word.startswith("-")]
    return []


def words_in_unparsed(command: str) -> set[str]:
    """Every word-like token of a text that failed to parse, for matching deny rules by name."""
    return {_name(token) or "" for token in _WORD_SPLIT.split(command) if token}


# --- normal form, for deny rules -------------------------------------------------------------------

_FLAG_ALIASES: dict[str, dict[str, str]] = {
    "rm": {"-R": "-r", "--recursive": "-r", "--force": "-f", "--dir": "-d"},
    "git": {"--force": "-f"},
    "cp": {"-R": "-r", "--recursive": "-r", "--force": "-f"},
}


class NormalForm(msgspec.Struct, frozen=True):
    """A command as a deny rule sees it: the program's name (None: unknown, it expands), its flags
    as a set (`-rf` is `-r -f`), and its other words in order."""

    program: str | None
    flags: frozenset[str]
    arguments: tuple[str | None, ...]


def normal_form(words: Words) -> NormalForm:
    program = _name(words[0])
    aliases = _FLAG_ALIASES.get(program or "", {})
    flags: set[str] = set()
    arguments: list[str | None] = []
    options_end = False
    for word in words[1:]:
        if word is None or options_end or word == "-" or not word.startswith("-"):
            arguments.append(word)
        elif word == "--":
            options_end = True
        elif word.startswith("--"):
            name = word.split("=", 1)[0]
            flags.update({aliases.get(word, word), aliases.get(name, name)})
        else:
            flags.update(aliases.get(f"-{letter}", f"-{letter}") for letter in word[1:])
    return NormalForm(program, frozenset(flags), tuple(arguments))


def deny_covers(rule: NormalForm, command: NormalForm, *, prefix: bool) -> bool:
    """Whether a deny rule's command (`rm -rf`, a prefix with `:*`) names `command`. An unknown
    program or word (one that expands) is taken to be the rule's: a deny rule errs on refusing."""
    if command.program is not None and command.program != rule.program:
        return False
    arguments = command.arguments[: len(rule.arguments)] if prefix else command.arguments
    if len(arguments) != len(rule.arguments):
        return False
    if any(seen is not None and seen != wanted for seen, wanted in zip(arguments, rule.arguments, strict=True)):
        return False
    return rule.flags <= command.flags if prefix else rule.flags == command.flags


# --- options that make an allowed program run other code -------------------------------------------

# For every program: options whose value is a program, a shell, or a config file that may name one.
_ANY_PROGRAM = frozenset(
    {
        "--config",
        "--config-file",
        "--exec",
        "--exec-path",
        "--script-shell",
        "--rcfile",
        "--init-file",
        "--upload-pack",
        "--receive-pack",
        "--rsh",
    }
)
# Per program (by name; `python -m NAME` counts as NAME).
_CODE_OPTIONS: dict[str, frozenset[str]] = {
    "npm": frozenset(
        {
            "--script-shell",
            "--node-options",
            "--userconfig",
            "--globalconfig",
            "--call",
            "-c",
            "--init-module",
            "--prefix",
        }
    ),
    "find": frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}),
    "make": frozenset({"-f", "--file", "--makefile", "-C", "--directory", "--eval", "-E", "-I", "--include-dir"}),
    "pytest": frozenset({"-p", "-c", "-o", "--override-ini", "--rootdir", "--confcutdir", "--pyargs"}),
    "cargo": frozenset({"-Z", "--manifest-path"}),
    "go": frozenset({"-exec", "-toolexec", "-overlay", "-modfile"}),
    "tar": frozenset(
        {
            "--to-command",
            "--use-compress-program",
            "-I",
            "--checkpoint-action",
            "--rsh-command",
            "--info-script",
            "-F",
            "--new-volume-script",
        }
    ),
    "rsync": frozenset({"-e", "--rsync-path"}),
    "ssh": frozenset({"-o", "-F", "-S"}),
    "scp": frozenset({"-o", "-F", "-S"}),
}
for _same, _as in (
    ("npx", "npm"),
    ("pnpm", "npm"),
    ("yarn", "npm"),
    ("bun", "npm"),
    ("gmake", "make"),
    ("py.test", "pytest"),
):
    _CODE_OPTIONS[_same] = _CODE_OPTIONS[_as]
# git: options before the subcommand, then per subcommand.
_GIT_GLOBAL = frozenset({"-c", "-C", "--config-env", "--exec-path", "--git-dir", "--work-tree", "--namespace"})
_GIT_SUBCOMMAND: dict[str, frozenset[str]] = {
    "rebase": frozenset({"-x", "--exec"}),
    "clone": frozenset({"-u", "--upload-pack", "-c", "--config", "--template", "--separate-git-dir"}),
    "fetch": frozenset({"--upload-pack"}),
    "pull": frozenset({"--upload-pack"}),
    "ls-remote": frozenset({"--upload-pack"}),
    "archive": frozenset({"--exec"}),
    "push": frozenset({"--receive-pack", "--exec"}),
    "difftool": frozenset({"-x", "--extcmd"}),
    "grep": frozenset({"-O", "--open-files-in-pager"}),
    "init": frozenset({"--template", "--separate-git-dir"}),
}
# Subcommands that run what their arguments say, or write the config that names programs.
_GIT_RUNS = {"filter-branch": "", "submodule": "foreach", "bisect": "run"}


def _option_matches(word: str, option: str, *, abbreviated: bool) -> bool:
    if option.startswith("--"):
        name = word.split("=", 1)[0]
        if not abbreviated:
            return name == option
        # git's parse-options, argparse (pytest) and npm's nopt take any unique prefix of a long
        # option (`--exe` is `--exec`); npm reads `_` as `-`.
        name = name.replace("_", "-").lower()
        return len(name) > 2 and option.startswith(name)
    if len(option) > 2:  # find's `-exec`
        return word == option
    if word.startswith(option):  # `-p`, `-pvalue`
        return True
    return bool(re.fullmatch(r"-[A-Za-z]+", word)) and option[1] in word  # a cluster: `-qp`


def _first_match(words: tuple[str, ...], options: frozenset[str], *, abbreviated: bool = False) -> str | None:
    """The first option among `words` that is one of `options` (those of every program, exactly)."""
    for word in words:
        if word == "--":
            return None
        if not word.startswith("-"):
            continue
        if any(_option_matches(word, option, abbreviated=abbreviated) for option in options):
            return word
        if any(_option_matches(word, option, abbreviated=False) for option in _ANY_PROGRAM):
            return word
    return None


def _git_option(arguments: tuple[str, ...]) -> str | None:
    index = 0
    while index < len(arguments) and arguments[index].startswith("-"):
        index += 1
    if found := _first_match(arguments[:index], _GIT_GLOBAL, abbreviated=True):
        return found
    if index == len(arguments):
        return None
    subcommand, rest = arguments[index], arguments[index + 1 :]
    if subcommand in _GIT_RUNS and (not _GIT_RUNS[subcommand] or _GIT_RUNS[subcommand] in rest):
        return f"{subcommand} {_GIT_RUNS[subcommand]}".strip()
    if subcommand == "config" and (
        len([word for word in rest if not word.startswith("-")]) >= 2 or {"-e", "--edit", "--add"} & set(rest)
    ):
        return "config (a write: the config names programs git runs)"
    return _first_match(rest, _GIT_SUBCOMMAND.get(subcommand, frozenset()), abbreviated=True)


# Programs whose option parser takes a unique prefix of a long option.
_ABBREVIATING = frozenset({"npm", "npx", "pnpm", "yarn", "bun", "pytest", "py.test"})


def code_running_option(words: tuple[str, ...]) -> str | None:
    """The first word of a literal command that makes its program run code the command does not
    show (`--script-shell=./x.sh`, `git -c core.pager=…`, `find -exec`); None when there is none."""
    program, arguments = os.path.basename(words[0]), words[1:]
    if program.startswith("python") and arguments[:1] == ("-m",) and len(arguments) > 1:
        program, arguments = arguments[1], arguments[2:]
    if program == "git":
        return _git_option(arguments)
    if program in ("make", "gmake") and (found := next((w for w in arguments if "=" in w), None)):
        return found  # `make SHELL=./x.sh`: a variable override changes the recipe's shell or tools
    options = _CODE_OPTIONS.get(program, frozenset())
    return _first_match(arguments, options, abbreviated=program in _ABBREVIATING)


__all__ = [
    "NormalForm",
    "code_running_option",
    "command_words",
    "deny_covers",
    "literal_words",
    "normal_form",
    "shell_literal_words",
    "words_in_unparsed",
]

"""The shell-command analysis behind approval rules: which commands are literal, their words as bash
makes them (checked against bash itself), the normal form deny rules match, and the options that
make a program run other code."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_rpc.session.approvals.gate import PermissionRule
from pi_rpc.session.approvals.shell_commands import (
    code_running_option,
    command_words,
    literal_words,
    normal_form,
)

BASH = shutil.which("bash")


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("npm test", ("npm", "test")),
        ("  git   status  ", ("git", "status")),
        ("git commit -m 'a b'", ("git", "commit", "-m", "a b")),
        ('echo "a \\"b\\" \\$c"', ("echo", 'a "b" $c')),
        ("echo it\\'s", ("echo", "it's")),
        ("echo 'it'\"'\"'s'", ("echo", "it's")),
        ("ls src/a-b_c.py x=y", ("ls", "src/a-b_c.py", "x=y")),
        ("echo café", ("echo", "café")),
    ],
)
def test_literal_commands_and_their_words(command: str, words: tuple[str, ...]) -> None:
    assert literal_words(command) == words


@pytest.mark.parametrize(
    "command",
    [
        "",
        "echo $x",
        "echo ${x@P}",
        "echo $[1+2]",
        "echo $((1+2))",
        "echo `id`",
        "echo $(id)",
        'echo "$(id)"',
        "echo $'\\x41'",
        "cat <(id)",
        "ls *.py",
        "ls a?",
        "ls [ab]",
        "echo {a,b}",
        "ls ~/x",
        "X=1 ls",
        "ls > out",
        "cat <<EOF\nx\nEOF",
        "a && b",
        "a | b",
        "a; b",
        "a &",
        "(a)",
        "{ a; }",
        "echo a # comment",
        "echo a\\\nb",
        "echo 'unclosed",
        "echo !!",
        "f() { a; }",
    ],
)
def test_commands_that_are_not_literal(command: str) -> None:
    assert literal_words(command) is None


def test_deny_sees_every_command_in_normal_form() -> None:
    commands, failed = command_words("/usr/bin/rm -fr a && echo $(git  push --force) | bash -c 'rm -R b'")
    forms = [normal_form(words) for words in commands]
    assert not failed
    assert [(form.program, sorted(form.flags), form.arguments) for form in forms] == [
        ("rm", ["-f", "-r"], ("a",)),
        ("echo", [], (None,)),  # the substitution's value is unknown
        ("git", ["-f"], ("push",)),
        ("bash", ["-c"], ("rm -R b",)),
        ("rm", ["-r"], ("b",)),
    ]


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("npm test --script-shell=./x.sh", "--script-shell=./x.sh"),
        ("pnpm test --node-options=--require=./x.js", "--node-options=--require=./x.js"),
        ("git -c core.pager=./x log", "-c"),
        ("git -C ../other status", "-C"),
        ("git config core.fsmonitor ./x", "config (a write: the config names programs git runs)"),
        ("git submodule foreach ./x", "submodule foreach"),
        ("git grep -O./x foo", "-O./x"),
        ("find . -name '*.py' -exec ./x '{}' \\;", "-exec"),
        ("make CC=./x", "CC=./x"),
        ("python3 -m pytest -p evil", "-p"),
        ("eslint --config ./x.js .", "--config"),
        ("git rebase --exe=./x main", "--exe=./x"),  # git takes a unique prefix of a long option
        ("npm test --script_shell=./x", "--script_shell=./x"),
        ("python -m pytest --override=addopts=-pevil", "--override=addopts=-pevil"),
    ],
)
def test_options_that_run_code(command: str, option: str) -> None:
    words = literal_words(command)
    assert words is not None and code_running_option(words) == option


@pytest.mark.parametrize(
    "command",
    [
        "npm test",
        "git status -s",
        "git log -c",
        "git config user.name",
        "git submodule update --init",
        "make test",
        "find . -name x",
        "docker run --init x",
    ],
)
def test_ordinary_options_run_nothing_else(command: str) -> None:
    words = literal_words(command)
    assert words is not None and code_running_option(words) is None


def test_deeply_nested_commands_are_all_seen() -> None:
    command = "echo " + "$(" * 3000 + "rm -rf x" + ")" * 3000
    commands, _ = command_words(command)
    assert any(normal_form(words).program == "rm" for words in commands)


def test_the_parser_is_imported_at_the_first_command_only() -> None:
    probe = (
        "import sys, pi_rpc.cli, pi_rpc.modes.stdio, pi_rpc.session.session, pi_rpc.session.approvals.gate; "
        "print('tree_sitter' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "False"


# --- properties --------------------------------------------------------------------------------------

# Pieces of shell text: plain words, every kind of quote, and the characters bash expands.
FRAGMENTS = st.sampled_from(
    ["a", "b1", "-x", "--opt=v", "./p", " ", "  ", "\t", "'", '"', "\\", "$", "${x}", "$(", ")", "`", "*", "?",
     "[", "]", "{", "}", ",", "~", "=", "#", ";", "&", "|", "<", ">", "!", "%", "@", ":", "é", "(", "\\$", "'q q'",
     '"d d"', "$x", "$[1]", "${x@P}", "\n"]
)  # fmt: skip
COMMANDS = st.lists(FRAGMENTS, min_size=1, max_size=12).map("".join)
# Mostly quoting that leaves the words literal, with the odd expansion among them.
QUOTED = st.sampled_from(
    ["a", "-x", "--o=v", " ", "'q q'", '"d d"', "\\$", "é", "%", "@", ":", ",", "\\*", "'$x'", '"\\$x"', "\\\\",
     '"a\\"b"', "'\\'", '"\\a"', "$x", "*", "~"]
)  # fmt: skip
MOSTLY_LITERAL = st.lists(st.one_of(QUOTED, FRAGMENTS), min_size=1, max_size=10).map("".join)


def unquoted_dollar(command: str) -> bool:
    """Whether a `$` in `command` is neither single-quoted nor escaped with a backslash."""
    quote, index = "", 0
    while index < len(command):
        char = command[index]
        if char == "\\" and quote != "'":
            index += 2
            continue
        if char == "$" and quote != "'":
            return True
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        index += 1
    return False


@settings(max_examples=400, derandomize=True, database=None)
@given(command=COMMANDS)
def test_no_command_with_an_unquoted_dollar_is_ever_covered(command: str) -> None:
    if unquoted_dollar(command):
        assert literal_words(command) is None
        words = command.split()
        if words:
            assert not PermissionRule.parse(f"bash({words[0]}:*)").matches("bash", {"command": command}, "/")


@pytest.mark.skipif(BASH is None, reason="needs bash")
@settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # the folder must stay empty throughout
)
@given(command=st.one_of(COMMANDS, MOSTLY_LITERAL))
def test_a_literal_command_has_the_words_bash_makes_and_runs_nothing_else(command: str, tmp_path: Path) -> None:
    words = literal_words(command)
    if words is None:
        return
    assert BASH is not None
    # `printf` prints the words bash makes of the command; a command substitution would make a file.
    script = "printf '%s\\0' " + command + " > /dev/null; printf '%s\\0' " + command
    done = subprocess.run([BASH, "--norc", "-c", script], cwd=tmp_path, capture_output=True, timeout=30)
    assert done.stdout.decode().split("\0")[:-1] == list(words)
    assert list(tmp_path.iterdir()) == []


SAFE_PROGRAM = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True).filter(
    lambda name: name not in {"git", "npm", "npx", "pnpm", "yarn", "bun", "find", "make", "gmake", "pytest",
                              "cargo", "go", "tar", "rsync", "ssh", "scp", "python", "eval", "if", "then", "fi",
                              "for", "do", "done", "case", "esac", "while", "until", "function", "select",
                              "in", "elif", "else", "time", "coproc"}
    and not name.startswith("python")
)  # fmt: skip
ARGUMENT = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=12).filter(
    lambda text: not text.startswith("-")
)


@settings(max_examples=300, derandomize=True, database=None)
@given(program=SAFE_PROGRAM, arguments=st.lists(ARGUMENT, max_size=5), covered=st.integers(0, 5))
def test_a_literal_command_is_covered_by_its_own_prefix_rule(program: str, arguments: list[str], covered: int) -> None:
    words = [program, *arguments]
    command = shlex.join(words)
    assert literal_words(command) == tuple(words)
    rule = PermissionRule.parse(f"bash({shlex.join(words[: covered + 1])}:*)")
    assert rule.matches("bash", {"command": command}, "/")
    assert PermissionRule.parse(f"bash({command})").matches("bash", {"command": command}, "/")


@settings(max_examples=200, derandomize=True, database=None)
@given(
    flags=st.permutations(["r", "f"]),
    clustered=st.booleans(),
    path=st.sampled_from(["rm", "/bin/rm", "/usr/bin/rm", "'rm'"]),
    gap=st.sampled_from([" ", "  ", "\t"]),
)
def test_every_spelling_of_rm_rf_is_denied(flags: list[str], clustered: bool, path: str, gap: str) -> None:
    options = ["-" + "".join(flags)] if clustered else [f"-{flag}" for flag in flags]
    command = gap.join([path, *options, "build"])
    rule = PermissionRule.parse("bash(rm -rf:*)")
    assert rule.matches("bash", {"command": command}, "/", for_deny=True)
    assert rule.matches("bash", {"command": f"echo ok && {command}"}, "/", for_deny=True)

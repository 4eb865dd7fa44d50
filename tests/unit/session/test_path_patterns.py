"""The glob matcher of settings filters (pi_rpc/session/resources/path_patterns.py): examples, and an oracle
property against the matcher Pi uses (the npm `minimatch` package, from tests/pi_client)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from random import Random

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from pi_rpc.session.resources.path_patterns import glob_matches
from tests.node_packages import PI_CLIENT, ensure_installed

ORACLE = Path(__file__).with_name("minimatch_oracle.mjs")


@pytest.mark.parametrize(
    ("path", "pattern", "matched"),
    [
        ("skills/old/SKILL.md", "skills/*/SKILL.md", True),
        ("skills/old/SKILL.md", "skills/*", False),  # `*` stops at `/`
        ("a/b/c.md", "**/*.md", True),
        ("c.md", "**/*.md", True),  # `**` is zero segments too
        ("a/.hidden/c.md", "**/*.md", False),  # but never a hidden one
        ("a/.h", "a/*", False),  # nor does a wildcard
        (".h", "[.]h", True),  # `[.]` is a literal dot
        (".pi/x.md", ".pi/*.md", True),  # a pattern naming the dot may
        ("a", "a/**", False),  # a trailing `/**` needs something below
        ("x.txt", "x.{md,txt}", True),
        ("x.md", "x.{md}", False),  # no comma: literal braces
        ("a{b/a", "a{b/{a,b}", True),  # an unclosed brace is literal, the next ones still expand
        ("b", "[!a]", True),
        ("*", "\\*", True),
        ("anything", "#comment", False),
        ("a", "!b", True),
        ("..", "*", False),
        ("/abs/skills/x/SKILL.md", "/abs/**/SKILL.md", True),
        ("b", "a/../b", True),  # `x/..` goes, as minimatch collapses it
    ],
)
def test_examples(path: str, pattern: str, matched: bool) -> None:
    assert glob_matches(path, pattern) is matched


@pytest.fixture(scope="module")
def minimatch() -> Iterator[subprocess.Popen[str]]:
    client = ensure_installed(PI_CLIENT)
    with subprocess.Popen(
        ["node", str(ORACLE), str(client / "package.json")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as oracle:
        yield oracle
        assert oracle.stdin is not None
        oracle.stdin.close()


def pis_verdicts(oracle: subprocess.Popen[str], patterns: list[str], paths: list[str]) -> list[list[bool]]:
    assert oracle.stdin is not None and oracle.stdout is not None
    oracle.stdin.write(json.dumps({"patterns": patterns, "paths": paths}) + "\n")
    oracle.stdin.flush()
    answer: list[list[bool]] = json.loads(oracle.stdout.readline())
    return answer


PATTERN_PARTS = ["a", "b", ".h", "x.md", "SKILL.md", "..", "*", "?", "*.md", "a*", "[ab]", "[!a]b", "[a-c]", "[.]h"]
PATTERN_PARTS += ["**", "{a,b}", "{a,.h}", "{,a}", "a{b", "{a}", "\\*", ".*", "*b*", "x.{md,txt}", "[", "#x", ""]
PATH_PARTS = ["a", "b", "ab", ".h", "x.md", "x.txt", "SKILL.md", "*", "{a,b}", "a.b"]


def pattern(rng: Random) -> str:
    return rng.choice(["", "", "/", "!"]) + "/".join(rng.choices(PATTERN_PARTS, k=rng.randint(1, 3)))


def path(rng: Random) -> str:
    # As the filters meet them: relative (possibly above the base, `../`), a name, or absolute.
    return rng.choice(["", "", "/", "../"]) + "/".join(rng.choices(PATH_PARTS, k=rng.randint(1, 3)))


# Hypothesis picks the seeds; each example is a batch drawn evenly from the parts (its own
# strategies would draw the same few simple patterns again and again).
@seed(15)
@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False))
def test_the_verdicts_are_minimatchs(minimatch: subprocess.Popen[str], rng: Random) -> None:
    tried_patterns = [pattern(rng) for _ in range(40)]
    tried_paths = [path(rng) for _ in range(25)]
    ours = [[glob_matches(p, pat) for p in tried_paths] for pat in tried_patterns]
    assert ours == pis_verdicts(minimatch, tried_patterns, tried_paths)

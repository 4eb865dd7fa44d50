"""The `.gitignore` matcher Pi's skill discovery applies (pi_rpc/session/resources/gitignore.py): examples,
an oracle property against Pi's own matcher (the npm `ignore` package, from tests/pi_client), and
a property that needs no Node."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from pi_rpc.session.resources.gitignore import IgnoreRules
from tests.node_packages import PI_CLIENT, ensure_installed

ORACLE = Path(__file__).with_name("ignore_oracle.mjs")


def verdicts(rules: list[str], paths: list[str]) -> list[bool]:
    matcher = IgnoreRules()
    matcher.add(rules)
    return [matcher.ignores(path) for path in paths]


@pytest.mark.parametrize(
    ("rules", "path", "ignored"),
    [
        (["build"], "build/", True),
        (["build"], "src/build", True),  # no slash: a name at any depth
        (["build/"], "build", False),  # a trailing slash: directories only
        (["build/"], "src/build/", True),
        (["/build"], "src/build/", False),  # anchored at the root
        (["doc/*.md"], "doc/a.md", True),
        (["doc/*.md"], "doc/sub/a.md", False),  # `*` stops at `/`
        (["doc/**/a.md"], "doc/x/y/a.md", True),
        (["doc/**/a.md"], "doc/a.md", True),
        (["**/draft"], "a/b/draft/", True),
        (["keep/**"], "keep/", False),  # `/**` is what is inside, not the folder
        (["keep/**"], "keep/x/y", True),
        (["*.md", "!README.md"], "README.md", False),  # the last matching rule decides
        (["drafts/", "!drafts/keep.md"], "drafts/keep.md", True),  # no re-including from an excluded folder
        (["a?c"], "abc", True),
        (["a?c"], "a/c", False),
        (["[ab]x"], "bx", True),
        (["[!ab]x"], "bx", False),
        (["[ab"], "[ab", True),  # an unclosed class is literal
        (["# note", "", "\\#hash"], "#hash", True),
        (["\\!bang"], "!bang", True),
        (["trail   "], "trail", True),
        (["a", "!/**"], "a/a", False),  # `**` alone is everything, across folders
    ],
)
def test_examples(rules: list[str], path: str, ignored: bool) -> None:
    assert verdicts(rules, [path]) == [ignored]


@pytest.fixture(scope="module")
def pis_matcher() -> Iterator[subprocess.Popen[str]]:
    client = ensure_installed(PI_CLIENT)
    with subprocess.Popen(
        ["node", str(ORACLE), str(client / "package.json")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as oracle:
        yield oracle
        assert oracle.stdin is not None
        oracle.stdin.close()


def pis_verdicts(oracle: subprocess.Popen[str], rules: list[str], paths: list[str]) -> list[bool]:
    assert oracle.stdin is not None and oracle.stdout is not None
    oracle.stdin.write(json.dumps({"rules": rules, "paths": paths}) + "\n")
    oracle.stdin.flush()
    answer: list[bool] = json.loads(oracle.stdout.readline())
    return answer


NAMES = st.sampled_from(["a", "b", "ab", "x.md", "a.md"])
GLOB_PARTS = st.sampled_from(["a", "b", "*", "?", "*.md", "a*", "[ab]", "[!a]b", "**"])


@st.composite
def rules(draw: st.DrawFn) -> str:
    parts = draw(st.lists(GLOB_PARTS, min_size=1, max_size=3))
    text = "/".join(parts)
    if draw(st.booleans()):
        text = "/" + text
    if draw(st.booleans()):
        text += "/"
    return ("!" if draw(st.integers(0, 3)) == 0 else "") + text


@st.composite
def paths(draw: st.DrawFn) -> str:
    path = "/".join(draw(st.lists(NAMES, min_size=1, max_size=4)))
    return path + ("/" if draw(st.booleans()) else "")


@seed(15)
@settings(max_examples=150, deadline=None)
@given(st.lists(rules(), min_size=1, max_size=4), st.lists(paths(), min_size=1, max_size=6))
def test_the_verdicts_are_pis(pis_matcher: subprocess.Popen[str], rule_lines: list[str], tried: list[str]) -> None:
    assert verdicts(rule_lines, tried) == pis_verdicts(pis_matcher, rule_lines, tried)


@seed(15)
@settings(max_examples=100, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=3), NAMES, st.lists(rules(), max_size=3))
def test_whatever_follows_nothing_inside_an_ignored_folder_comes_back(
    folders: list[str], name: str, later: list[str]
) -> None:
    folder = "/".join(folders)
    # `folder/` ignored, then any rules, re-including ones among them: its contents stay ignored
    # unless a later rule un-ignores the folder itself.
    rule_lines = [f"/{folder}/", *later, f"!/{folder}/{name}"]
    if not verdicts(rule_lines, [f"{folder}/"])[0]:
        return
    assert verdicts(rule_lines, [f"{folder}/{name}", f"{folder}/{name}/"]) == [True, True]

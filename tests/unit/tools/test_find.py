"""The find tool: rg --files plus fd-style globs (spec 13.9-13.14, 1.10)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec import UNSET

from pi_rpc.agent.types import ToolError
from pi_rpc.ai.validation import json_schema_of
from pi_rpc.tools.find import FindOperations, GlobOptions, create_find_tool, glob_to_regex, relativize

from .helpers import byte_limited_body, run_tool, text_of, wire_details

pytestmark = pytest.mark.anyio


async def find(cwd: Path, **args: Any) -> str:
    return text_of(await run_tool(create_find_tool(), args, cwd))


def touch(root: Path, *rels: str) -> None:
    for rel in rels:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


# --- declaration ---------------------------------------------------------------------------------


def test_declaration() -> None:
    """spec 13.9, 13.10"""
    tool = create_find_tool()
    assert (tool.name, tool.label) == ("find", "find")
    assert tool.description == (
        "Search for files by glob pattern. Returns matching file paths relative to the search directory. "
        "Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first)."
    )
    assert tool.prompt_snippet == "Find files by glob pattern (respects .gitignore)"
    assert tool.constrained_sampling is UNSET
    schema = json_schema_of(tool.parameters)
    assert schema["required"] == ["pattern"]
    assert schema["properties"] == {
        "pattern": {
            "type": "string",
            "description": "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. "
            "Without '/', e.g. '*.ts', it matches file names at any depth",
        },
        "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"},
    }


# --- matching ------------------------------------------------------------------------------------


async def test_pattern_without_slash_matches_file_names_at_any_depth(tmp_path: Path) -> None:
    """spec 13.11: fd matches a slash-free glob against the file name; results relative, `/`"""
    touch(tmp_path, "a.ts", "src/b.ts", "src/deep/c.ts", "src/d.js")
    assert await find(tmp_path, pattern="*.ts") == "a.ts\nsrc/b.ts\nsrc/deep/c.ts"


async def test_pattern_with_slash_matches_the_path(tmp_path: Path) -> None:
    """spec 13.11 (Pi 1.5.1): with `/`, the pattern is relative to the search directory: `src/*.ts`
    finds `src/a.ts` but not `pkg/src/b.ts`; `**/src/*.ts` finds both; a leading `./` is dropped.
    (Before, `**/` was prefixed, so `x/*.ts` found `src/x/b.spec.ts`.)"""
    touch(tmp_path, "src/a.spec.ts", "src/x/b.spec.ts", "test/c.spec.ts", "src/a.ts", "pkg/src/b.ts")
    assert await find(tmp_path, pattern="src/**/*.spec.ts") == "src/a.spec.ts\nsrc/x/b.spec.ts"
    assert await find(tmp_path, pattern="x/*.ts") == "No files found matching pattern"
    assert await find(tmp_path, pattern="**/*.spec.ts") == "src/a.spec.ts\nsrc/x/b.spec.ts\ntest/c.spec.ts"
    assert await find(tmp_path, pattern="src/*.ts") == "src/a.spec.ts\nsrc/a.ts"
    assert await find(tmp_path, pattern="./src/*.ts") == "src/a.spec.ts\nsrc/a.ts"
    assert await find(tmp_path, pattern="**/src/*.ts") == "pkg/src/b.ts\nsrc/a.spec.ts\nsrc/a.ts"
    assert await find(tmp_path, pattern="src/*.ts", path="./pkg") == "src/b.ts"


async def test_star_does_not_cross_directories(tmp_path: Path) -> None:
    """spec 13.11: fd globs use literal separators"""
    touch(tmp_path, "src/a.ts", "src/x/b.ts")
    assert await find(tmp_path, pattern="src/*.ts") == "src/a.ts"


async def test_absolute_pattern(tmp_path: Path) -> None:
    """spec 13.11: a pattern starting with `/` is matched against the absolute path as given"""
    touch(tmp_path, "src/a.ts", "b.ts")
    assert await find(tmp_path, pattern=f"{tmp_path}/src/*.ts") == "src/a.ts"


async def test_double_star_alone_lists_everything(tmp_path: Path) -> None:
    """spec 13.11: `**` is left as is; directories get a trailing `/`"""
    touch(tmp_path, "a.txt", "d/b.txt")
    assert await find(tmp_path, pattern="**") == "a.txt\nd/\nd/b.txt"


async def test_matching_directories_are_listed_with_a_slash(tmp_path: Path) -> None:
    """spec 13.12: a directory result keeps its trailing separator"""
    touch(tmp_path, "src/utils/a.py", "lib/utils.py")
    assert await find(tmp_path, pattern="utils*") == "lib/utils.py\nsrc/utils/"


async def test_smart_case(tmp_path: Path) -> None:
    """spec 13.11: fd's smart case: lowercase patterns ignore case, an uppercase letter makes it exact"""
    touch(tmp_path, "README.md", "notes.MD", "x.md")
    assert await find(tmp_path, pattern="*.md") == "README.md\nnotes.MD\nx.md"
    assert await find(tmp_path, pattern="*.MD") == "notes.MD"


async def test_braces_and_classes(tmp_path: Path) -> None:
    """spec 13.11: globset syntax: `{a,b}` alternatives and `[...]` classes"""
    touch(tmp_path, "a.ts", "b.tsx", "c.js", "d1.txt", "d2.txt", "d3.txt")
    assert await find(tmp_path, pattern="*.{ts,tsx}") == "a.ts\nb.tsx"
    assert await find(tmp_path, pattern="d[12].txt") == "d1.txt\nd2.txt"
    assert await find(tmp_path, pattern="d[!12].txt") == "d3.txt"


async def test_malformed_glob(tmp_path: Path) -> None:
    """spec 13.11: a glob fd cannot parse is an error naming it"""
    with pytest.raises(ToolError) as info:
        await find(tmp_path, pattern="[abc")
    assert str(info.value) == "error parsing glob '[abc': unclosed character class; missing ']'"


async def test_hidden_files_are_included(tmp_path: Path) -> None:
    """spec 13.11: --hidden"""
    touch(tmp_path, ".env", ".config/app.json", "a.json")
    assert await find(tmp_path, pattern="*.json") == ".config/app.json\na.json"
    assert await find(tmp_path, pattern=".env") == ".env"


# --- .gitignore (acceptance) ---------------------------------------------------------------------

TREE = [
    "src/main.py",
    "src/gen/out.py",
    "build/lib.py",
    "notes.log",
    "pkg/generated.py",
    "pkg/kept.py",
    "generated.py",
    ".hidden/tool.py",
]


def make_tree(root: Path) -> None:
    touch(root, *TREE)
    (root / ".gitignore").write_text("build/\n*.log\nsrc/gen/\n")
    (root / "pkg" / ".gitignore").write_text("generated.py\n")  # scoped to pkg/


EXPECTED_PY = ".hidden/tool.py\ngenerated.py\npkg/kept.py\nsrc/main.py"


async def test_gitignore_respected_outside_git(tmp_path: Path) -> None:
    """spec 13.11: --no-require-git: .gitignore applies in a plain folder, nested files scoped"""
    make_tree(tmp_path)
    assert await find(tmp_path, pattern="*.py") == EXPECTED_PY
    assert await find(tmp_path, pattern="*.log") == "No files found matching pattern"


async def test_gitignore_respected_in_a_git_repository(tmp_path: Path) -> None:
    """spec 13.11 (acceptance): a generated tree inside a git repository"""
    await anyio.run_process(["git", "init", "-q", str(tmp_path)])
    make_tree(tmp_path)
    assert await find(tmp_path, pattern="*.py") == EXPECTED_PY


async def test_gitignore_of_a_parent_applies_to_a_subdirectory_search(tmp_path: Path) -> None:
    """spec 13.11: searching below the ignore file still honours it"""
    make_tree(tmp_path)
    assert await find(tmp_path, pattern="*.py", path="src") == "main.py"


async def test_an_ignored_file_is_not_resurrected_by_the_pattern(tmp_path: Path) -> None:
    """spec 13.11: unlike `rg --glob`, a pattern never overrides .gitignore"""
    make_tree(tmp_path)
    assert await find(tmp_path, pattern="notes.log") == "No files found matching pattern"


# --- paths and errors ----------------------------------------------------------------------------


async def test_search_path_and_effective_cwd(tmp_path: Path) -> None:
    """spec 13.12, 1.10: results relative to the search path; ctx.cwd wins"""
    touch(tmp_path, "ws/src/a.ts")
    result = await run_tool(create_find_tool(), {"pattern": "*.ts", "path": "src"}, tmp_path / "ws")
    assert text_of(result) == "a.ts"


async def test_no_files(tmp_path: Path) -> None:
    """spec 13.12: `No files found matching pattern`, details undefined"""
    touch(tmp_path, "a.txt")
    result = await run_tool(create_find_tool(), {"pattern": "*.rs"}, tmp_path)
    assert text_of(result) == "No files found matching pattern"
    assert result.details is UNSET
    (tmp_path / "empty").mkdir()
    assert await find(tmp_path, pattern="*", path="empty") == "No files found matching pattern"


async def test_missing_search_path(tmp_path: Path) -> None:
    """spec 13.11: a missing search path is an error (message as for the glob path, 13.14)"""
    with pytest.raises(ToolError) as info:
        await find(tmp_path, pattern="*", path="nope")
    assert str(info.value) == f"Path not found: {tmp_path / 'nope'}"


async def test_search_path_must_be_a_directory(tmp_path: Path) -> None:
    """spec 13.11: fd refuses a file as search path"""
    touch(tmp_path, "a.txt")
    with pytest.raises(ToolError) as info:
        await find(tmp_path, pattern="*", path="a.txt")
    assert str(info.value) == f"Not a directory: {tmp_path / 'a.txt'}"


async def test_missing_ripgrep(tmp_path: Path) -> None:
    """spec 13.11 (rg stands in for fd): a clear error when the binary is absent"""
    tool = create_find_tool(locate=lambda: None)
    with pytest.raises(ToolError) as info:
        await run_tool(tool, {"pattern": "*"}, tmp_path)
    assert str(info.value) == "ripgrep (rg) is not available and could not be downloaded"


async def test_failure_without_output_reports_stderr(tmp_path: Path) -> None:
    """spec 13.11: non-zero exit with no output -> stderr trimmed"""
    fake = tmp_path / "fake-rg"
    fake.write_text("#!/bin/sh\necho '  broken walk  ' >&2\nexit 2\n")
    fake.chmod(0o755)
    with pytest.raises(ToolError) as info:
        await run_tool(create_find_tool(locate=lambda: str(fake)), {"pattern": "*"}, tmp_path)
    assert str(info.value) == "broken walk"


async def test_failure_with_output_is_tolerated(tmp_path: Path) -> None:
    """spec 13.11, 13.12: output with a non-zero exit is used; `\\r` and blank lines dropped"""
    fake = tmp_path / "fake-rg"
    fake.write_text("#!/bin/sh\nprintf 'a.ts\\r\\n\\nb/c.ts\\n'\necho 'permission denied' >&2\nexit 2\n")
    fake.chmod(0o755)
    result = await run_tool(create_find_tool(locate=lambda: str(fake)), {"pattern": "*.ts"}, tmp_path)
    assert text_of(result) == "a.ts\nb/c.ts"


# --- limits and notices --------------------------------------------------------------------------


async def test_result_limit(tmp_path: Path) -> None:
    """spec 13.13: `{L} results limit reached. Use limit={2L} for more, or refine pattern`"""
    touch(tmp_path, *(f"f{i}.txt" for i in range(5)))
    result = await run_tool(create_find_tool(), {"pattern": "*.txt", "limit": 3}, tmp_path)
    assert text_of(result) == (
        "f0.txt\nf1.txt\nf2.txt\n\n[3 results limit reached. Use limit=6 for more, or refine pattern]"
    )
    assert wire_details(result) == {"resultLimitReached": 3}


async def test_result_count_equal_to_limit_counts_as_reached(tmp_path: Path) -> None:
    """spec 13.13: the notice appears when result count >= limit"""
    touch(tmp_path, "a.txt", "b.txt")
    result = await run_tool(create_find_tool(), {"pattern": "*.txt", "limit": 2}, tmp_path)
    assert text_of(result).endswith("\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]")


async def test_byte_limit(tmp_path: Path) -> None:
    """spec 13.13: bytes-only truncateHead, `50.0KB limit reached`, details.truncation"""
    names = [f"{i:04d}_{'n' * 200}.txt" for i in range(300)]
    touch(tmp_path, *names)
    result = await run_tool(create_find_tool(), {"pattern": "*.txt"}, tmp_path)
    body, _ = byte_limited_body(result)
    assert body.split("\n") == names[: len(body.split("\n"))]


# --- custom glob operation (remote backends) -----------------------------------------------------


async def test_custom_glob_operation(tmp_path: Path) -> None:
    """spec 13.14: exists check, ignore list, `{L} results limit reached`"""
    calls: list[tuple[str, str, GlobOptions]] = []

    async def exists(path: str) -> bool:
        return path == "/remote/ws"

    async def glob(pattern: str, cwd: str, options: GlobOptions) -> list[str]:
        calls.append((pattern, cwd, options))
        return ["/remote/ws/a.ts", "sub/b.ts", "/remote/ws/dir/"]

    tool = create_find_tool(operations=FindOperations(exists=exists, glob=glob))
    result = await run_tool(tool, {"pattern": "*.ts", "limit": 3}, "/remote/ws")
    assert text_of(result) == "a.ts\nsub/b.ts\ndir/\n\n[3 results limit reached]"
    assert wire_details(result) == {"resultLimitReached": 3}
    assert calls == [("*.ts", "/remote/ws", GlobOptions(ignore=["**/node_modules/**", "**/.git/**"], limit=3))]

    with pytest.raises(ToolError) as info:
        await run_tool(tool, {"pattern": "*", "path": "/elsewhere"}, "/remote/ws")
    assert str(info.value) == "Path not found: /elsewhere"


def test_relativize_keeps_trailing_separator() -> None:
    """spec 13.12"""
    assert relativize("/w/a/b/", "/w") == "a/b/"
    assert relativize("/w/a/b", "/w") == "a/b"
    assert relativize("rel/x", "/w") == "rel/x"


# --- the glob translation against fnmatch -------------------------------------------------------


@given(
    pattern=st.text(alphabet="ab.*?", min_size=1, max_size=8),
    name=st.text(alphabet="ab.", min_size=1, max_size=8),
)
def test_simple_globs_agree_with_fnmatch(pattern: str, name: str) -> None:
    """spec 13.11: on file names, `*` and `?` mean what they mean everywhere"""
    ours = re.fullmatch(glob_to_regex(pattern), name, re.DOTALL) is not None
    assert ours == fnmatch.fnmatchcase(name, pattern)


@given(
    parts=st.lists(st.sampled_from(["a", "b", "**", "*"]), min_size=1, max_size=4),
    path=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5),
)
def test_double_star_spans_whole_components(parts: list[str], path: list[str]) -> None:
    """spec 13.11: `**` matches zero or more whole directories, `*` exactly one name"""
    pattern = "/".join(parts)
    ours = re.fullmatch(glob_to_regex(pattern), "/".join(path), re.DOTALL) is not None
    assert ours == _reference_match(parts, path)


def _reference_match(parts: list[str], path: list[str], first: bool = True) -> bool:
    """globset's reading: `**` spans zero or more components, but a trailing `/**` at least one."""
    if not parts:
        return not path
    head, rest = parts[0], parts[1:]
    if head == "**":
        if not rest:
            return first or len(path) >= 1
        return any(_reference_match(rest, path[i:], False) for i in range(len(path) + 1))
    if not path:
        return False
    return head in ("*", path[0]) and _reference_match(rest, path[1:], False)

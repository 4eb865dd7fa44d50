"""The plugin's `---@param` annotations name the parameters of the function they document, all of
them and in order (LuaLS's `undefined-doc-param` and `incomplete-signature-doc`). luacheck
(`make lint-nvim`) does not read annotations, and no LuaLS is installable from the registries the
project uses; this is the part of its check that a line scan can do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import PLUGIN

# `function M.name(a, b)`, `local function name(a)`, `M.name = function(a)`, `key = function(a)`.
FUNCTION = re.compile(r"^\s*(?:local\s+)?(?:function\s+[\w.:]+|[\w.\[\]\"]+\s*=\s*function)\s*\(([^)]*)\)")
PARAM = re.compile(r"^\s*---@param\s+([\w.]+)\??\s")


def lua_files() -> list[Path]:
    return sorted(p for folder in ("lua", "plugin") for p in (PLUGIN / folder).rglob("*.lua"))


def signature_problems(text: str, name: str) -> list[str]:
    """Each function in `text` whose `---@param` lines differ from its parameters, and each
    `---@param` block that documents no function; `name` is the file the messages cite."""
    problems: list[str] = []
    annotated: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if (param := PARAM.match(line + " ")) is not None:
            annotated.append(param.group(1))
            continue
        if line.lstrip().startswith("---") or not annotated:
            continue
        if (function := FUNCTION.match(line)) is None:
            problems.append(f"{name}:{number}: ---@param {', '.join(annotated)} documents no function")
        else:
            params = [p.strip() for p in function.group(1).split(",") if p.strip()]
            if params != annotated:
                found, documented = ", ".join(params), ", ".join(annotated)
                problems.append(f"{name}:{number}: parameters ({found}), annotated ({documented})")
        annotated = []
    return problems


@pytest.mark.parametrize("path", lua_files(), ids=lambda p: str(p.relative_to(PLUGIN)))
def test_param_annotations_match_the_signature(path: Path) -> None:
    assert signature_problems(path.read_text(encoding="utf-8"), str(path.relative_to(PLUGIN))) == []


def test_the_scan_finds_the_plugins_annotations() -> None:
    lines = [line for path in lua_files() for line in path.read_text(encoding="utf-8").splitlines()]
    assert sum(PARAM.match(line + " ") is not None for line in lines) > 100


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            "---@param name string\n---@param count integer\nlocal function f(name, total)\nend\n",
            "probe.lua:3: parameters (name, total), annotated (name, count)",
        ),
        (
            "---@param gen table\nlocal function f(gen, code)\nend\n",
            "probe.lua:2: parameters (gen, code), annotated (gen)",
        ),
        ("---@param cb fun()\nlocal pending = {}\n", "probe.lua:2: ---@param cb documents no function"),
    ],
    ids=["renamed", "incomplete", "orphan"],
)
def test_a_drifted_annotation_is_reported(source: str, problem: str) -> None:
    assert signature_problems(source, "probe.lua") == [problem]


def test_methods_varargs_and_assigned_functions_are_read() -> None:
    source = (
        "---@param a integer\n---@param ... any\nfunction M:m(a, ...)\nend\n"
        "---@param x string\nM.f = function(x)\nend\n"
        "local t = {\n  ---@param code integer\n  on_exit = function(code)\n  end,\n}\n"
    )
    assert signature_problems(source, "probe.lua") == []

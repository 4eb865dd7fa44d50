"""protocol/schema.json describes a tool result's `details`: each built-in tool's results carry the
`…Details` its `toolDetails` entry names, and what they carry on the wire validates against it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
from msgspec import UNSET

from pi_rpc.agent.types import AgentToolResult
from pi_rpc.modes.jsonrpc.schema import build_schema
from pi_rpc.tools.registry import BUILTIN_TOOLS, TOOL_DETAILS, create_tool_definitions

from ..tools.helpers import run_tool

pytestmark = pytest.mark.anyio

SCHEMA = build_schema()
# A call of each built-in tool that has something to report (a limit hit, an edit made).
CALLS: dict[str, dict[str, Any]] = {
    "read": {"path": "long.txt"},
    "bash": {"command": "seq 3000"},
    "edit": {"path": "a.txt", "edits": [{"oldText": "hit one", "newText": "hit 1"}]},
    "write": {"path": "new.txt", "content": "new\n"},
    "grep": {"pattern": "hit", "limit": 1},
    "find": {"pattern": "*.txt", "limit": 1},
    "ls": {"limit": 1},
}


def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """`schema` with the protocol's `$defs` to resolve its references in."""
    return jsonschema.Draft202012Validator({**schema, "$defs": SCHEMA["$defs"]})


def details_schema(name: str) -> jsonschema.Draft202012Validator:
    return validator(SCHEMA["toolDetails"][name])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("hit one\nhit two\n")
    (tmp_path / "b.txt").write_text("nothing\n")
    (tmp_path / "long.txt").write_text("".join(f"line {n}\n" for n in range(3000)))
    return tmp_path


def test_every_built_in_tool_is_called_here_and_named_in_tool_details() -> None:
    # powershell is bash's shell tool on another shell: the same details (and no pwsh here).
    assert set(CALLS) | {"powershell"} == set(BUILTIN_TOOLS)
    assert set(SCHEMA["toolDetails"]) == set(TOOL_DETAILS) == set(BUILTIN_TOOLS)
    assert TOOL_DETAILS["powershell"] is TOOL_DETAILS["bash"]


@pytest.mark.parametrize("name", sorted(CALLS))
async def test_a_tools_details_are_its_declared_struct_and_validate_against_the_schema(
    workspace: Path, name: str
) -> None:
    [tool] = create_tool_definitions([name]).values()
    result: AgentToolResult = await run_tool(tool, CALLS[name], workspace)
    if name == "write":
        # A write reports details only when the user kept some of its hunks (their outcome):
        # test_jsonrpc_hunks_inprocess.py checks that outcome.
        assert result.details is UNSET
        return
    assert type(result.details) is TOOL_DETAILS[name]
    wire = msgspec.to_builtins(result.details)
    assert wire  # something to report: the schema is checked against a real value
    details_schema(name).validate(wire)


def test_tool_results_point_at_the_details_and_another_tools_may_be_any_object() -> None:
    defs = SCHEMA["$defs"]
    for struct in ("AgentToolResult", "ToolResultMessage"):
        assert defs[struct]["properties"]["details"] == {"$ref": "#/$defs/ToolResultDetails"}
    details = validator({"$ref": "#/$defs/ToolResultDetails"})
    details.validate({})  # an error result's
    details.validate({"structured": [1, 2]})  # an MCP server's, say
    with pytest.raises(jsonschema.ValidationError):
        details.validate("text")
    with pytest.raises(jsonschema.ValidationError):
        details_schema("bash").validate({"truncation": {"truncated": "yes"}})

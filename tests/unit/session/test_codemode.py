"""The codemode tool in a real session: scripts in the QuickJS child call the real tools through
the same pipeline as the model's own calls (validation, approvals, events), and every limit ends
as an error result the model reads while the session keeps working."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from pi_rpc.agent.types import (
    EntryAppended,
    ToolApprovalRequest,
    ToolCallContext,
    ToolErrorWithResult,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
)
from pi_rpc.ai.types import AssistantMessage, TextContent, ToolResultMessage, declared_tools
from pi_rpc.session.approvals.gate import ApprovalDecision, ApprovalRules, parse_rules
from pi_rpc.session.configuration.config import ApprovalConfig
from pi_rpc.session.mcp_tools import callable_tools
from pi_rpc.tools.codemode import CodemodeParams, SourceError, create_codemode_tool, describe, parse_source
from pi_rpc.tools.codemode_sandbox import Limits
from pi_rpc.tools.registry import ToolSelection, create_tool_definitions
from tests.mcp.servers import stdio_config

from .helpers import Events, FakeUser, open_session, reply, script, session_config, tool_call

pytestmark = pytest.mark.anyio
TOOLS = ["read", "bash", "ls", "write", "codemode"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(3):
        (ws / f"f{n}.txt").write_text(f"line {n}\nneedle {n}\n")
    return ws


def config(workspace: Path, code: str, **overrides: Any) -> Any:
    run = reply("^go", [tool_call("codemode", code=code)], [{"text": "done"}])
    tools = create_tool_definitions(TOOLS)
    if "limits" in overrides:
        tools["codemode"] = create_codemode_tool(overrides.pop("limits"))
    return session_config(workspace, script(run), definitions=tools, **overrides)


async def run_code(workspace: Path, code: str, **overrides: Any) -> tuple[ToolResultMessage, Events]:
    async with open_session(config(workspace, code, **overrides)) as (session, events):
        await session.prompt("go")
        result = next(m for m in session.messages if isinstance(m, ToolResultMessage) and m.tool_name == "codemode")
        # the session still answers after whatever the script did
        assert isinstance(session.messages[-1], AssistantMessage)
        return result, events


def text(message: ToolResultMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def test_codemode_is_off_by_default_and_plus_codemode_turns_it_on() -> None:
    assert "codemode" in ToolSelection().registered()
    assert "codemode" not in ToolSelection().initial_active()
    assert "codemode" in ToolSelection(["+codemode"]).initial_active()


def test_the_description_is_pis_and_declared_tools_say_how_scripts_call_them() -> None:
    """Pi's default mode: declared tools carry a `Codemode:` line; codemode lists only the rest."""
    tools = create_tool_definitions(["read", "bash", "codemode"])
    peers = list(tools.values())
    declared = tools["codemode"].declaration(peers)
    assert declared.description.startswith("Run JavaScript that calls other tools. The input is raw JavaScript")
    assert "Nested tools:" not in declared.description
    assert declared.description == describe([])
    assert declared.parameters["required"] == ["code"]
    assert declared.parameters["properties"]["code"] == {"type": "string", "description": "Raw JavaScript source."}
    bash = tools["bash"].declaration(peers).description
    assert bash.endswith(
        "\n\nCodemode: `tools.bash(args)` resolves to "
        "`{ output, truncated, full_output_path?, exit_code, wall_time_seconds }`."
    )
    assert "Codemode:" not in tools["bash"].declaration([tools["bash"]]).description  # only while codemode is active


async def test_a_script_reads_files_and_only_its_output_reaches_the_model(workspace: Path) -> None:
    code = (
        'const names = ["f0.txt", "f1.txt", "f2.txt"];\n'
        "const texts = await Promise.all(names.map((path) => tools.read({ path })));\n"
        'console.log("read", texts.length);\n'
        'return texts.flatMap((t) => t.split("\\n")).filter((l) => l.startsWith("needle")).join(",");'
    )
    result, events = await run_code(workspace, code)
    assert not result.is_error
    assert text(result).startswith("Script completed\nWall time ")
    assert "needle 0,needle 1,needle 2" in text(result)
    assert "<console_output>\nread 3\n</console_output>" in text(result)
    codemode_id = result.tool_call_id
    inner = [e for e in events.all if isinstance(e, ToolExecutionStart) and e.tool_name == "read"]
    assert sorted(e.tool_call_id for e in inner) == [f"{codemode_id}/{n}" for n in (1, 2, 3)]
    assert all(e.parent_tool_call_id == codemode_id for e in inner)
    ends = [e for e in events.all if isinstance(e, ToolExecutionEnd) and e.parent_tool_call_id == codemode_id]
    assert len(ends) == 3 and not any(e.is_error for e in ends)
    rows = [e for e in events.all if isinstance(e, ToolExecutionUpdate) and e.tool_call_id == codemode_id]
    assert rows[-1].partial_result.details["calls"][-1]["status"] == "ok"


async def test_bash_resolves_to_pis_structured_value_even_when_the_command_fails(workspace: Path) -> None:
    code = (
        'const r = await tools.bash({ command: "echo out; exit 3" });\n'
        "return `${r.exit_code}|${r.output.trim()}|${r.truncated}`;"
    )
    result, events = await run_code(workspace, code)
    assert not result.is_error and "3|out|false" in text(result)
    end = next(e for e in events.all if isinstance(e, ToolExecutionEnd) and e.tool_name == "bash")
    assert end.is_error  # the call itself failed, as the editor shows it


def test_tools_only_scripts_reach_are_listed_with_pis_declarations_and_never_declared() -> None:
    tools = create_tool_definitions(["read", "bash", "codemode"])
    tools["read"].exposure = tools["bash"].exposure = "codemode"
    description = tools["codemode"].declaration(list(tools.values())).description
    assert "Nested tools:\n\n### `read`" in description
    assert "codemode tool declaration:\n```ts\ndeclare const tools: { bash(args: {" in description
    assert "  exit_code: number;" in description and "wall_time_seconds: number;" in description
    assert 'Promise<string | { data: string; mimeType: string; note: string; type: "image"; }>' in description


async def test_a_tool_only_scripts_reach_is_not_found_for_the_model_but_runs_in_a_script(workspace: Path) -> None:
    tools = create_tool_definitions(TOOLS)
    tools["ls"].exposure = "codemode"
    run = reply(
        "^go",
        [tool_call("ls")],
        [tool_call("codemode", code="return await tools.ls({});")],
        [{"text": "done"}],
    )
    async with open_session(session_config(workspace, script(run), definitions=tools)) as (session, _):
        await session.prompt("go")
    direct, scripted = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    assert direct.is_error and text(direct) == "Tool ls not found"
    assert not scripted.is_error and "f0.txt" in text(scripted)


async def test_bad_arguments_and_unknown_tools_reject_inside_the_script(workspace: Path) -> None:
    code = (
        "const a = await tools.read({}).catch((e) => `bad: ${e.message}`);\n"
        "const b = await tools.nope({}).catch((e) => `unknown: ${e.message}`);\n"
        "text(a); text(b);"
    )
    result, _ = await run_code(workspace, code)
    assert not result.is_error
    assert "==> text 1/2 <==\nbad: " in text(result) and "path" in text(result)
    assert "==> text 2/2 <==\nunknown: Unknown tool: nope" in text(result)


async def test_a_denied_tool_is_refused_inside_the_script_as_outside(workspace: Path) -> None:
    code = 'return await tools.bash({ command: "rm -rf f0.txt" });'
    rules = ApprovalRules(deny=parse_rules(["bash(rm:*)"]))
    result, events = await run_code(workspace, code, approvals=ApprovalConfig(policy="auto", rules=rules))
    assert result.is_error and "Script failed" in text(result)
    assert "bash (error)" in text(result)
    assert (workspace / "f0.txt").exists()
    end = next(e for e in events.all if isinstance(e, ToolExecutionEnd) and e.tool_name == "bash")
    assert end.is_error and end.parent_tool_call_id == result.tool_call_id


async def test_a_thrown_error_keeps_the_output_and_names_the_calls(workspace: Path) -> None:
    result, _ = await run_code(workspace, 'text("before");\nawait tools.ls({});\nthrow new TypeError("boom");')
    assert result.is_error
    body = text(result)
    assert body.startswith("Script failed\n") and "before" in body
    assert "Script error:\nTypeError: boom" in body and "ls (ok)" in body


@pytest.mark.parametrize("outcome", ["allow", "reject"])
async def test_the_editor_is_asked_about_a_scripts_write_and_its_answer_decides(workspace: Path, outcome: str) -> None:
    code = 'return await tools.write({ path: "new.txt", content: "hi\\n" }).catch((e) => `refused: ${e.message}`);'
    editor = FakeUser(
        ApprovalDecision(outcome="allow") if outcome == "allow" else ApprovalDecision(outcome="reject", reason="no")
    )
    async with open_session(config(workspace, code)) as (session, events):
        session.set_approver(editor)
        await session.prompt("go")
        result = next(m for m in session.messages if isinstance(m, ToolResultMessage) and m.tool_name == "codemode")
    assert [r.tool_name for r in editor.asked] == ["write"]
    assert editor.asked[0].tool_call_id == f"{result.tool_call_id}/1"
    assert (workspace / "new.txt").exists() == (outcome == "allow")
    if outcome == "reject":
        assert "refused: The user rejected this write call: no" in text(result)
    assert any(isinstance(e, ToolApprovalRequest) for e in events.all)


LIMITS = Limits(memory_bytes=32 * 1024 * 1024, timeout_ms=1500, max_calls=3)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("while (true) {}", "Script timed out: Execution timed out after 1500 ms"),
        ("const a = []; while (true) a.push('x'.repeat(4096) + a.length);", "out of memory"),
        ("for (let i = 0; i < 5; i++) await tools.ls({});", "Too many tool calls: a script may make at most 3"),
        ("function f() { return f(); } f();", "RangeError"),
        ("await new Promise(() => {});", "never settles"),
        ("this is not javascript", "SyntaxError"),
    ],
)
async def test_each_limit_is_an_error_result_and_the_daemon_goes_on(workspace: Path, code: str, expected: str) -> None:
    result, _ = await run_code(workspace, code, limits=LIMITS)
    assert result.is_error and expected in text(result)


async def test_abort_stops_the_script_and_its_running_tool_at_once(workspace: Path) -> None:
    code = 'await tools.bash({ command: "sleep 60" });'
    async with open_session(config(workspace, code)) as (session, events):
        session.runs.start("go")
        await events.wait_for(lambda e: isinstance(e, ToolExecutionStart) and e.tool_name == "bash")
        await session.abort()
        ends = [e for e in events.all if isinstance(e, ToolExecutionEnd)]
        assert {e.tool_name for e in ends} == {"bash", "codemode"} and all(e.is_error for e in ends)
        assert not session.runs.is_streaming


async def test_abort_kills_a_script_that_never_yields(workspace: Path) -> None:
    """A busy loop never returns to the host: the child process is killed, far before the wall cap."""
    async with open_session(config(workspace, "while (true) {}")) as (session, events):
        session.runs.start("go")
        await events.wait_for(lambda e: isinstance(e, ToolExecutionUpdate) and e.tool_name == "codemode")
        with anyio.fail_after(20):  # the wall cap is 300 s: only the kill ends it this soon
            await session.abort()
        end = next(e for e in events.all if isinstance(e, ToolExecutionEnd) and e.tool_name == "codemode")
        assert end.is_error and not session.runs.is_streaming


async def test_store_values_are_kept_in_the_session_file_and_a_resumed_session_loads_them(workspace: Path) -> None:
    """Pi 1.6.0 keeps a successful script's `store()` writes as a `codemode-store` custom entry of
    the session: its clients are told (`entry_appended`), a failed script keeps nothing, and the
    session continued from its file loads what was stored (pi-rpc kept them in memory before)."""
    runs = [
        reply(
            "^one",
            [tool_call("codemode", code='store("n", 41); store("gone", 1); store("gone", undefined)')],
            [{"text": "stored"}],
        ),
        reply("^two", [tool_call("codemode", code='store("n", 0); throw new Error("no")')], [{"text": "failed"}]),
    ]
    first = session_config(workspace, script(*runs), definitions=create_tool_definitions(TOOLS), active=TOOLS)
    async with open_session(first) as (session, events):
        await session.prompt("one")
        await session.prompt("two")
        stored = session.history.session_file
    assert stored is not None
    kept = [json.loads(line) for line in (await anyio.Path(stored).read_text()).splitlines()[1:]]
    customs = [entry for entry in kept if entry["type"] == "custom"]
    assert [(entry["customType"], entry["data"]) for entry in customs] == [
        ("codemode-store", {"set": {"n": 41}, "delete": ["gone"]})
    ]
    assert [e.entry for e in events.all if isinstance(e, EntryAppended)] == customs
    again = reply("^three", [tool_call("codemode", code='return load("n") + 1')], [{"text": "done"}])
    tools = create_tool_definitions(TOOLS)
    resumed = session_config(workspace, script(again), definitions=tools, active=TOOLS, resume_from=Path(stored))
    async with open_session(resumed) as (session, _):
        await session.prompt("three")
        result = next(m for m in reversed(session.messages) if isinstance(m, ToolResultMessage))
    assert "42" in text(result)


async def test_a_script_outside_a_session_stores_nothing_and_the_stores_limits_are_pis() -> None:
    tool = create_codemode_tool()
    alone = ToolCallContext(cwd="/")
    await tool.execute(CodemodeParams(code='store("n", 41)'), alone)
    second = await tool.execute(CodemodeParams(code="return String(load('n'))"), alone)
    assert "undefined" in "".join(b.text for b in second.content if isinstance(b, TextContent))
    with pytest.raises(ToolErrorWithResult) as big:
        await tool.execute(CodemodeParams(code='store("big", "x".repeat(300000))'), alone)
    assert 'store("big") value has 300002 characters of JSON, more than the limit of 262144.' in str(big.value)
    with pytest.raises(ToolErrorWithResult) as keyed:
        await tool.execute(CodemodeParams(code="store(1, 2)"), alone)
    assert "TypeError: store() key must be a string" in str(keyed.value)


@seed(20261202)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_the_options_line_parser_accepts_or_refuses_with_pis_messages(first_line: str) -> None:
    source = f"// @options: {first_line}\nreturn 1"
    try:
        code, options = parse_source(source)
    except SourceError as exc:
        assert str(exc).startswith(("@options", "The "))
    else:
        assert code.strip() == "return 1"
        assert options.timeout_ms is None or options.timeout_ms > 0


async def test_output_over_the_budget_keeps_head_and_tail_and_spills_the_rest(workspace: Path) -> None:
    code = '// @options: {"max_output_tokens": 50}\nfor (let i = 0; i < 200; i++) console.log(`row ${i}`);'
    result, _ = await run_code(workspace, code)
    body = text(result)
    assert "Warning: truncated output (original token count:" in body and "row 0" in body and "row 199" in body
    assert "row 100\n" not in body
    spilled = result.details["fullOutputPath"]
    assert "row 100\n" in await anyio.Path(spilled).read_text()


FRAGMENTS = [
    "throw new Error('x');",
    "await tools.ls({});",
    "await tools.nope({ a: 1 });",
    "await tools.read({ path: 42 });",
    "text(JSON.stringify({ a: [1, 2] }));",
    "console.log(undefined, null, {});",
    "exit();",
    "store('k', { v: 1 }); load('k');",
    "return 7;",
    "[].x.y;",
    "await Promise.allSettled([tools.ls({}), tools.nope({})]);",
]


@seed(20261202)
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4))
def test_any_mix_of_failures_is_a_result_with_pis_header(workspace: Path, fragments: list[str]) -> None:
    async def one() -> None:
        result, _ = await run_code(workspace, "\n".join(fragments), limits=LIMITS)
        assert text(result).startswith(("Script completed\n", "Script failed\n"))
        assert result.is_error == text(result).startswith("Script failed")

    anyio.run(one)


async def test_an_mcp_servers_codemode_tools_are_called_only_from_scripts_and_codemode_turns_on(
    workspace: Path,
) -> None:
    """Pi 1.6.0's default MCP exposure, `codemode`: the server's tools are never declared to the
    model nor listed in codemode's description; scripts find them (`ALL_TOOLS`) and call them, the
    model calling one itself is told it is not found, and the codemode tool is activated for them
    (pi-rpc declared them as direct tools before)."""
    server = stdio_config()
    server.exposure = "codemode"
    runs = reply(
        "^go",
        [tool_call("mcp__testkit__shout", text="direct")],
        [
            tool_call(
                "codemode",
                code='text(ALL_TOOLS.map((t) => t.name).join(","));'
                ' return await tools.mcp__testkit__shout({ text: "from a script" })',
            )
        ],
        [{"text": "done"}],
    )
    tools = create_tool_definitions(["read", "codemode"])
    config = session_config(workspace, script(runs), definitions=tools, active=["read"], mcp_servers=[server])
    async with open_session(config) as (session, _):
        await session.start_mcp_servers()
        infos = {info.name: info.active for info in session.tool_infos()}
        assert infos["codemode"] is True and infos["mcp__testkit__shout"] is False
        assert "\n- mcp__testkit (codemode)" in session.system_prompt
        assert "Call the tools of `codemode` servers from codemode scripts." in session.system_prompt
        peers = callable_tools(session._definitions, session.active_tools)
        assert "mcp__testkit" not in session._definitions["codemode"].declaration(peers).description
        await session.prompt("go")
        declared = {tool.name for tool in declared_tools(session.messages)}
        results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
        await session.close()
    assert declared == {"read", "codemode"}
    assert [(m.tool_name, m.is_error) for m in results] == [("mcp__testkit__shout", True), ("codemode", False)]
    assert text(results[0]) == "Tool mcp__testkit__shout not found"
    assert "mcp__testkit__shout" in text(results[1]) and text(results[1]).endswith("FROM A SCRIPT")


async def test_a_deferred_servers_tools_are_callable_from_scripts_before_tool_search_loads_them(
    workspace: Path,
) -> None:
    """Pi 1.6.0 gives `deferred` MCP tools the tool exposure `deferred`, as `codemode` ones: not
    declared until `tool_search` loads them, but a script calls them from the start (pi-rpc's
    scripts could not reach them before they were loaded)."""
    server = stdio_config()
    server.exposure = "deferred"
    runs = reply(
        "^go",
        [tool_call("codemode", code='return await tools.mcp__testkit__shout({ text: "unloaded" })')],
        [{"text": "done"}],
    )
    tools = create_tool_definitions(["read", "codemode"])
    config = session_config(
        workspace, script(runs), definitions=tools, active=["read", "codemode"], mcp_servers=[server]
    )
    async with open_session(config) as (session, _):
        await session.start_mcp_servers()
        infos = {info.name: info.active for info in session.tool_infos()}
        assert infos["tool_search"] is True and infos["mcp__testkit__shout"] is False
        await session.prompt("go")
        results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
        declared = {tool.name for tool in declared_tools(session.messages)}
        await session.close()
    assert declared == {"read", "codemode", "tool_search"}
    assert [(m.tool_name, m.is_error) for m in results] == [("codemode", False)]
    assert text(results[0]).endswith("UNLOADED")


async def test_tool_search_loads_a_codemode_servers_tool_and_the_model_then_calls_it(workspace: Path) -> None:
    """Pi 1.6.0's `tool_search` searches every undeclared tool, `codemode` exposure too: once it
    loads one, the tool is declared from the next call and the model's own call runs."""
    server = stdio_config()
    server.exposure, server.tool_exposure = "codemode", {"pixel": "deferred"}
    runs = reply(
        "^go",
        [tool_call("tool_search", query="shout")],
        [tool_call("mcp__testkit__shout", text="loaded")],
        [{"text": "done"}],
    )
    tools = create_tool_definitions(["read", "codemode"])
    config = session_config(workspace, script(runs), definitions=tools, active=["read"], mcp_servers=[server])
    async with open_session(config) as (session, _):
        await session.start_mcp_servers()
        await session.prompt("go")
        results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
        declared = {tool.name for tool in declared_tools(session.messages)}
        await session.close()
    assert [(m.tool_name, m.is_error) for m in results] == [("tool_search", False), ("mcp__testkit__shout", False)]
    assert text(results[0]).startswith("Loaded 1 tool. They are available from your next call:\n- mcp__testkit__shout")
    assert text(results[1]) == "LOADED"
    assert {"codemode", "tool_search", "mcp__testkit__shout"} <= declared


async def test_auto_enable_codemode_false_leaves_codemode_off_and_says_the_tools_cannot_be_called(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = stdio_config()
    server.exposure = "codemode"
    tools = create_tool_definitions(["read", "codemode"])
    config = session_config(
        workspace, None, definitions=tools, active=["read"], mcp_servers=[server], auto_enable_codemode=False
    )
    async with open_session(config) as (session, _):
        await session.start_mcp_servers()
        infos = {info.name: info.active for info in session.tool_infos()}
        await session.close()
    assert infos["codemode"] is False and "tool_search" not in infos
    assert (
        "MCP tools are only reachable from the codemode or tool_search tool, but neither is active "
        "(autoEnableCodemode is false); they cannot be called."
    ) in caplog.messages

"""The codemode tool: the model writes JavaScript that calls the other active tools (Pi 1.6.0's
`codemode`, registered inactive; `--tools +codemode` turns it on).

The name, the parameter schema, the prompt snippet and guideline and the description's opening and
globals are Pi's words, so a model tuned on Pi's prompt writes the same scripts. The script runs in
QuickJS in a child process (codemode_sandbox.py); each `tools.<name>()` call goes back through the
agent's tool pipeline (`ToolCallContext.execute_tool`: validation, approvals, checkpoints, events
with `parentToolCallId`). Only the script's output reaches the model, laid out as Pi lays it out:
the "Script completed"/"Script failed" header, `==> text N/M <==` items, one `<console_output>`
block, a token budget with the full text spilled to a temp file.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import time
from collections.abc import Sequence
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from pi_rpc.agent import AgentTool, AgentToolResult, CustomEntries, ToolCallContext, ToolErrorWithResult
from pi_rpc.ai import TextContent, json_schema_of
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.codemode_sandbox import Limits, ScriptOutcome, run_script

CODEMODE_TOOL_NAME = "codemode"
# Pi 1.6.0's custom entry holding one successful script's `store()` writes, `{set, delete}`.
STORE_ENTRY_TYPE = "codemode-store"
PROMPT_SNIPPET = "Run JavaScript that calls other tools"
PROMPT_GUIDELINES = [
    "Use codemode to batch independent tool calls (Promise.allSettled), chain them, or filter large output, "
    "instead of many separate calls."
]
DESCRIPTION_INTRO = (
    "Run JavaScript that calls other tools. The input is raw JavaScript (not JSON, no code fence), run as an "
    "async function body in a QuickJS sandbox: top-level `await` and `return` work. No Node, file system, "
    "network, or timers.\n"
    "- `await tools.<name>({ ...args })` resolves to a string, or an object if the tool's declaration says so, "
    "and rejects with an Error on failure. A tool whose declaration returns an object resolves on failure too "
    "when it returned that object; check its fields. Calls still running when the script ends are cancelled.\n"
    '- Optional first line: `// @options: {"max_output_tokens": 10000, "timeout_ms": 60000}`'
)
GLOBALS = (
    "Globals:\n"
    "- `text(value)`, `image(dataUrlOrImageBlock)`, `console.log(...)`, and top-level `return` add output; "
    "`exit()` ends the script. With several text items, each starts with a `==> text N/M <==` line, and "
    "`console` lines follow the other output in one `<console_output>` block. `image()` also saves the image "
    "to a temp file and the result names its path.\n"
    "- `store(key, value)` and `load(key)` keep JSON values across codemode calls.\n"
    "- `ALL_TOOLS`, `await searchTools(query, { limit?, namespace? })`, `await describeTool(name)`, "
    "`await describeNamespace(name)`: find unlisted tools, such as MCP tools."
)
OPTIONS_PREFIX = "// @options:"
DEFAULT_MAX_OUTPUT_TOKENS = 10_000
CHARS_PER_TOKEN = 4
MAX_TIMEOUT_MS = 2_147_483_647
# Pi's heap cap for the VM (execute.js CODEMODE_MEMORY_LIMIT_BYTES).
DEFAULT_MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
# Pi has no wall-time cap unless the script asks; a daemon serving editors keeps one.
DEFAULT_TIMEOUT_MS = 300_000
# Pi records at most 256 nested calls per script (nested-tool-calls.js); here it is also the cap.
DEFAULT_MAX_CALLS = 256
INLINE_BUDGET_TOKENS = 3000  # Pi's `codemode.inlineBudget` default


class CodemodeParams(msgspec.Struct, kw_only=True):
    code: Annotated[str, Meta(description="Raw JavaScript source.")]


class SourceError(ValueError):
    """The input is not a script Pi would run (empty, or a bad `// @options:` line)."""


class SourceOptions(msgspec.Struct, frozen=True):
    max_output_tokens: int | None = None
    timeout_ms: int | None = None


def parse_source(source: str) -> tuple[str, SourceOptions]:
    """The script and its `// @options:` line, with Pi's checks and messages (source.js)."""
    fields = "`max_output_tokens` and `timeout_ms`"
    if not source.strip():
        raise SourceError(
            "Expected JavaScript source text (non-empty). Provide JS only, optionally with a first line "
            '`// @options: {"max_output_tokens": 1000}`.'
        )
    lines = source.split("\n")
    for number, line in enumerate(lines[1:], start=2):
        if line.lstrip().startswith(OPTIONS_PREFIX):
            raise SourceError(
                f"The {OPTIONS_PREFIX} line must be the first line of the input; found one on line {number}"
            )
    first = lines[0].rstrip("\r").lstrip()
    if not first.startswith(OPTIONS_PREFIX):
        return source, SourceOptions()
    code = "\n".join(lines[1:])
    if not code.strip():
        raise SourceError("The @options line must be followed by JavaScript source on subsequent lines")
    try:
        value = json.loads(first[len(OPTIONS_PREFIX) :].strip())
    except ValueError as exc:
        raise SourceError(f"@options must be valid JSON with supported fields {fields}: {exc}") from None
    if not isinstance(value, dict):
        raise SourceError(f"@options must be a JSON object with supported fields {fields}")
    for key in value:
        if key not in ("max_output_tokens", "timeout_ms"):
            raise SourceError(f"@options only supports {fields}; got `{key}`")
    tokens, timeout = value.get("max_output_tokens"), value.get("timeout_ms")
    if tokens is not None and (type(tokens) is not int or tokens < 0):
        raise SourceError("@options field `max_output_tokens` must be a non-negative safe integer")
    if timeout is not None and (type(timeout) is not int or not 0 < timeout <= MAX_TIMEOUT_MS):
        raise SourceError(f"@options field `timeout_ms` must be a positive integer up to {MAX_TIMEOUT_MS}")
    return "\n" + code, SourceOptions(tokens, timeout)


def sample_of(tool: AgentTool) -> str:
    from pi_rpc.tools.codemode_declarations import tool_sample
    from pi_rpc.tools.codemode_values import OUTPUT_SCHEMAS

    return tool_sample(tool.name, tool.description, json_schema_of(tool.parameters), OUTPUT_SCHEMAS.get(tool.name))


def describe(peers: Sequence[AgentTool]) -> str:
    """Pi's description: the intro, the globals and one section per callable tool within the
    inline budget (tools past it stay reachable through `ALL_TOOLS` and `describeTool`)."""
    sections = [DESCRIPTION_INTRO, GLOBALS]
    # Pi's default `codemode.mode` "on": tools the model has declared say how scripts call them
    # (`annotate`); this list holds only the tools reachable from scripts alone.
    callable_tools = [tool for tool in peers if tool.name != CODEMODE_TOOL_NAME and tool.exposure == "codemode"]
    if not callable_tools:
        return "\n\n".join(sections)
    from pi_rpc.tools.codemode_declarations import script_identifier

    listed = ["Nested tools:"]
    remaining = INLINE_BUDGET_TOKENS
    sections_by_cost = []
    for tool in callable_tools:
        ident = script_identifier(tool.name)
        heading = f"### `{ident}`" if ident == tool.name else f"### `{ident}` (`{tool.name}`)"
        section = f"{heading}\n{sample_of(tool)}"
        sections_by_cost.append((-(-len(section) // CHARS_PER_TOKEN), tool.name, section))
    # Cheapest first within the budget, then listed in the tools' own order (Pi's selectCatalog
    # for tools without a namespace).
    shown = set()
    for cost, name, _ in sorted(sections_by_cost, key=lambda entry: entry[0]):
        if cost > remaining:
            break
        remaining -= cost
        shown.add(name)
    listed += [section for _, name, section in sections_by_cost if name in shown]
    sections.append("\n\n".join(listed))
    return "\n\n".join(sections)


def format_output(outcome: ScriptOutcome) -> list[str]:
    """Pi's layout: numbered text items when there are several, then the console block."""
    items = [item for item in outcome.output if not item.get("console")]
    if outcome.ok and outcome.value is not None:
        items.append({"type": "text", "text": outcome.value})
    console = [str(item["text"]) for item in outcome.output if item.get("console")]
    texts = [str(item["text"]) for item in items]
    if len(texts) > 1:
        texts = [f"==> text {n}/{len(texts)} <==\n{text}" for n, text in enumerate(texts, start=1)]
    if console:
        texts.append("<console_output>\n" + "\n".join(console) + "\n</console_output>")
    return texts


def join_texts(texts: list[str]) -> str:
    """Adjacent text items as one, each starting on its own line (Pi's joinAdjacentText)."""
    joined = ""
    for text in texts:
        if joined and not joined.endswith("\n"):
            joined += "\n"
        joined += text
    return joined


def truncate_output(text: str, max_tokens: int) -> tuple[str, str | None]:
    """Within the token budget, or its head and tail with the full text in a temp file."""
    budget = max_tokens * CHARS_PER_TOKEN
    if len(text) <= budget:
        return text, None
    head_chars = budget // 2
    tail_chars = budget - head_chars
    removed = len(text) - head_chars - tail_chars
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    notice = (
        f"Warning: truncated output (original token count: {-(-len(text) // CHARS_PER_TOKEN)})\n"
        f"Total output lines: {len(text.split(chr(10)))}\n\n"
        f"{text[:head_chars]}…{-(-removed // CHARS_PER_TOKEN)} tokens truncated…{tail}"
    )
    path = os.path.join(tempfile.gettempdir(), f"pi-codemode-{secrets.token_hex(8)}.txt")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        return f"{notice}\n\n[Could not save the full output: {exc}]", None
    return f"{notice}\n\n[Full output: {path} (read with offset/limit)]", path


class CallRecord(msgspec.Struct):
    """One nested call as the codemode call's `details.calls` shows it (Pi's call rows)."""

    id: str
    name: str
    args: str
    status: str = "running"
    error: str | None = None


def annotate(tool: AgentTool, description: str) -> str:
    """A declared tool's description while codemode is active: how a script calls it and what the
    call resolves to (Pi's describeScriptCall)."""
    from pi_rpc.tools.codemode_declarations import describe_output, script_identifier
    from pi_rpc.tools.codemode_values import OUTPUT_SCHEMAS

    resolves = describe_output(tool.name, OUTPUT_SCHEMAS.get(tool.name))
    return f"{description.strip()}\n\nCodemode: `tools.{script_identifier(tool.name)}(args)` resolves to {resolves}."


def _head(error: ScriptOutcome, timeout_ms: int) -> str:
    if error.error_kind == "script":
        return error.error
    if error.error_kind == "memory":
        return "InternalError: out of memory"
    if error.error_kind == "timeout":
        return f"Script timed out: Execution timed out after {timeout_ms} ms"
    if error.error_kind == "aborted":
        return f"Script aborted: {error.error}"
    return f"Script sandbox failed: {error.error}"


def stored_values(entries: CustomEntries | None) -> dict[str, Any]:
    """What `load()` sees: the `codemode-store` entries of the session's branch applied from the
    root, as Pi 1.6.0 reads them (a resumed session keeps its values, a branch sees only those
    written on its path); nothing outside a session."""
    values: dict[str, Any] = {}
    for data in entries.branch_data(STORE_ENTRY_TYPE) if entries is not None else []:
        if not _is_store_data(data):
            continue
        for key in data["delete"]:
            values.pop(key, None)
        values.update(data["set"])
    return values


def _is_store_data(data: Any) -> bool:
    deleted = data.get("delete") if isinstance(data, dict) else None
    return isinstance(data, dict) and isinstance(data.get("set"), dict) and isinstance(deleted, list)


class CodemodeRunner(msgspec.Struct):
    """One codemode tool: its limits and the tools its scripts may call. The values `store()` keeps
    live in the session (`stored_values`)."""

    limits: Limits = msgspec.field(
        default_factory=lambda: Limits(DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_TIMEOUT_MS, DEFAULT_MAX_CALLS)
    )
    # The tools of the last request that declared codemode: what its scripts may call.
    peers: Sequence[AgentTool] = ()

    async def execute(self, params: CodemodeParams, ctx: ToolCallContext) -> AgentToolResult:
        from pi_rpc.tools.codemode_values import script_value, text_of

        started = time.monotonic()
        code, options = parse_source(params.code)  # a SourceError is the model's error result
        calls: list[CallRecord] = []

        def publish() -> None:
            details = {"calls": [msgspec.structs.asdict(_row(call)) for call in calls]}
            ctx.on_update(AgentToolResult(content=[], details=details))

        publish()  # the row shows as running before the first nested call

        async def call_tool(name: str, args: Any) -> tuple[bool, Any]:
            record = CallRecord(id=f"{ctx.id}/?", name=name, args=json.dumps(args)[:200])
            calls.append(record)
            publish()
            if ctx.execute_tool is None:
                record.status = "error"
                return False, "Tool calls need a session"
            outcome = await ctx.execute_tool(name, args)
            record.id = outcome.call_id
            record.status = "error" if outcome.is_error else "ok"
            if outcome.is_error:
                record.error = (text_of(outcome.result) or f'Tool "{name}" failed')[:500]
            publish()
            return script_value(name, outcome.result, outcome.is_error)

        limits = self.limits
        if options.timeout_ms is not None:
            limits = Limits(limits.memory_bytes, min(options.timeout_ms, limits.timeout_ms), limits.max_calls)
        outcome = await run_script(code, self._catalog(), stored_values(ctx.custom_entries), limits, call_tool)
        for call in calls:
            if call.status == "running":
                call.status = "cancelled"
        writes = outcome.store_writes
        # Only a script that succeeded keeps its writes: one `codemode-store` entry, as Pi appends it.
        if outcome.ok and ctx.custom_entries is not None and (writes.get("set") or writes.get("delete")):
            ctx.custom_entries.append(
                STORE_ENTRY_TYPE, {"set": writes.get("set", {}), "delete": writes.get("delete", [])}
            )
        texts = format_output(outcome)
        if not outcome.ok:
            summary = (
                "No tool calls were made."
                if not calls
                else "Tool calls made before the failure (they are not undone): "
                + ", ".join(f"{call.name} ({call.status})" for call in calls)
            )
            texts.append(f"Script error:\n{_head(outcome, limits.timeout_ms)}\n\n{summary}")
        body, full_path = truncate_output(
            join_texts(texts),
            options.max_output_tokens if options.max_output_tokens is not None else DEFAULT_MAX_OUTPUT_TOKENS,
        )
        header = (
            f"{'Script completed' if outcome.ok else 'Script failed'}\n"
            f"Wall time {time.monotonic() - started:.1f} seconds\nOutput:\n"
        )
        details: dict[str, Any] = {"calls": [msgspec.structs.asdict(_row(call)) for call in calls]}
        if full_path is not None:
            details["fullOutputPath"] = full_path
        content = [TextContent(text=header)] + ([TextContent(text=body)] if body else [])
        if not outcome.ok:
            raise ToolErrorWithResult(header + body, details)
        return AgentToolResult(content=list(content), details=details)

    def _catalog(self) -> list[dict[str, str]]:
        from pi_rpc.tools.codemode_declarations import script_identifier

        return [
            {"id": script_identifier(tool.name), "name": tool.name, "sample": sample_of(tool)}
            for tool in self.peers
            if tool.name != CODEMODE_TOOL_NAME
        ]


class CallRow(msgspec.Struct, omit_defaults=True):
    id: str
    name: str
    args: str
    status: str
    error: str | None = None


def _row(call: CallRecord) -> CallRow:
    return CallRow(call.id, call.name, call.args, call.status, call.error)


def create_codemode_tool(limits: Limits | None = None) -> ToolDefinition:
    runner = CodemodeRunner() if limits is None else CodemodeRunner(limits=limits)

    def describe_and_remember(peers: Sequence[AgentTool]) -> str:
        # The request's active tools are the ones a script can call: keep them for the catalog.
        runner.peers = list(peers)
        return describe(peers)

    async def execute(params: CodemodeParams, ctx: ToolCallContext) -> AgentToolResult:
        return await runner.execute(params, ctx)

    return ToolDefinition(
        name=CODEMODE_TOOL_NAME,
        label=CODEMODE_TOOL_NAME,
        description=describe(()),
        parameters=CodemodeParams,
        execute=execute,
        describe=describe_and_remember,
        annotate_peer=annotate,
        prompt_snippet=PROMPT_SNIPPET,
        prompt_guidelines=list(PROMPT_GUIDELINES),
    )

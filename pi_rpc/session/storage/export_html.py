"""A session as one self-contained HTML page (Pi's `export_html` and `--export`), with what Pi's
page shows: a header (the session's id and date, the models used, the counts of messages, tool
calls, tokens and cost over every entry of the file; for a live session the system prompt and the
active tools), then every entry of the current branch from its first, nothing left out for a
compaction: each message (text escaped, tool calls with their arguments, tool results as
preformatted text), each compaction where it was made (`Compacted from N tokens` and its summary),
each branch summary, each switch of model, a Pi extension's message when Pi's chat shows it. No
scripts, no external resources, so the file opens anywhere and shows nothing but the session."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

import msgspec

from pi_rpc.ai import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    add_usage,
)
from pi_rpc.session.storage.entries import SessionEntries
from pi_rpc.session.storage.entry_kinds import Entry, ModelChangeEntry

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
section{border-left:4px solid #ccc;margin:1rem 0;padding:.25rem 1rem}
.user,.bashExecution,.custom{border-color:#3b82f6}.compactionSummary,.branchSummary{border-color:#f59e0b}.excluded{opacity:.6}.assistant{border-color:#10b981}.toolResult{border-color:#a3a3a3}
.error{border-color:#ef4444}h2{font-size:.8rem;text-transform:uppercase;color:#666;margin:.5rem 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.5rem}.thinking{color:#777}
dl{display:grid;grid-template-columns:max-content auto;gap:.25rem 1rem}dt{color:#666}dd{margin:0}"""


def _blocks(blocks: Sequence[object]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append(f"<pre>{html.escape(block.text)}</pre>")
        elif isinstance(block, ThinkingContent):
            parts.append(f'<pre class="thinking">{html.escape(block.thinking)}</pre>')
        elif isinstance(block, ToolCall):
            arguments = json.dumps(block.arguments, indent=2, ensure_ascii=False)
            parts.append(f"<p>Tool call <code>{html.escape(block.name)}</code></p><pre>{html.escape(arguments)}</pre>")
        elif isinstance(block, ImageContent):
            parts.append(f"<p>[image, {html.escape(block.mime_type)}]</p>")
    return "".join(parts)


def _section(message: Message) -> tuple[str, str] | None:
    """The (kind, contents) of a message's section; None for one a reader is not shown."""
    match message:
        case UserMessage(content=content):
            body = f"<pre>{html.escape(content)}</pre>" if isinstance(content, str) else _blocks(content)
            return "user", f"<h2>User</h2>{body}"
        case AssistantMessage(content=content, stop_reason=reason, error_message=error):
            failed = reason in ("error", "aborted")
            note = f"<p>{html.escape(str(error) if isinstance(error, str) else reason)}</p>" if failed else ""
            return ("assistant error" if failed else "assistant"), f"<h2>Assistant</h2>{_blocks(content)}{note}"
        case ToolResultMessage(tool_name=name, content=content, is_error=is_error):
            kind = "toolResult error" if is_error else "toolResult"
            return kind, f"<h2>{html.escape(name)} result</h2>{_blocks(content)}"
        case BashExecutionMessage(command=command, output=output):
            excluded = " excluded" if message.exclude_from_context else ""
            note = "".join(f"<p>{html.escape(n)}</p>" for n in _bash_notes(message))
            heading = f"<h2>User ran <code>{html.escape(command)}</code></h2>"
            return f"bashExecution{excluded}", f"{heading}<pre>{html.escape(output)}</pre>{note}"
        case CompactionSummaryMessage(summary=summary, tokens_before=tokens):
            # Pi's words, where the compaction was made; the turns it summarised come before it.
            return "compactionSummary", f"<h2>Compacted from {tokens:,} tokens</h2><pre>{html.escape(summary)}</pre>"
        case BranchSummaryMessage(summary=summary):
            return "branchSummary", f"<h2>Branch summary</h2><pre>{html.escape(summary)}</pre>"
        case CustomMessage(custom_type=kind, content=content, display=True):
            body = f"<pre>{html.escape(content)}</pre>" if isinstance(content, str) else _blocks(content)
            return "custom", f"<h2>{html.escape(kind)}</h2>{body}"
    return None  # a tool declaration (a system message); an extension's message Pi does not show


def _bash_notes(message: BashExecutionMessage) -> list[str]:
    notes = ["cancelled"] if message.cancelled else []
    if isinstance(message.exit_code, int) and message.exit_code != 0:
        notes.append(f"exit code {message.exit_code}")
    if message.truncated and message.full_output_path:
        notes.append(f"output truncated; full output: {message.full_output_path}")
    if message.exclude_from_context:
        notes.append("not sent to the model")
    return notes


def _entry_section(entry: Entry, message: Message | None) -> str:
    """The entry's section, named `entry-{id}` as Pi names it; "" for an entry a reader is not
    shown (a setting, a name, a label)."""
    shown = _section(message) if message is not None else None
    if isinstance(entry, ModelChangeEntry):
        provider, model_id = (value if isinstance(value, str) else "" for value in (entry.provider, entry.model_id))
        model = html.escape(f"{provider}/{model_id}")
        shown = "modelChange", f"<p>Switched to model: <code>{model}</code></p>"
    if shown is None:
        return ""
    kind, contents = shown
    return f'<section id="entry-{html.escape(entry.id)}" class="{kind}">{contents}</section>'


# The kinds the header counts, in the order Pi's page names them.
_KINDS = ("user", "assistant", "tool results", "custom", "compactions", "branch summaries")


class _Totals(msgspec.Struct):
    """The header's counts, over every entry of the file (Pi's page counts them so)."""

    kinds: dict[str, int] = msgspec.field(default_factory=dict)
    models: list[str] = msgspec.field(default_factory=list)
    tool_calls: int = 0
    usage: Usage = msgspec.field(default_factory=Usage)

    def add(self, entry: Entry, message: Message | None) -> None:
        kind = {
            "compaction": "compactions",
            "branch_summary": "branch summaries",
            "custom_message": "custom",
        }.get(entry.type)
        if isinstance(message, UserMessage) and entry.type == "message":
            kind = "user"
        elif isinstance(message, AssistantMessage):
            kind = "assistant"
            model = f"{message.provider}/{message.model}"
            self.models += [model] if model not in self.models else []
            self.tool_calls += sum(isinstance(block, ToolCall) for block in message.content)
            self.usage = add_usage(self.usage, message.usage)
        elif isinstance(message, ToolResultMessage):
            kind = "tool results"
        if kind is not None:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1


def _header(session_id: str, started: str | None, entries: SessionEntries) -> str:
    totals = _Totals()
    for entry, message in entries.shown(every_branch=True):
        totals.add(entry, message)
    usage = totals.usage
    rows = [
        ("Session", session_id),
        *([("Date", started)] if started else []),
        ("Models", ", ".join(totals.models) or "unknown"),
        ("Messages", ", ".join(f"{totals.kinds[kind]} {kind}" for kind in _KINDS if kind in totals.kinds) or "0"),
        ("Tool calls", str(totals.tool_calls)),
        (
            "Tokens",
            f"{usage.input:,} in, {usage.output:,} out, {usage.cache_read:,} cache read, "
            f"{usage.cache_write:,} cache write",
        ),
        ("Cost", f"${usage.cost.total:.3f}"),
    ]
    return "<dl>" + "".join(f"<dt>{name}</dt><dd>{html.escape(value)}</dd>" for name, value in rows) + "</dl>"


def _context(system_prompt: str | None, tools: Sequence[tuple[str, str]]) -> str:
    """What the model was given besides the conversation, when the page is of a live session."""
    parts = []
    if system_prompt is not None:
        parts.append(
            f'<section class="systemPrompt"><h2>System prompt</h2><pre>{html.escape(system_prompt)}</pre></section>'
        )
    if tools:
        items = "".join(f"<li><code>{html.escape(name)}</code> {html.escape(about)}</li>" for name, about in tools)
        parts.append(f'<section class="tools"><h2>Available tools</h2><ul>{items}</ul></section>')
    return "\n".join(parts)


def session_html(
    title: str,
    entries: SessionEntries,
    *,
    session_id: str,
    started: str | None = None,
    system_prompt: str | None = None,
    tools: Sequence[tuple[str, str]] = (),
) -> str:
    """The page of a session with these entries: `started` is its header's timestamp; the system
    prompt and the (name, description) of each active tool, when known, are shown before the
    conversation."""
    sections = (_entry_section(entry, message) for entry, message in entries.shown())
    body = "\n".join(part for part in (_context(system_prompt, tools), *sections) if part)
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head>\n<body><h1>{html.escape(title)}</h1>\n"
        f"{_header(session_id, started, entries)}\n{body}\n</body></html>\n"
    )

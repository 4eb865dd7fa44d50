"""A session as one self-contained HTML page (Pi's `export_html`): every message in order, text
escaped, tool calls with their arguments, tool results as preformatted text, a compaction's or a
branch's summary under its own heading, a Pi extension's message when Pi's chat shows it. No
scripts, no external resources, so the file opens anywhere and shows nothing but the
conversation."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence

from pi_rpc.ai.types import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_rpc.session.compaction import summary_heading

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
section{border-left:4px solid #ccc;margin:1rem 0;padding:.25rem 1rem}
.user,.bashExecution,.custom{border-color:#3b82f6}.compactionSummary,.branchSummary{border-color:#f59e0b}.excluded{opacity:.6}.assistant{border-color:#10b981}.toolResult{border-color:#a3a3a3}
.error{border-color:#ef4444}h2{font-size:.8rem;text-transform:uppercase;color:#666;margin:.5rem 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.5rem}.thinking{color:#777}"""


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


def _section(message: Message) -> str:
    match message:
        case UserMessage(content=content):
            body = f"<pre>{html.escape(content)}</pre>" if isinstance(content, str) else _blocks(content)
            return f'<section class="user"><h2>User</h2>{body}</section>'
        case AssistantMessage(content=content, stop_reason=reason, error_message=error):
            failed = reason in ("error", "aborted")
            note = f"<p>{html.escape(str(error) if isinstance(error, str) else reason)}</p>" if failed else ""
            kind = "assistant error" if failed else "assistant"
            return f'<section class="{kind}"><h2>Assistant</h2>{_blocks(content)}{note}</section>'
        case ToolResultMessage(tool_name=name, content=content, is_error=is_error):
            kind = "toolResult error" if is_error else "toolResult"
            return f'<section class="{kind}"><h2>{html.escape(name)} result</h2>{_blocks(content)}</section>'
        case BashExecutionMessage(command=command, output=output):
            excluded = " excluded" if message.exclude_from_context else ""
            note = "".join(f"<p>{html.escape(n)}</p>" for n in _bash_notes(message))
            return (
                f'<section class="bashExecution{excluded}"><h2>User ran <code>{html.escape(command)}</code></h2>'
                f"<pre>{html.escape(output)}</pre>{note}</section>"
            )
        case CompactionSummaryMessage(summary=summary):
            heading = html.escape(summary_heading(message))
            return f'<section class="compactionSummary"><h2>{heading}</h2><pre>{html.escape(summary)}</pre></section>'
        case BranchSummaryMessage(summary=summary):
            heading = "Summary of another branch"
            return f'<section class="branchSummary"><h2>{heading}</h2><pre>{html.escape(summary)}</pre></section>'
        case CustomMessage(custom_type=kind, content=content, display=True):
            body = f"<pre>{html.escape(content)}</pre>" if isinstance(content, str) else _blocks(content)
            return f'<section class="custom"><h2>{html.escape(kind)}</h2>{body}</section>'
        case SystemMessage() | CustomMessage():  # a tool declaration; an extension's message Pi does not show
            return ""
    return ""


def _bash_notes(message: BashExecutionMessage) -> list[str]:
    notes = ["cancelled"] if message.cancelled else []
    if isinstance(message.exit_code, int) and message.exit_code != 0:
        notes.append(f"exit code {message.exit_code}")
    if message.truncated and message.full_output_path:
        notes.append(f"output truncated; full output: {message.full_output_path}")
    if message.exclude_from_context:
        notes.append("not sent to the model")
    return notes


def session_html(title: str, messages: Sequence[Message]) -> str:
    body = "\n".join(section for section in map(_section, messages) if section)
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head>\n<body><h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n"
    )

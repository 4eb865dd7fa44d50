"""Our agent events as ACP `session/update` payloads: names and shapes only, no agent logic.

A tool call is announced (`tool_call`, pending) when the model finishes writing it, goes
`in_progress` when it starts executing, streams its partial output, and ends `completed` or
`failed`. Every ACP `tool_call_update` replaces the call's whole content, which matches our
partial results: each one is a snapshot of the output so far, not a delta.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from acp.helpers import (
    ContentBlock,
    SessionUpdate,
    ToolCallContentVariant,
    start_tool_call,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message,
)
from acp.schema import (
    ImageContentBlock,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    ToolKind,
)

from pi_rpc.agent import (
    AgentEvent,
    AgentToolResult,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    bash_execution_to_text,
)
from pi_rpc.ai import (
    AssistantMessage,
    AutoRetryStart,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    Message,
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ToolCall,
    ToolcallEndEvent,
    ToolResultMessage,
    UserMessage,
)
from pi_rpc.modes.acp.file_diffs import (
    EditorTexts,
    FileChange,
    confirmed_change,
    edit_pairs,
    first_changed_line,
    planned_change,
    read_text,
)
from pi_rpc.modes.acp.terminal_output import TerminalStreams, terminal_content, terminal_info
from pi_rpc.session import summary_heading
from pi_rpc.tools import EditorFiles, resolve_to_cwd

_Update = TypeVar("_Update", ToolCallStart, ToolCallProgress)

# ACP's ToolKind lets an editor pick an icon and a presentation (diffs for edits, a terminal look
# for execute). Tools not listed here are "other".
TOOL_KINDS: dict[str, ToolKind] = {
    "read": "read",
    "ls": "read",
    "grep": "search",
    "find": "search",
    "edit": "edit",
    "write": "edit",
    "bash": "execute",
    "powershell": "execute",
}
TITLE_MAX_CHARS = 120


def tool_kind(tool_name: str) -> ToolKind:
    return TOOL_KINDS.get(tool_name, "other")


def tool_title(tool_name: str, args: Mapping[str, Any]) -> str:
    """What an editor shows on the call's row: the command for a shell, else name and target."""
    command = args.get("command")
    if tool_kind(tool_name) == "execute" and isinstance(command, str):
        first_line = command.strip().splitlines()[0] if command.strip() else command
        return _clip(first_line)
    path, pattern = args.get("path"), args.get("pattern")
    title = tool_name
    if isinstance(pattern, str):
        title += f" {pattern}"
        if isinstance(path, str) and path:
            title += f" in {path}"
    elif isinstance(path, str) and path:
        title += f" {path}"
    return _clip(title)


def _clip(text: str) -> str:
    return text if len(text) <= TITLE_MAX_CHARS else text[: TITLE_MAX_CHARS - 1] + "…"


def tool_locations(tool_name: str, args: Mapping[str, Any], cwd: str) -> list[ToolCallLocation]:
    """The file a call touches, absolute as ACP requires ("follow along" in the editor)."""
    path = args.get("path")
    if not isinstance(path, str) or not path:
        return [ToolCallLocation(path=cwd)] if tool_kind(tool_name) == "search" else []
    offset = args.get("offset")
    line = offset if tool_name == "read" and isinstance(offset, int) and offset >= 1 else None
    return [ToolCallLocation(path=resolve_to_cwd(path, cwd), line=line)]


def tool_diffs(
    tool_name: str, args: Mapping[str, Any], cwd: str, change: FileChange | None = None
) -> list[ToolCallContentVariant]:
    """ACP diff blocks of an edit or a write: the whole file before and after when `change` has it
    (file_diffs.py; ACP's `oldText` absent for a new file), else each edit's snippet, or for a
    write its content alone."""
    path = args.get("path")
    if not isinstance(path, str) or not path:
        return []
    absolute = resolve_to_cwd(path, cwd)
    if change is not None:
        return [tool_diff_content(absolute, change.new_text, change.old_text)]
    if tool_name == "write" and isinstance(args.get("content"), str):
        return [tool_diff_content(absolute, args["content"])]
    if tool_name != "edit":
        return []
    return [tool_diff_content(absolute, edit.new_text, edit.old_text) for edit in edit_pairs(args)]


def retry_notice(retry: AutoRetryStart) -> str:
    """What the user reads while a failed model request waits to be retried (ACP has no retry
    update; a thought chunk is shown by every client and stays out of the answer)."""
    seconds = retry.delay_ms / 1000
    return (
        f"\n[The model request failed: {retry.error_message}. Retrying in {seconds:g} s "
        f"(attempt {retry.attempt} of {retry.max_attempts}).]\n"
    )


def content_blocks(content: Sequence[TextContent | ImageContent | ThinkingContent]) -> list[ContentBlock]:
    blocks: list[ContentBlock] = []
    for block in content:
        if isinstance(block, TextContent):
            blocks.append(TextContentBlock(type="text", text=block.text))
        elif isinstance(block, ImageContent):
            blocks.append(ImageContentBlock(type="image", data=block.data, mime_type=block.mime_type))
    return blocks


def result_content(
    tool_name: str,
    args: Mapping[str, Any],
    cwd: str,
    content: Sequence[TextContent | ImageContent],
    failed: bool = False,
    change: FileChange | None = None,
) -> list[ToolCallContentVariant]:
    """A result's text verbatim (truncation notices included), after the diffs of an edit that
    happened: a failed call changed nothing, so it shows no diff."""
    diffs = [] if failed else tool_diffs(tool_name, args, cwd, change)
    return [*diffs, *(tool_content(block) for block in content_blocks(content))]


def file_text_before(tool_name: str, args: Mapping[str, Any], cwd: str) -> str | None:
    """The text an edit or a write is about to change, read before it runs, so its diff can be
    of the whole file; None for a new file or one too large or not text (file_diffs.py)."""
    path = args.get("path")
    if tool_kind(tool_name) != "edit" or not isinstance(path, str) or not path:
        return None
    return read_text(resolve_to_cwd(path, cwd))


class UpdateMapper:
    """Turns one session's agent events into ACP updates; remembers each call's name and args,
    which later events (update, end) do not all carry."""

    def __init__(self, cwd: str, terminal_output: bool = False) -> None:
        self.cwd = cwd
        # Shell calls as `_meta` terminals (terminal_output.py) for a client that opted in.
        self._terminals = TerminalStreams() if terminal_output else None
        # Per call: its tool name, arguments and, for an edit or a write, the file's text before.
        self._calls: dict[str, tuple[str, dict[str, Any], str | None]] = {}
        # The editor's files as the session's tools see them, once the client serves any.
        self._editor_texts: EditorTexts | None = None

    def watching(self, files: EditorFiles) -> EditorFiles:
        """`files` for the session's router, remembering what the editor hands the tools, so an
        edit's diff is of the buffer it edited."""
        self._editor_texts = EditorTexts(files)
        return self._editor_texts

    def updates(self, event: AgentEvent) -> list[SessionUpdate]:
        match event:
            case MessageUpdate(assistant_message_event=TextDeltaEvent(delta=delta)):
                return [update_agent_message_text(delta)]
            case MessageUpdate(assistant_message_event=ThinkingDeltaEvent(delta=delta)):
                return [update_agent_thought_text(delta)]
            case MessageUpdate(assistant_message_event=ToolcallEndEvent(tool_call=call)):
                return [self._announce(call.id, call.name, call.arguments, "pending")]
            case AutoRetryStart():
                return [update_agent_thought_text(retry_notice(event))]
            case ToolExecutionStart(tool_call_id=call_id, tool_name=name, args=args):
                if call_id not in self._calls:  # not streamed by the model (e.g. a replayed batch)
                    return [self._announce(call_id, name, args, "in_progress")]
                # Read again: an earlier call of the batch may have changed the file since.
                self._calls[call_id] = (name, args, self._text_before(name, args))
                return [update_tool_call(call_id, status="in_progress")]
            case ToolExecutionUpdate(tool_call_id=call_id, partial_result=partial):
                if self._is_terminal(call_id):
                    assert self._terminals is not None
                    meta = self._terminals.output(call_id, partial.content)
                    return [_with_meta(update_tool_call(call_id), meta)] if meta else []
                return [update_tool_call(call_id, content=self._content(call_id, partial))]
            case ToolExecutionEnd(tool_call_id=call_id, result=result, is_error=is_error):
                status: ToolCallStatus = "failed" if is_error else "completed"
                if self._is_terminal(call_id):
                    assert self._terminals is not None
                    self._calls.pop(call_id, None)
                    meta = self._terminals.finish(call_id, result.content, status)
                    return [
                        _with_meta(
                            update_tool_call(
                                call_id,
                                status=status,
                                content=terminal_content(call_id),
                                raw_output={"output": _text(result.content)},
                            ),
                            meta,
                        )
                    ]
                return [self._finish(call_id, result, is_error)]
        return []

    def _text_before(self, name: str, args: Mapping[str, Any]) -> str | None:
        """The file from the disk; what the editor hands out from now on replaces it (`_finish`)."""
        path = args.get("path")
        if self._editor_texts is not None and isinstance(path, str) and path:
            self._editor_texts.forget(resolve_to_cwd(path, self.cwd))
        return file_text_before(name, args, self.cwd)

    def _announce(self, call_id: str, name: str, args: dict[str, Any], status: ToolCallStatus) -> SessionUpdate:
        before = self._text_before(name, args)
        self._calls[call_id] = (name, args, before)
        if self._terminals is not None and tool_kind(name) == "execute":
            return _with_meta(
                start_tool_call(
                    call_id,
                    tool_title(name, args),
                    kind="execute",
                    status=status,
                    content=terminal_content(call_id),
                    raw_input=args,
                ),
                terminal_info(call_id, self.cwd),
            )
        return start_tool_call(
            call_id,
            tool_title(name, args),
            kind=tool_kind(name),
            status=status,
            content=tool_diffs(name, args, self.cwd, planned_change(name, args, before)) or None,
            locations=tool_locations(name, args, self.cwd) or None,
            raw_input=args,
        )

    def _is_terminal(self, call_id: str) -> bool:
        return self._terminals is not None and tool_kind(self._calls.get(call_id, ("",))[0]) == "execute"

    def _content(self, call_id: str, result: AgentToolResult) -> list[ToolCallContentVariant]:
        name, args, before = self._calls.get(call_id, ("", {}, None))
        return result_content(name, args, self.cwd, result.content, change=planned_change(name, args, before))

    def _finish(self, call_id: str, result: AgentToolResult, is_error: bool) -> ToolCallProgress:
        """The call's last update: an edit's whole-file diff only as the tool reports having made it,
        else its snippets, with the line of the first change as the location."""
        name, args, before = self._calls.pop(call_id, ("", {}, None))
        status: ToolCallStatus = "failed" if is_error else "completed"
        if is_error:
            return update_tool_call(
                call_id, status=status, content=result_content(name, args, self.cwd, result.content, True)
            )
        line, path = first_changed_line(result.details) if name == "edit" else None, args.get("path")
        if self._editor_texts is not None and isinstance(path, str) and path:
            before = self._editor_texts.last_read(resolve_to_cwd(path, self.cwd)) or before
        change = confirmed_change(name, args, before, result.details)
        locations = (
            [ToolCallLocation(path=resolve_to_cwd(path, self.cwd), line=line)]
            if line is not None and isinstance(path, str)
            else None
        )
        content = result_content(name, args, self.cwd, result.content, change=change)
        return update_tool_call(call_id, status=status, content=content, locations=locations)


def _with_meta(update: _Update, meta: dict[str, Any] | None) -> _Update:
    update.field_meta = meta
    return update


def _text(content: Sequence[TextContent | ImageContent]) -> str:
    return "".join(block.text for block in content if isinstance(block, TextContent))


def transcript_updates(messages: Sequence[Message], cwd: str) -> list[SessionUpdate]:
    """A stored transcript replayed as the updates a live run would have sent (`session/load`)."""
    updates: list[SessionUpdate] = []
    calls: dict[str, ToolCall] = {}
    for message in messages:
        if isinstance(message, UserMessage) or isinstance(message, CustomMessage) and message.display:
            # (a Pi extension's message is the user's words to the model; replayed where Pi's chat shows it)
            content = [TextContent(text=message.content)] if isinstance(message.content, str) else message.content
            updates += [update_user_message(block) for block in content_blocks(content)]
        elif isinstance(message, BashExecutionMessage):  # the user's own command, in the words the model reads
            updates.append(update_user_message(TextContentBlock(type="text", text=bash_execution_to_text(message))))
        elif isinstance(message, CompactionSummaryMessage):  # all that is left of the turns before it
            updates.append(update_agent_message_text(f"{summary_heading(message)}:\n\n{message.summary}"))
        elif isinstance(message, BranchSummaryMessage):
            updates.append(update_agent_message_text(f"Summary of another branch:\n\n{message.summary}"))
        elif isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent) and block.text:
                    updates.append(update_agent_message_text(block.text))
                elif isinstance(block, ThinkingContent) and block.thinking:
                    updates.append(update_agent_thought_text(block.thinking))
                elif isinstance(block, ToolCall):
                    calls[block.id] = block
                    updates.append(
                        start_tool_call(
                            block.id,
                            tool_title(block.name, block.arguments),
                            kind=tool_kind(block.name),
                            status="pending",
                            locations=tool_locations(block.name, block.arguments, cwd) or None,
                            raw_input=block.arguments,
                        )
                    )
        elif isinstance(message, ToolResultMessage):
            call = calls.get(message.tool_call_id)
            name, args = (call.name, call.arguments) if call is not None else (message.tool_name, {})
            updates.append(
                update_tool_call(
                    message.tool_call_id,
                    status="failed" if message.is_error else "completed",
                    content=result_content(name, args, cwd, message.content, failed=message.is_error),
                )
            )
    return updates

"""The one conversion from a transcript to what a provider is sent (Pi's `convertToLlm`).

A transcript holds messages no provider knows (a user's bash command, a compaction's or a
branch's summary, a Pi extension's message); every model request, and the summariser's reading
of the conversation, goes through `convert_to_llm`, so providers see only user, assistant,
tool-result and system messages. Each session kind becomes user text in the words Pi gives the
model, so a conversation continued here reads to the model as it would in Pi.
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_rpc.ai import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    LlmMessage,
    Message,
    TextContent,
    UserContent,
    UserMessage,
)

# Pi's wrapping of a summary, byte for byte: the model of a session continued from Pi's file
# reads its summary as Pi's own model did.
COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """What the model is shown of a user's command (Pi's `bashExecutionToText`)."""
    text = f"Ran `{message.command}`\n" + (f"```\n{message.output}\n```" if message.output else "(no output)")
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code not in (None, 0) and isinstance(message.exit_code, int):
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated and message.full_output_path:
        text += f"\n\n[Output truncated. Full output: {message.full_output_path}]"
    return text


def _as_user_text(text: str, timestamp: int) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=timestamp)


def to_llm(message: Message) -> LlmMessage | None:
    """What the model reads of one message; None for one kept out of its context (`!!`)."""
    match message:
        case BashExecutionMessage(exclude_from_context=True):
            return None
        case BashExecutionMessage():
            return _as_user_text(bash_execution_to_text(message), message.timestamp)
        case CompactionSummaryMessage(summary=summary):
            return _as_user_text(COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX, message.timestamp)
        case BranchSummaryMessage(summary=summary):
            return _as_user_text(BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX, message.timestamp)
        case CustomMessage(content=content):
            blocks: list[UserContent] = [TextContent(text=content)] if isinstance(content, str) else list(content)
            return UserMessage(content=blocks, timestamp=message.timestamp)
    return message


def convert_to_llm(messages: Sequence[Message]) -> list[LlmMessage]:
    """Provider messages pass unchanged; the session's own kinds become user messages."""
    return [converted for converted in map(to_llm, messages) if converted is not None]

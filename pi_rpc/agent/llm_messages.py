"""The one conversion from a transcript to what a provider is sent (Pi's `convertToLlm`).

A transcript holds messages no provider knows (a user's bash command); every model request, and
the summariser's reading of the conversation, goes through `convert_to_llm`, so providers see
only user, assistant, tool-result and system messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_rpc.ai.types import BashExecutionMessage, LlmMessage, Message, TextContent, UserMessage


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


def convert_to_llm(messages: Sequence[Message]) -> list[LlmMessage]:
    """Provider messages pass unchanged; a bash execution becomes user text, or nothing when the
    user kept it out of the context (`!!`)."""
    converted: list[LlmMessage] = []
    for message in messages:
        if not isinstance(message, BashExecutionMessage):
            converted.append(message)
        elif not message.exclude_from_context:
            text = bash_execution_to_text(message)
            converted.append(UserMessage(content=[TextContent(text=text)], timestamp=message.timestamp))
    return converted

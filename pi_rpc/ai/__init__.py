"""The model layer's public names: messages and content blocks, models and their configuration,
the one partial-message accumulator, the provider contract and registry, tool-argument validation.

Other layers and the front ends import these from here (`from pi_rpc.ai import Model`); the
modules behind them are the layer's own and may be split or renamed. Nothing is loaded until a
name is first used (`pi_rpc/lazy_exports.py`), so this package pulls in no provider and no httpx.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pi_rpc.lazy_exports import lazy_exports

# httpx's package imports its command-line client (`httpx._main`: click, pygments, rich) wherever
# those are installed, and click is beside pi-rpc (uvicorn, of the MCP SDK, needs it): 15-35 ms of
# the first model request's imports here, for a CLI the daemon never runs. Marked absent before
# any module of this layer imports httpx, that import fails at once and httpx keeps its stub.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # the import system's "known absent"

if TYPE_CHECKING:
    from pi_rpc.ai.apis import (
        DEFAULT_ENDPOINT_API,
        ApiDeclaration,
        KnownApi,
        KnownProvider,
        api_declaration,
        endpoint_apis,
        key_variables,
        known_providers,
    )
    from pi_rpc.ai.clients import HttpClients
    from pi_rpc.ai.compat import ModelCompat, layered
    from pi_rpc.ai.config import (
        PI_AGENT_DIR_VARIABLE,
        ConfigError,
        ModelRegistry,
        agent_config_paths,
        config_paths,
        no_model_message,
        pi_agent_dir,
    )
    from pi_rpc.ai.json_location import describe_decode_error, line_of_path
    from pi_rpc.ai.json_text import displayable, encode_json, encode_json_into
    from pi_rpc.ai.models import (
        DEFAULT_MODEL_IDS,
        clamp_thinking_level,
        list_models,
        not_found_hint,
        supported_thinking_levels,
    )
    from pi_rpc.ai.provider import (
        DEFAULT_RETRY_BASE_MS,
        NOT_RETRIED_NOTE,
        RETRY_BASE_ENV,
        StreamFn,
        StreamOptions,
        backoff_ms,
        retry_base_from_env,
    )
    from pi_rpc.ai.providers.faux import FAUX_MODEL, FauxProvider, ScriptError, load_script
    from pi_rpc.ai.redact import repr_without_secrets, request_secrets  # not `redact`: the submodule's name
    from pi_rpc.ai.registry import get_stream_fn, load_provider
    from pi_rpc.ai.server_models import (
        ModelListError,
        ServerModel,
        describe_server_models,
        server_model_details,
        template_renders_tools,
    )
    from pi_rpc.ai.stream import AssistantBuilder, TextParts
    from pi_rpc.ai.types import (
        THINKING_LEVELS,
        AssistantMessage,
        AssistantMessageEvent,
        AutoRetryEnd,
        AutoRetryStart,
        BashExecutionMessage,
        BranchSummaryMessage,
        CompactionSummaryMessage,
        ConstrainedSampling,
        Context,
        CustomMessage,
        DoneEvent,
        EndedStopReason,
        ErrorEvent,
        ImageContent,
        JsonSchemaSampling,
        LlmMessage,
        Message,
        Model,
        ProviderEvent,
        StartEvent,
        StopReason,
        SystemMessage,
        TextContent,
        TextDeltaEvent,
        TextEndEvent,
        ThinkingContent,
        ThinkingDeltaEvent,
        ThinkingEndEvent,
        ThinkingLevel,
        Tool,
        ToolCall,
        ToolcallDeltaEvent,
        ToolcallEndEvent,
        ToolcallStartEvent,
        ToolRef,
        ToolResultContent,
        ToolResultMessage,
        Usage,
        UserContent,
        UserMessage,
        Wire,
        current_system_message,
        declared_sections,
        declared_tools,
        sections_text,
        text_of,
        thinking_level_of,
    )
    from pi_rpc.ai.usage import add_usage
    from pi_rpc.ai.validation import json_schema_of, prepare_validator, validate_tool_arguments

__all__ = [
    "ApiDeclaration",
    "AssistantBuilder",
    "AssistantMessage",
    "AssistantMessageEvent",
    "AutoRetryEnd",
    "AutoRetryStart",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "ConfigError",
    "ConstrainedSampling",
    "Context",
    "CustomMessage",
    "DEFAULT_ENDPOINT_API",
    "DEFAULT_MODEL_IDS",
    "DEFAULT_RETRY_BASE_MS",
    "DoneEvent",
    "ErrorEvent",
    "FAUX_MODEL",
    "NOT_RETRIED_NOTE",
    "FauxProvider",
    "HttpClients",
    "ImageContent",
    "KnownApi",
    "KnownProvider",
    "JsonSchemaSampling",
    "LlmMessage",
    "Message",
    "Model",
    "ModelCompat",
    "ModelListError",
    "ModelRegistry",
    "PI_AGENT_DIR_VARIABLE",
    "ProviderEvent",
    "RETRY_BASE_ENV",
    "ScriptError",
    "StartEvent",
    "ServerModel",
    "EndedStopReason",
    "StopReason",
    "StreamFn",
    "StreamOptions",
    "SystemMessage",
    "THINKING_LEVELS",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextParts",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "Tool",
    "ToolCall",
    "ToolRef",
    "ToolResultContent",
    "ToolResultMessage",
    "ToolcallDeltaEvent",
    "ToolcallEndEvent",
    "ToolcallStartEvent",
    "Usage",
    "UserContent",
    "UserMessage",
    "Wire",
    "add_usage",
    "api_declaration",
    "backoff_ms",
    "agent_config_paths",
    "clamp_thinking_level",
    "config_paths",
    "current_system_message",
    "declared_sections",
    "declared_tools",
    "sections_text",
    "describe_decode_error",
    "describe_server_models",
    "displayable",
    "encode_json",
    "encode_json_into",
    "endpoint_apis",
    "get_stream_fn",
    "json_schema_of",
    "key_variables",
    "known_providers",
    "line_of_path",
    "layered",
    "list_models",
    "load_provider",
    "load_script",
    "no_model_message",
    "not_found_hint",
    "pi_agent_dir",
    "prepare_validator",
    "repr_without_secrets",
    "request_secrets",
    "retry_base_from_env",
    "server_model_details",
    "supported_thinking_levels",
    "template_renders_tools",
    "text_of",
    "thinking_level_of",
    "validate_tool_arguments",
]

if not TYPE_CHECKING:  # for mypy the imports above are the names, so a misspelt one stays an error
    __getattr__, __dir__ = lazy_exports(__name__, __all__)

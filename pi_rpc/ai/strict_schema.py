"""Constrained sampling for tool declarations (spec 4): strict JSON schemas and grammar tools.

A tool asks for constrained sampling through `Tool.constrained_sampling`. Providers call
`resolve_json_schema_strict` (and, where the API has grammar tools, `resolve_grammar_sampling`)
while building their tool declarations, then send `tool_parameters(tool, strict)`.

Strict mode needs every property listed in `required`, so an optional property is rewritten as
`anyOf: [<schema>, {type: null}]`; the model then sends `null` for "omitted", and the optional-null
normalisation of argument validation (spec 3.3.2) turns that `null` back into an absent key.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

import msgspec

from pi_rpc.ai.types import GrammarSampling, JsonSchemaSampling, Tool

# Keywords that strict function calling (OpenAI, Anthropic) does not accept (spec 4.4).
_UNSUPPORTED_KEYWORDS = (
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
)


class StrictSchemaError(ValueError):
    """The schema cannot be made strict. `reason` completes the sentence "…, but {reason}."."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ConstrainedSamplingError(ValueError):
    """A tool's constrained-sampling request cannot be honoured; the message is user-facing."""


def make_strict_json_schema(schema: Any) -> dict[str, Any]:
    """A strict copy of `schema` (spec 4.4); the argument is never modified."""
    if not isinstance(schema, dict):
        raise StrictSchemaError("root schema must have type object")
    strict = copy.deepcopy(schema)
    _make_node_strict(strict)
    if strict.get("type") != "object":
        raise StrictSchemaError("root schema must have type object")
    return strict


def _make_node_strict(node: Any) -> None:
    if not isinstance(node, dict):
        raise StrictSchemaError("boolean schemas are unsupported")
    for keyword in _UNSUPPORTED_KEYWORDS:
        if keyword in node:
            raise StrictSchemaError(f"{keyword} schemas are unsupported")
    if "anyOf" in node:
        variants = node["anyOf"]
        if not isinstance(variants, list) or not variants:
            raise StrictSchemaError("anyOf must contain at least one schema")
        for variant in variants:
            if _is_structured(variant):
                raise StrictSchemaError("object and array unions are unsupported")
            _make_node_strict(variant)
    if "items" in node:
        if isinstance(node["items"], list):
            raise StrictSchemaError("tuple schemas are unsupported")
        _make_node_strict(node["items"])
    is_object = node.get("type") == "object"
    if "properties" in node and not is_object:
        raise StrictSchemaError("properties require type object")
    if is_object:
        _make_object_strict(node)


def _make_object_strict(node: dict[str, Any]) -> None:
    if "additionalProperties" in node and node["additionalProperties"] is not False:
        raise StrictSchemaError("schema-valued or true additionalProperties is unsupported")
    properties = node.get("properties", {})
    if not isinstance(properties, dict):
        raise StrictSchemaError("object properties must be a schema map")
    required = node.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise StrictSchemaError("object required must be a string array")
    if any(name not in properties for name in required):
        raise StrictSchemaError("required contains an unknown property")
    for name, prop in list(properties.items()):
        _make_node_strict(prop)
        if name not in required and not schema_allows_null(prop):
            properties[name] = {"anyOf": [prop, {"type": "null"}]}
    if "properties" in node:
        node["properties"] = properties
    node["required"] = list(properties)
    node["additionalProperties"] = False


def _is_structured(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    return "object" in kinds or "array" in kinds or "properties" in schema or "items" in schema


def schema_allows_null(schema: Any) -> bool:
    """Whether `schema` already accepts `null` (then an optional property needs no rewrite)."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    enum = schema.get("enum")
    if isinstance(enum, list) and None in enum:
        return True
    variants = schema.get("anyOf")
    return isinstance(variants, list) and any(schema_allows_null(variant) for variant in variants)


def resolve_json_schema_strict(tool: Tool, provider_supports_strict: bool) -> bool | None:
    """Spec 4.3: `True` to send the tool strict, `None` to send it as declared.

    Raises `ConstrainedSamplingError` when the tool says `require` and strict cannot be had.
    """
    config = tool.constrained_sampling
    if not isinstance(config, JsonSchemaSampling):
        return None
    if provider_supports_strict:
        try:
            make_strict_json_schema(tool.parameters)
        except StrictSchemaError as exc:
            if config.strict != "require":
                return None
            raise ConstrainedSamplingError(
                f'Tool "{tool.name}" requires JSON-schema constrained sampling, but {exc.reason}.'
            ) from None
        return True
    if config.strict == "require":
        raise ConstrainedSamplingError(
            f'Tool "{tool.name}" requires JSON-schema constrained sampling, but strict tools are unsupported.'
        )
    return None


def tool_parameters(tool: Tool, strict: bool | None) -> dict[str, Any]:
    """The parameters to declare: the strict rewrite when `strict` is true, else as declared."""
    return make_strict_json_schema(tool.parameters) if strict else tool.parameters


# --- grammar tools (spec 4.5) --------------------------------------------------------------------


class GrammarTool(msgspec.Struct, frozen=True):
    """How a grammar-constrained tool is declared: the grammar, and which argument receives the
    raw text the model generates (the schema's one required string property)."""

    syntax: Literal["lark", "regex"]
    definition: str
    input_property: str


def resolve_grammar_sampling(tool: Tool, provider_supports_grammar: bool) -> GrammarTool | None:
    """Spec 4.5: the grammar to declare, or `None` to send the tool as a normal function tool."""
    config = tool.constrained_sampling
    if not isinstance(config, GrammarSampling) or not provider_supports_grammar:
        return None
    lark = config.variants.openai_lark
    regex = config.variants.openai_regex
    # Lark is the richer syntax; regex is only the fallback.
    if isinstance(lark, str) and lark.strip():
        syntax: Literal["lark", "regex"] = "lark"
        definition = lark
    elif isinstance(regex, str) and regex.strip():
        syntax, definition = "regex", regex
    else:
        raise _grammar_error(tool, "no supported grammar variant was provided")
    try:
        prop = _grammar_input_property(tool.parameters)
    except StrictSchemaError as exc:
        raise _grammar_error(tool, exc.reason) from None
    return GrammarTool(syntax=syntax, definition=definition, input_property=prop)


def grammar_input_properties(tools: list[Tool], provider_supports_grammar: bool) -> dict[str, str]:
    """tool name -> the argument that carries a grammar tool's raw input, for every grammar tool."""
    found: dict[str, str] = {}
    for tool in tools:
        grammar = resolve_grammar_sampling(tool, provider_supports_grammar)
        if grammar is not None:
            found[tool.name] = grammar.input_property
    return found


def _grammar_input_property(schema: dict[str, Any]) -> str:
    if schema.get("type") != "object":
        raise StrictSchemaError("grammar constrained sampling requires an object parameter schema")
    required = schema.get("required")
    if not isinstance(required, list) or len(required) != 1 or not isinstance(required[0], str):
        raise StrictSchemaError("grammar constrained sampling requires exactly one required string property")
    name = required[0]
    prop = (schema.get("properties") or {}).get(name)
    if not prop:
        raise StrictSchemaError(f"grammar constrained sampling requires a properties entry for {name}")
    if not isinstance(prop, dict) or prop.get("type") != "string":
        raise StrictSchemaError(f"grammar constrained sampling property {name} must have type string")
    return name


def _grammar_error(tool: Tool, reason: str) -> ConstrainedSamplingError:
    return ConstrainedSamplingError(f'Tool "{tool.name}" cannot use grammar constrained sampling: {reason}.')

"""Tool-argument validation: the one check between the model's tool call and execute (spec 3.3).

Two kinds of parameter schema exist (spec 19.4): a msgspec Struct (the counterpart of Pi's
built-in tool schemas) comes back as an instance of the Struct, a plain JSON Schema dict
(extensions, MCP, clients) as a dict. Since Pi 1.5.0 (pi-schema) both get the same three passes:
optional `null`s dropped (3.3.2), TypeBox's conversion (3.4), AJV-style coercion (3.5). Then
the compiled schema checks the value (`pi_rpc/ai/plain_schema.py` for the plain schemas the built-in
tools have, `jsonschema` for the rest), and a failure is explained in pi-schema's words
(`pi_rpc/ai/schema_errors.py`) so the model can fix its call.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from pi_rpc.ai.coercion import Schema, SchemaWalker
    from pi_rpc.ai.plain_schema import SubschemaCheck

# The schema export (`json_schema_of`) is what a daemon needs to list its tools; the checking
# (coercion, the error report, jsonschema for a schema that needs it) is loaded by the first
# call's arguments, or the warm-up.

log = logging.getLogger(__name__)


class ToolArgumentsError(Exception):
    """Raised with the exact spec 3.6 text; the loop turns it into the error result verbatim."""


# --- schema export ------------------------------------------------------------------------------


@functools.cache
def _struct_schema(parameters: type[msgspec.Struct]) -> Schema:
    raw = msgspec.json.schema(parameters)
    defs: dict[str, Schema] = raw.get("$defs", {})
    kept: dict[str, Schema] = {}

    def inline(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            siblings = {k: inline(v, stack) for k, v in node.items() if k != "$ref"}
            if name in stack:
                # A recursive Struct cannot be written out in full; only the cycle keeps a `$ref`.
                kept[name] = {}
                return {"$ref": ref, **siblings}
            target = _strip_struct_labels(defs[name])
            return {**inline(target, (*stack, name)), **siblings}
        # `discriminator` is OpenAPI, not JSON Schema, and its mapping points into `$defs`.
        return {k: inline(v, stack) for k, v in node.items() if k not in ("$defs", "discriminator")}

    schema: Schema = inline({k: v for k, v in raw.items() if k != "$defs"}, ())
    done: set[str] = set()
    while pending := [name for name in kept if name not in done]:  # inlining may find more cycles
        for name in pending:
            kept[name] = inline(_strip_struct_labels(defs[name]), (name,))
            done.add(name)
    if kept:
        schema["$defs"] = kept
    return schema


def _strip_struct_labels(node: Schema) -> Schema:
    # msgspec titles every Struct with its class name and describes it with its docstring; both are
    # Python-side notes, not instructions for the model (Pi's TypeBox objects carry neither).
    out = {k: v for k, v in node.items() if k not in ("title", "description")}
    if out.get("required") == []:
        del out["required"]
    return out


def json_schema_of(parameters: type[msgspec.Struct] | dict[str, Any]) -> dict[str, Any]:
    """The self-contained JSON Schema sent to the model for a tool's parameters (spec 1.3)."""
    if isinstance(parameters, dict):
        return parameters
    return _struct_schema(parameters)


# --- compiled validators ------------------------------------------------------------------------


def _compile(schema: Schema) -> SubschemaCheck | None:
    from pi_rpc.ai.plain_schema import PlainValidator, covers

    if covers(schema):
        return PlainValidator(schema)
    import jsonschema  # on the first call of a tool whose schema needs it, not at the daemon's start
    from jsonschema.exceptions import SchemaError

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        # Pi skips validation when its validator cannot compile the schema; do the same.
        log.warning("tool schema does not compile, arguments are not validated: %s", exc.message)
        return None
    validator: SubschemaCheck = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return validator


@functools.cache
def _struct_validator(parameters: type[msgspec.Struct]) -> SubschemaCheck | None:
    return _compile(_struct_schema(parameters))


@functools.lru_cache(maxsize=256)
def _dict_validator(schema_text: str) -> tuple[Schema, SubschemaCheck | None]:
    # Keyed by the schema's JSON text: dicts cannot be weakly referenced, and an id() key would go
    # stale if a client mutated its schema in place. The decoded copy is ours and never changes.
    from pi_rpc.ai.schema_errors import reject_unresolved_refs

    schema = reject_unresolved_refs(json.loads(schema_text))
    return schema, _compile(schema)


def prepare_validator(parameters: type[msgspec.Struct] | dict[str, Any]) -> None:
    """Compile (and keep) the validator of these parameters now, the coercion every check walks
    with (and jsonschema, if the schema needs it) included, rather than at the tool's first call."""
    from pi_rpc.ai.coercion import SchemaWalker  # noqa: F401 - imported for its module

    if isinstance(parameters, dict):
        _dict_validator(json.dumps(parameters))
    else:
        _struct_validator(parameters)


# --- entry point --------------------------------------------------------------------------------


def validate_tool_arguments(tool_name: str, parameters: type[msgspec.Struct] | dict[str, Any], args: Any) -> Any:
    """Clone, normalise, convert and check `args` (spec 3.3); the caller's object is untouched."""
    from pi_rpc.ai.coercion import SchemaWalker

    if isinstance(parameters, dict):
        schema, validator = _dict_validator(json.dumps(parameters))
    else:
        schema, validator = _struct_schema(parameters), _struct_validator(parameters)
    value = _clone(args)
    if validator is None:
        return value if isinstance(parameters, dict) else msgspec.convert(value, parameters, strict=False)
    walker = SchemaWalker(schema, validator)
    value = walker.drop_optional_nulls(schema, value, 0)
    value = walker.convert(schema, value, 0)
    value = walker.coerce(schema, value, 0)
    if not validator.is_valid(value):
        raise ToolArgumentsError(_format_failure(tool_name, _report(walker, value), args))
    if isinstance(parameters, dict):
        return value
    try:
        return msgspec.convert(value, parameters)
    except msgspec.ValidationError as exc:
        # The schema check passed but msgspec is stricter somewhere (e.g. a custom type).
        raise ToolArgumentsError(_format_failure(tool_name, [_msgspec_line(str(exc))], args)) from exc


def _clone(args: Any) -> Any:
    try:
        return msgspec.json.decode(msgspec.json.encode(args))
    except (TypeError, msgspec.EncodeError):
        return copy.deepcopy(args)


# --- error report (3.6) -------------------------------------------------------------------------


def _report(walker: SchemaWalker, value: Any) -> list[str]:
    from pi_rpc.ai.schema_errors import dotted_path, explain

    draft7 = type(walker.validator).__name__ in _DRAFT7_AND_OLDER
    return [f"  - {dotted_path(e.pointer)}: {e.message}" for e in explain(walker, value, draft7=draft7)]


# Drafts whose `$ref` hides its siblings and whose tuples are `items` arrays (pi-schema's draft "7").
_DRAFT7_AND_OLDER = ("Draft7Validator", "Draft6Validator", "Draft4Validator", "Draft3Validator")


def _msgspec_line(text: str) -> str:
    message, _, where = text.partition(" - at `$")
    path = where.rstrip("`").lstrip(".").replace("[", ".").replace("]", "")
    return f"  - {path or 'root'}: {message}"


def _format_failure(tool_name: str, lines: list[str], original: Any) -> str:
    from pi_rpc.ai.js_values import json_stringify

    body = "\n".join(lines) if lines else "Unknown validation error"
    return f'Validation failed for tool "{tool_name}":\n{body}\n\nReceived arguments:\n{json_stringify(original)}'

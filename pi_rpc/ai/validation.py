"""Tool-argument validation: the one check between the model's tool call and execute (spec 3.3).

Two kinds of parameter schema exist (spec 17.4). A msgspec Struct is a "builder" schema, the
counterpart of Pi's TypeBox built-ins: it gets TypeBox's lenient conversion (3.4) and comes back
as an instance of the Struct. A plain JSON Schema dict (extensions, MCP, clients) gets only the
AJV-style coercion (3.5) and comes back as a dict. Both first drop optional `null`s (3.3.2) and
are checked by `jsonschema`; failures are reported in Pi's layout so the model can fix its call.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from pi_rpc.ai.coercion import Schema, SchemaWalker
from pi_rpc.ai.js_values import is_number, js_string, json_stringify

if TYPE_CHECKING:
    import jsonschema
    from jsonschema.protocols import Validator

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
    """The self-contained JSON Schema sent to the model for a tool's parameters (spec 1.2a)."""
    if isinstance(parameters, dict):
        return parameters
    return _struct_schema(parameters)


# --- compiled validators ------------------------------------------------------------------------


def _compile(schema: Schema) -> Validator | None:
    import jsonschema  # on the first tool call, not at the daemon's start
    from jsonschema.exceptions import SchemaError

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        # Pi skips validation when its validator cannot compile the schema; do the same.
        log.warning("tool schema does not compile, arguments are not validated: %s", exc.message)
        return None
    validator: Validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return validator


@functools.cache
def _struct_validator(parameters: type[msgspec.Struct]) -> Validator | None:
    return _compile(_struct_schema(parameters))


@functools.lru_cache(maxsize=256)
def _dict_validator(schema_text: str) -> tuple[Schema, Validator | None]:
    # Keyed by the schema's JSON text: dicts cannot be weakly referenced, and an id() key would go
    # stale if a client mutated its schema in place. The decoded copy is ours and never changes.
    schema = json.loads(schema_text)
    return schema, _compile(schema)


def prepare_validator(parameters: type[msgspec.Struct] | dict[str, Any]) -> None:
    """Compile (and keep) the validator of these parameters now, jsonschema's import included,
    rather than at the tool's first call."""
    if isinstance(parameters, dict):
        _dict_validator(json.dumps(parameters))
    else:
        _struct_validator(parameters)


# --- entry point --------------------------------------------------------------------------------


def validate_tool_arguments(tool_name: str, parameters: type[msgspec.Struct] | dict[str, Any], args: Any) -> Any:
    """Clone, normalise, convert and check `args` (spec 3.3); the caller's object is untouched."""
    if isinstance(parameters, dict):
        schema, validator = _dict_validator(json.dumps(parameters))
    else:
        schema, validator = _struct_schema(parameters), _struct_validator(parameters)
    value = _clone(args)
    if validator is None:
        return value if isinstance(parameters, dict) else msgspec.convert(value, parameters, strict=False)
    walker = SchemaWalker(schema, validator)
    value = walker.drop_optional_nulls(schema, value, 0)
    if not isinstance(parameters, dict):
        value = walker.convert(schema, value, 0)
    value = walker.coerce(schema, value, 0)
    errors = _report(validator.iter_errors(value))
    if errors:
        raise ToolArgumentsError(_format_failure(tool_name, errors, args))
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


def _report(errors: Iterable[jsonschema.ValidationError]) -> list[str]:
    lines: list[str] = []
    seen_required: set[tuple[Any, ...]] = set()
    for error in errors:
        lines.extend(_lines_for(error, seen_required))
    return lines


def _lines_for(error: jsonschema.ValidationError, seen_required: set[tuple[Any, ...]]) -> list[str]:
    path = tuple(error.absolute_path)
    if error.validator == "required":
        names = error.validator_value if isinstance(error.validator_value, list) else []
        missing = [name for name in names if isinstance(error.instance, dict) and name not in error.instance]
        if path in seen_required or not missing:
            return []
        # jsonschema reports each missing name; TypeBox one line per object, at the first name.
        seen_required.add(path)
        return [f"  - {_path_text((*path, missing[0]))}: must have required properties {', '.join(missing)}"]
    if error.validator in ("anyOf", "oneOf"):
        member_errors = _single_plausible_member(error)
        if member_errors is not None:
            return [line for sub in member_errors for line in _lines_for(sub, seen_required)]
    return [f"  - {_path_text(path)}: {_message(error)}"]


def _single_plausible_member(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError] | None:
    """When exactly one union member fits the value's type and tag, its own errors are the useful ones."""
    by_member: dict[Any, list[jsonschema.ValidationError]] = {}
    for sub in error.context or ():
        by_member.setdefault(sub.relative_schema_path[0], []).append(sub)
    members = error.validator_value if isinstance(error.validator_value, list) else []
    plausible = [index for index in range(len(members)) if not any(map(_rules_member_out, by_member.get(index, [])))]
    if len(plausible) == 1 and by_member.get(plausible[0]):
        return by_member[plausible[0]]
    return None


def _rules_member_out(sub: jsonschema.ValidationError) -> bool:
    if sub.validator in ("type", "enum", "const") and len(sub.relative_path) == 0:
        return True
    # A wrong tag (a one-value enum or const one level down) means the value is for another member.
    single = sub.validator == "const" or (isinstance(sub.validator_value, list) and len(sub.validator_value) == 1)
    return sub.validator in ("enum", "const") and len(sub.relative_path) == 1 and single


def _path_text(path: Iterable[Any]) -> str:
    text = ".".join(str(part) for part in path)
    return text or "root"


def _bound(value: Any) -> str:
    return js_string(value) if is_number(value) else str(value)


_MESSAGES: dict[str, Callable[[Any], str]] = {
    "enum": lambda v: "must be equal to one of the allowed values",
    "const": lambda v: "must be equal to one of the allowed values",
    "minimum": lambda v: f"must be >= {_bound(v)}",
    "maximum": lambda v: f"must be <= {_bound(v)}",
    "exclusiveMinimum": lambda v: f"must be > {_bound(v)}",
    "exclusiveMaximum": lambda v: f"must be < {_bound(v)}",
    "multipleOf": lambda v: f"must be multiple of {_bound(v)}",
    "minLength": lambda v: f"must NOT have fewer than {v} characters",
    "maxLength": lambda v: f"must NOT have more than {v} characters",
    "minItems": lambda v: f"must NOT have fewer than {v} items",
    "maxItems": lambda v: f"must NOT have more than {v} items",
    "minProperties": lambda v: f"must NOT have fewer than {v} properties",
    "maxProperties": lambda v: f"must NOT have more than {v} properties",
    "uniqueItems": lambda v: "must NOT have duplicate items",
    "pattern": lambda v: f'must match pattern "{v}"',
    "format": lambda v: f'must match format "{v}"',
    "additionalProperties": lambda v: "must NOT have additional properties",
    "unevaluatedProperties": lambda v: "must NOT have unevaluated properties",
    "items": lambda v: "must NOT have more items",
    "anyOf": lambda v: "must match a schema in anyOf",
    "oneOf": lambda v: "must match exactly one schema in oneOf",
    "not": lambda v: "must NOT be valid",
    "contains": lambda v: "must contain at least 1 valid item(s)",
    "propertyNames": lambda v: "property name must be valid",
    "dependentRequired": lambda v: "must have the properties its dependencies require",
    "false": lambda v: "boolean schema is false",
}


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "type":
        types = error.validator_value
        return "must be " + (",".join(types) if isinstance(types, list) else str(types))
    build = _MESSAGES.get(str(error.validator))
    return build(error.validator_value) if build else error.message


def _msgspec_line(text: str) -> str:
    message, _, where = text.partition(" - at `$")
    path = where.rstrip("`").lstrip(".").replace("[", ".").replace("]", "")
    return f"  - {path or 'root'}: {message}"


def _format_failure(tool_name: str, lines: list[str], original: Any) -> str:
    body = "\n".join(lines) if lines else "Unknown validation error"
    return f'Validation failed for tool "{tool_name}":\n{body}\n\nReceived arguments:\n{json_stringify(original)}'

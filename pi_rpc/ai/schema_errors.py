"""Why a tool's arguments failed their schema, in pi-schema's words (spec 3.6; Pi 1.5.0 onwards).

Pi explains a failed value by walking the schema beside it and reporting each failing keyword at
the place it failed, as a JSON Pointer and a short message (`/path` "expected string, got array",
`/path` "missing"). jsonschema's own errors come in schema-key order, one per keyword, with its
own wording; the model sees Pi's, so this walk reproduces Pi's order, paths and messages, and uses
the compiled validator only to ask whether a subschema accepts a value.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from pi_rpc.ai.coercion import UNRESOLVED_REF, SchemaWalker, resolve_local_ref
from pi_rpc.ai.js_values import is_number, js_string, json_compact, json_equal, matches_type

_LISTED_VALUES = 20  # an enum's error names at most this many allowed values
_MAX_DEPTH = 200  # a `$ref` cycle that consumes no data ends here


def reject_unresolved_refs(schema: Any) -> Any:
    """A plain schema whose local `$ref`s that name nothing (a dangling definition in an MCP
    server's schema) become `false` at their place, as pi-schema's `unresolvedRefs: "reject"`
    compiles them: only values there fail (`unresolved reference #/$defs/x`), instead of every
    call of the tool. Remote references are left to the validator."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#") and resolve_local_ref(schema, ref) is None:
            return {"not": {}, UNRESOLVED_REF: ref}
        return {key: walk(value) for key, value in node.items()}

    return walk(schema)


class SchemaError(NamedTuple):
    """One failing keyword: where (a JSON Pointer, "" for the root), which keyword, and why."""

    pointer: str
    keyword: str
    message: str


def dotted_path(pointer: str) -> str:
    """The path the model reads: `/edits/0/oldText` is `edits.0.oldText`, the root is `root`."""
    if not pointer:
        return "root"
    return ".".join(part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/"))


def explain(walker: SchemaWalker, value: Any, *, draft7: bool) -> list[SchemaError]:
    """The errors of a value the schema rejected; at least one."""
    out: list[SchemaError] = []
    _Explainer(walker, draft7).walk(walker.root, value, "", out, 0)
    return out or [SchemaError("", "schema", "invalid")]


class _Explainer:
    def __init__(self, walker: SchemaWalker, draft7: bool) -> None:
        self.walker = walker
        self.draft7 = draft7

    def ok(self, node: Any, value: Any) -> bool:
        return self.walker.is_valid(node, value)

    def walk(self, node: Any, v: Any, path: str, out: list[SchemaError], depth: int) -> None:
        if node is True or depth > _MAX_DEPTH:
            return
        if node is False:
            out.append(SchemaError(path, "false", "no value is allowed here"))
            return
        if not isinstance(node, dict) or self.ok(node, v):
            return
        if isinstance(node.get(UNRESOLVED_REF), str):
            out.append(SchemaError(path, "$ref", f"unresolved reference {node[UNRESOLVED_REF]}"))
            return
        start = len(out)

        def push(keyword: str, message: str, at: str = path) -> None:
            out.append(SchemaError(at, keyword, message))

        if self.draft7 and isinstance(node.get("$ref"), str):  # draft 7 ignores a `$ref`'s siblings
            self.walk_ref(node["$ref"], v, path, out, depth)
            return
        if "type" in node:
            types = node["type"] if isinstance(node["type"], list) else [node["type"]]
            if not any(isinstance(t, str) and matches_type(v, t) for t in types):
                push("type", f"expected {' or '.join(map(str, types))}, got {_type_name(v)}")
                return  # nothing else about a value of the wrong type is worth saying
        if isinstance(node.get("enum"), list) and not any(json_equal(v, x) for x in node["enum"]):
            push("enum", f"expected one of {_list_values(node['enum'])}")
        if "const" in node and not json_equal(v, node["const"]):
            push("const", f"expected {json_compact(node['const'])}")
        if isinstance(v, str):
            self.walk_string(node, v, push)
        if is_number(v):
            _walk_number(node, v, push)
        if isinstance(v, dict):
            self.walk_object(node, v, path, out, push, depth)
        if isinstance(v, list):
            self.walk_array(node, v, path, out, push, depth)
        for member in node.get("allOf") or ():
            self.walk(member, v, path, out, depth + 1)
        if isinstance(node.get("anyOf"), list):
            self.walk_union(node["anyOf"], v, path, out, depth, exactly_one=False)
        if isinstance(node.get("oneOf"), list):
            self.walk_union(node["oneOf"], v, path, out, depth, exactly_one=True)
        if "not" in node and self.ok(node["not"], v):
            push("not", "must not match the schema in not")
        if "if" in node:
            branch = node.get("then") if self.ok(node["if"], v) else node.get("else")
            if branch is not None:
                self.walk(branch, v, path, out, depth + 1)
        if isinstance(node.get("$ref"), str):
            self.walk_ref(node["$ref"], v, path, out, depth)
        if len(out) == start and isinstance(v, dict) and node.get("unevaluatedProperties") is False:
            for key in v:
                if key not in self.evaluated_keys(node, v, depth):
                    push("unevaluatedProperties", "unknown field", _pointer(path, key))

    def walk_ref(self, ref: str, v: Any, path: str, out: list[SchemaError], depth: int) -> None:
        target = self.walker.resolve({"$ref": ref}, depth)
        if isinstance(target, dict) and target.get("$ref") == ref:
            out.append(SchemaError(path, "$ref", f"unresolved reference {ref}"))
            return
        self.walk(target, v, path, out, depth + 1)

    def walk_string(self, node: dict[str, Any], v: str, push: Any) -> None:
        if is_number(node.get("minLength")) and len(v) < node["minLength"]:
            push("minLength", f"expected at least {js_string(node['minLength'])} characters")
        if is_number(node.get("maxLength")) and len(v) > node["maxLength"]:
            push("maxLength", f"expected at most {js_string(node['maxLength'])} characters")
        if isinstance(node.get("pattern"), str) and not self.ok({"pattern": node["pattern"]}, v):
            push("pattern", f"expected to match {node['pattern']}")
        if isinstance(node.get("format"), str) and not self.ok({"format": node["format"]}, v):
            push("format", f"expected format {node['format']}")

    def walk_object(
        self, node: dict[str, Any], v: dict[str, Any], path: str, out: list[SchemaError], push: Any, depth: int
    ) -> None:
        properties = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        assert isinstance(properties, dict)
        for key in node.get("required") or ():
            if isinstance(key, str) and key not in v:
                push("required", "missing", _pointer(path, key))
        for key, sub in properties.items():
            if key in v:
                self.walk(sub, v[key], _pointer(path, key), out, depth + 1)
        patterns = node.get("patternProperties") if isinstance(node.get("patternProperties"), dict) else {}
        assert isinstance(patterns, dict)
        for key in v:
            matched = key in properties
            for pattern, sub in patterns.items():
                if re.search(pattern, key):
                    matched = True
                    self.walk(sub, v[key], _pointer(path, key), out, depth + 1)
            if not matched and "additionalProperties" in node:
                if node["additionalProperties"] is False:
                    push("additionalProperties", "unknown field", _pointer(path, key))
                else:
                    self.walk(node["additionalProperties"], v[key], _pointer(path, key), out, depth + 1)
            if "propertyNames" in node and not self.ok(node["propertyNames"], key):
                push("propertyNames", "invalid property name", _pointer(path, key))
        if is_number(node.get("minProperties")) and len(v) < node["minProperties"]:
            push("minProperties", f"expected at least {js_string(node['minProperties'])} properties")
        if is_number(node.get("maxProperties")) and len(v) > node["maxProperties"]:
            push("maxProperties", f"expected at most {js_string(node['maxProperties'])} properties")
        dependencies = {
            **({} if self.draft7 or not isinstance(node.get("dependentRequired"), dict) else node["dependentRequired"]),
            **(node["dependencies"] if isinstance(node.get("dependencies"), dict) else {}),
        }
        for key, needs in dependencies.items():
            if key not in v:
                continue
            if not isinstance(needs, list):
                self.walk(needs, v, path, out, depth + 1)
                continue
            for name in needs:
                if name not in v:
                    push("dependentRequired", f"required when {key} is present", _pointer(path, name))
        if not self.draft7 and isinstance(node.get("dependentSchemas"), dict):
            for key, sub in node["dependentSchemas"].items():
                if key in v:
                    self.walk(sub, v, path, out, depth + 1)

    def walk_array(
        self, node: dict[str, Any], v: list[Any], path: str, out: list[SchemaError], push: Any, depth: int
    ) -> None:
        prefix: list[Any] = []
        rest: Any = None
        if isinstance(node.get("items"), list):  # draft 7's tuple form
            prefix, rest = node["items"], node.get("additionalItems")
        else:
            if not self.draft7 and isinstance(node.get("prefixItems"), list):
                prefix = node["prefixItems"]
            rest = node.get("items")
        for index, item in enumerate(v):
            sub = prefix[index] if index < len(prefix) else rest
            if sub is not None:
                self.walk(sub, item, f"{path}/{index}", out, depth + 1)
        if is_number(node.get("minItems")) and len(v) < node["minItems"]:
            push("minItems", f"expected at least {js_string(node['minItems'])} items")
        if is_number(node.get("maxItems")) and len(v) > node["maxItems"]:
            push("maxItems", f"expected at most {js_string(node['maxItems'])} items")
        if node.get("uniqueItems") is True and not _unique(v):
            push("uniqueItems", "expected unique items")
        if "contains" in node:
            low = 1 if self.draft7 or not is_number(node.get("minContains")) else node["minContains"]
            high = None if self.draft7 or not is_number(node.get("maxContains")) else node["maxContains"]
            count = sum(1 for item in v if self.ok(node["contains"], item))
            if count < low or (high is not None and count > high):
                push("contains", _contains_message(low, high))

    def walk_union(
        self, branches: list[Any], v: Any, path: str, out: list[SchemaError], depth: int, *, exactly_one: bool
    ) -> None:
        matches = sum(1 for branch in branches if self.ok(branch, v))
        if matches == 1 or (not exactly_one and matches > 0):
            return
        keyword = "oneOf" if exactly_one else "anyOf"
        if matches > 1:
            out.append(SchemaError(path, keyword, "matches more than one alternative"))
            return
        # A union tagged by a constant property reports the branch the value's tag selects.
        tag = self.tag_of(branches, depth)
        if tag is not None and isinstance(v, dict):
            key, values = tag
            index = next((i for i, x in enumerate(values) if key in v and _same(v[key], x)), -1)
            if index < 0:
                out.append(SchemaError(_pointer(path, key), keyword, f"expected one of {_list_values(values)}"))
            else:
                self.walk(branches[index], v, path, out, depth + 1)
            return
        # Otherwise the branch that declares most of the object's keys, then the one whose first error is deepest.
        best: tuple[list[SchemaError], int] | None = None
        for branch in branches:
            errors: list[SchemaError] = []
            self.walk(branch, v, path, errors, depth + 1)
            if not errors:
                continue
            declared = self.declared_keys(branch, v, depth) if isinstance(v, dict) else 0
            if (
                best is None
                or declared > best[1]
                or (declared == best[1] and len(errors[0].pointer) > len(best[0][0].pointer))
            ):
                best = (errors, declared)
        out.extend(best[0] if best else [SchemaError(path, keyword, "matches no alternative")])

    def branch_properties(self, branch: Any, depth: int) -> dict[str, Any]:
        node = self.walker.resolve(branch, depth)
        properties = node.get("properties") if isinstance(node, dict) else None
        return properties if isinstance(properties, dict) else {}

    def declared_keys(self, branch: Any, v: dict[str, Any], depth: int) -> int:
        properties = self.branch_properties(branch, depth)
        return sum(1 for key in v if key in properties)

    def tag_of(self, branches: list[Any], depth: int) -> tuple[str, list[Any]] | None:
        if not branches:
            return None
        first = self.walker.resolve(branches[0], depth)
        if not isinstance(first, dict) or not isinstance(first.get("properties"), dict):
            return None
        for key in first["properties"]:
            tags = [self.branch_properties(branch, depth).get(key) for branch in branches]
            if not all(isinstance(tag, dict) and "const" in tag for tag in tags):
                continue
            values = [tag["const"] for tag in tags if isinstance(tag, dict)]
            if all(not isinstance(x, dict | list) for x in values) and _distinct(values):
                return key, values
        return None

    def evaluated_keys(self, node: dict[str, Any], v: dict[str, Any], depth: int) -> set[str]:
        """The keys `properties` and `patternProperties` cover here and in the members that accept `v`."""
        keys: set[str] = set()
        members = [node, *(node.get("allOf") or ())]
        members += [m for m in (*(node.get("anyOf") or ()), *(node.get("oneOf") or ())) if self.ok(m, v)]
        for member in members:
            resolved = self.walker.resolve(member, depth)
            if not isinstance(resolved, dict):
                continue
            keys.update(k for k in v if k in (resolved.get("properties") or {}))
            for pattern in resolved.get("patternProperties") or {}:
                keys.update(k for k in v if re.search(pattern, k))
        return keys


def _walk_number(node: dict[str, Any], v: float, push: Any) -> None:
    def bound(key: str) -> Any:
        value = node.get(key)
        return value if is_number(value) else None

    if (low := bound("minimum")) is not None and v < low:
        push("minimum", f"expected >= {js_string(low)}")
    if (high := bound("maximum")) is not None and v > high:
        push("maximum", f"expected <= {js_string(high)}")
    if (low := bound("exclusiveMinimum")) is not None and v <= low:
        push("exclusiveMinimum", f"expected > {js_string(low)}")
    if (high := bound("exclusiveMaximum")) is not None and v >= high:
        push("exclusiveMaximum", f"expected < {js_string(high)}")
    if (step := bound("multipleOf")) is not None and step != 0 and not _is_multiple(v, step):
        push("multipleOf", f"expected a multiple of {js_string(step)}")


def _is_multiple(v: float, step: float) -> bool:
    quotient = v / step
    return quotient == int(quotient) if abs(quotient) < 2**53 else True


def _contains_message(low: int, high: int | None) -> str:
    if high is None:
        return f"expected at least {low} matching {'item' if low == 1 else 'items'}"
    if low == 0:
        return f"expected at most {high} matching {'item' if high == 1 else 'items'}"
    return f"expected between {low} and {high} matching items"


def _list_values(values: list[Any]) -> str:
    if len(values) <= _LISTED_VALUES:
        return json_compact(values)
    listed = json_compact(values[:_LISTED_VALUES])
    return f"{listed[:-1]}, ... and {len(values) - _LISTED_VALUES} more]"


def _pointer(path: str, key: str) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, str):
        return "string"
    if is_number(v):
        return "integer" if matches_type(v, "integer") else "number"
    return type(v).__name__


def _same(a: Any, b: Any) -> bool:
    """JavaScript `===` on JSON primitives: `1` and `1.0` are one number, `true` is not `1`."""
    return not isinstance(a, dict | list) and json_equal(a, b)


def _distinct(values: list[Any]) -> bool:
    return all(not _same(a, b) for i, a in enumerate(values) for b in values[i + 1 :])


def _unique(items: list[Any]) -> bool:
    return all(not _deep_equal(a, b) for i, a in enumerate(items) for b in items[i + 1 :])


def _deep_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_deep_equal, a, b))
    return not isinstance(a, dict | list) and not isinstance(b, dict | list) and json_equal(a, b)

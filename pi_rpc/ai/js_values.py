"""JavaScript value semantics the tool-argument checks must reproduce (Pi runs on Node).

`+s` number parsing, `String(n)` number printing and `JSON.stringify(x, null, 2)` differ from
Python's `float()`, `repr()` and `json.dumps` in small ways a model can see in an error message.
JSON values here are msgspec/json decoded: None, bool, int, float, str, list, dict.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

import msgspec


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def matches_type(value: Any, type_name: str) -> bool:
    match type_name:
        case "null":
            return value is None
        case "boolean":
            return isinstance(value, bool)
        case "number":
            return is_number(value)
        case "integer":
            return is_number(value) and (isinstance(value, int) or value.is_integer())
        case "string":
            return isinstance(value, str)
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
    return False


def json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def as_number(x: float) -> int | float:
    """JS has one number type; keep integral results as int so they print as `12`, not `12.0`."""
    return int(x) if math.isfinite(x) and x.is_integer() else x


# JS StrWhiteSpaceChar: what `+s` trims (Python's str.strip() uses a different set).
JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Infinity")
_RADIX = re.compile(r"0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")


def js_to_number(text: str) -> float:
    """JS `+text`: NaN when the string is not a numeric literal."""
    s = text.strip(JS_SPACE)
    if not s:
        return 0.0
    if _RADIX.fullmatch(s):
        try:
            return float(int(s, 0))
        except OverflowError:
            return math.inf
    if _DECIMAL.fullmatch(s):
        return float(s.replace("Infinity", "inf"))
    return math.nan


def js_number_string(x: float) -> str:
    """JS `String(x)` for a number (Number::toString: plain up to 1e21, exponent below 1e-6)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    if isinstance(x, int):
        if abs(x) < 10**21:
            return str(x)
        x = float(x)
    sign = "-" if x < 0 else ""
    _, digit_tuple, exp = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k, n = len(digits), len(digits) + int(exp)  # value = 0.digits * 10**n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"


def js_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return js_number_string(value)


def json_stringify(value: Any, indent: str = "  ", _level: str = "") -> str:
    """JS `JSON.stringify(value, null, 2)`: numbers and empties printed as Node prints them."""
    inner = _level + indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{inner}{json.dumps(str(k), ensure_ascii=False)}: {json_stringify(v, indent, inner)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + _level + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        items = [inner + json_stringify(v, indent, inner) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + _level + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) or value is None:
        return js_string(value)
    if is_number(value):
        return js_number_string(value) if math.isfinite(value) else "null"
    try:
        return json_stringify(msgspec.to_builtins(value), indent, _level)
    except TypeError:
        return json.dumps(str(value), ensure_ascii=False)


def json_compact(value: Any) -> str:
    """JS `JSON.stringify(value)`: no spaces, numbers as Node prints them."""
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{json_compact(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list | tuple):
        return "[" + ",".join(map(json_compact, value)) + "]"
    return json_stringify(value)

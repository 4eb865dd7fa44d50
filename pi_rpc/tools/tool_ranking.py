"""Ranking tools for a search query as Pi 1.6.0's `tool_search` ranks them (Okapi BM25 over a
tool's description and schema, with its name and its server's namespace as separate fields), so
a model tuned on Pi finds the same tools here. tools/tool_search.py is the tool that uses it.

The rules, Pi's: a tool matching more of the query's terms, in any field, ranks above one matching
fewer; a query term in the name counts 3 times its IDF (more than any number of mentions in the
description), in the namespace (its name, description and instructions) half of it; a tool whose
whole local name is in the query gets a bonus worth one more match of every term; a query that
is exactly a tool's name, or its suffix after `__`, ranks that tool first. Only the description is
length-normalised; ties keep the documents' order. Words are split at identifier boundaries
(`getIssue`, `get_issue`), lower-cased, English stop words dropped and plurals made singular.
One difference: text in scripts written without spaces (Chinese, …) is one word here, where Pi
segments it with `Intl.Segmenter`.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgspec

K1 = 1.2
B = 0.75
NAME_WEIGHT = 3.0
NAMESPACE_WEIGHT = 0.5

_STOP_WORDS = frozenset(
    "a an and are as at be by for from in is it of on or that the this to with".split()  # Pi's list
)
_ES_ENDINGS = re.compile(r"(ches|shes|sses|xes|zes)$")
_ASCII_WORDS = re.compile(r"^[a-z0-9 ]*$")
_ASCII_WORD = re.compile(r"^[a-z0-9]+$")


class SearchDocument(msgspec.Struct, frozen=True):
    """What a tool is found by: its name, its text (description, schema descriptions and property
    names) and its namespace's text."""

    name: str
    text: str
    namespace_text: str = ""


def _stem(term: str) -> str:
    """Naive singular form: `issues` matches `issue`, `searches` matches `search`."""
    if len(term) > 4 and term.endswith("ies"):
        return term[:-3] + "y"
    if len(term) > 4 and _ES_ENDINGS.search(term):
        return term[:-2]
    if len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
        return term[:-1]
    return term


def _word_char(char: str) -> bool:
    return unicodedata.category(char)[0] in "LMN"


def tokenize(text: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", unicodedata.normalize("NFC", text))
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced).lower()
    normalized = re.sub(r" +", " ", "".join(char if _word_char(char) else " " for char in spaced))
    words = normalized.split(" ") if _ASCII_WORDS.match(normalized) else normalized.split()
    return [_stem(word) if _ASCII_WORD.match(word) else word for word in words if word and word not in _STOP_WORDS]


def schema_text(schema: Any, root: Any, parts: list[str], seen: list[Any]) -> None:
    """Descriptions and property names of a JSON Schema, recursively, following local `$ref`s
    into `root` once each."""
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve_ref(ref, root)
        if isinstance(target, dict) and not any(target is other for other in seen):
            seen.append(target)
            schema_text(target, root, parts, seen)
    if isinstance(schema.get("description"), str):
        parts.append(schema["description"])
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, value in properties.items():
            parts.append(name)
            schema_text(value, root, parts, seen)
    schema_text(schema.get("items"), root, parts, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        variants = schema.get(key)
        if isinstance(variants, list):
            for variant in variants:
                schema_text(variant, root, parts, seen)


def _resolve_ref(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        return None
    target = root
    for part in (p.replace("~1", "/").replace("~0", "~") for p in ref[1:].split("/") if p):
        if not isinstance(target, dict) or part not in target:
            return None
        target = target[part]
    return target


def search_document(name: str, description: str, parameters: Any, namespace_text: str = "") -> SearchDocument:
    parts = [description]
    schema_text(parameters, parameters, parts, [parameters])
    return SearchDocument(name, " ".join(part for part in parts if part.strip()), namespace_text)


def _normal_name(name: str) -> str:
    return re.sub(r"[^a-z0-9_$]", "_", name.strip().lower())


class _Indexed(msgspec.Struct):
    name: str
    name_terms: set[str]
    local_terms: list[str]
    counts: Counter[str]
    length: int
    namespace_terms: set[str]


def _index(document: SearchDocument) -> _Indexed:
    counts = Counter(tokenize(document.text))
    local = list(dict.fromkeys(tokenize(document.name.split("__")[-1])))
    return _Indexed(
        document.name,
        set(tokenize(document.name)),
        local,
        counts,
        sum(counts.values()),
        set(tokenize(document.namespace_text)),
    )


def rank(query: str, documents: Sequence[SearchDocument], limit: int) -> list[str]:
    """The names of the best `limit` documents for `query`, best first (the module's rules)."""
    terms = list(dict.fromkeys(tokenize(query)))
    if not terms or not documents or limit <= 0:
        return []
    indexed = [_index(document) for document in documents]
    average = sum(doc.length for doc in indexed) / len(indexed) or 1
    idf = {}
    for term in terms:
        frequency = sum(1 for d in indexed if term in d.name_terms or term in d.counts or term in d.namespace_terms)
        idf[term] = math.log(1 + (len(indexed) - frequency + 0.5) / (frequency + 0.5))
    full_name_bonus = sum(idf.values())
    exact_query = _normal_name(query)
    matches: list[tuple[bool, int, float, int, str]] = []
    for order, doc in enumerate(indexed):
        norm = K1 * (1 - B + B * doc.length / average)
        score, covered = 0.0, 0
        for term in terms:
            count = doc.counts.get(term, 0)
            weight = (
                (NAME_WEIGHT if term in doc.name_terms else 0.0)
                + (NAMESPACE_WEIGHT if term in doc.namespace_terms else 0.0)
                + count * (K1 + 1) / (count + norm)
            )
            covered += weight > 0
            score += idf[term] * weight
        if score == 0:
            continue
        if doc.local_terms and all(term in terms for term in doc.local_terms):
            score += full_name_bonus
        name = _normal_name(doc.name)
        exact = name == exact_query or name.endswith(f"__{exact_query}")
        matches.append((exact, covered, score, order, doc.name))
    matches.sort(key=lambda match: (not match[0], -match[1], -match[2], match[3]))
    return [match[4] for match in matches[:limit]]

"""How Pi names a model on its command line (spec 18.9): `--model`, `--provider`, and the `--models` scope
(settings.json `enabledModels`) that `cycle_model` walks.

A reference is matched as Pi's model resolver matches it: an exact `provider/id` or id first
(case-insensitive, refused when it is ambiguous), then any model whose id or name contains it,
preferring an alias (`claude-sonnet-4-5`) to a dated release (`claude-sonnet-4-5-20250929`). A
`:level` suffix names a thinking level, unless the whole text, colon included, is a model's id
(OpenRouter's `model:exacto`). `--model provider/pattern` limits the search to that provider; a
provider with no such model is given one by that id, built on the provider's default model (Pi's
custom-model fallback), with a warning. Scope patterns may be globs (`anthropic/*`, `*sonnet*`),
matched as minimatch matches them without case (session/resources/path_patterns.py), as Pi does.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence

import msgspec

from pi_rpc.ai import Model, ThinkingLevel, thinking_level_of
from pi_rpc.session.resources.path_patterns import glob_matches

_DATED = re.compile(r"-\d{8}$")
_GLOB_CHARS = ("*", "?", "[")


class PatternMatch(msgspec.Struct, frozen=True):
    """A model a pattern names, the thinking level its `:level` suffix names, and what to warn."""

    model: Model | None
    thinking_level: ThinkingLevel | None = None
    warning: str | None = None


class CliModel(msgspec.Struct, frozen=True):
    """What `--provider`/`--model` resolve to; `error` (and no model) when nothing fits."""

    model: Model | None
    thinking_level: ThinkingLevel | None = None
    warning: str | None = None
    error: str | None = None


class ScopedModel(msgspec.Struct, frozen=True):
    """One model of the cycling scope, with the level its pattern fixed (None: keep the current)."""

    model: Model
    thinking_level: ThinkingLevel | None = None


def _same(a: Model, b: Model) -> bool:
    return a.provider == b.provider and a.id == b.id


def find_exact(reference: str, models: Sequence[Model]) -> Model | None:
    """The one model `reference` names exactly: `provider/id`, else an id no two providers share."""
    wanted = reference.strip()
    if not wanted:
        return None
    lowered = wanted.lower()
    canonical = [m for m in models if f"{m.provider}/{m.id}".lower() == lowered]
    if canonical:
        return canonical[0] if len(canonical) == 1 else None
    provider, slash, model_id = wanted.partition("/")
    if slash and provider.strip() and model_id.strip():
        by_provider = [
            m
            for m in models
            if m.provider.lower() == provider.strip().lower() and m.id.lower() == model_id.strip().lower()
        ]
        if by_provider:
            return by_provider[0] if len(by_provider) == 1 else None
    by_id = [m for m in models if m.id.lower() == lowered]
    return by_id[0] if len(by_id) == 1 else None


def _is_alias(model_id: str) -> bool:
    return model_id.endswith("-latest") or not _DATED.search(model_id)


def match_model(pattern: str, models: Sequence[Model]) -> Model | None:
    """An exact match, else the best model whose id or name contains `pattern`: the highest alias,
    else the newest dated release (ids compared case-insensitively; Pi compares by locale)."""
    exact = find_exact(pattern, models)
    if exact is not None:
        return exact
    needle = pattern.lower()
    partial = [m for m in models if needle in m.id.lower() or needle in (m.name or "").lower()]
    if not partial:
        return None
    aliases = [m for m in partial if _is_alias(m.id)]
    return max(aliases or partial, key=lambda m: m.id.casefold())


def parse_model_pattern(pattern: str, models: Sequence[Model], *, strict: bool = False) -> PatternMatch:
    """`pattern`, with an optional `:level` suffix. Strict (the command line's `--model`): a suffix
    that is no level is part of the id, so a typo never picks another model; lenient (a scope):
    the suffix is dropped with a warning."""
    found = match_model(pattern, models)
    if found is not None:
        return PatternMatch(found)
    prefix, colon, suffix = pattern.rpartition(":")
    if not colon:
        return PatternMatch(None)
    if (suffix_level := thinking_level_of(suffix)) is not None:
        inner = parse_model_pattern(prefix, models, strict=strict)
        if inner.model is None:
            return inner
        return PatternMatch(inner.model, None if inner.warning else suffix_level, inner.warning)
    if strict:
        return PatternMatch(None)
    inner = parse_model_pattern(prefix, models, strict=strict)
    if inner.model is None:
        return inner
    return PatternMatch(
        inner.model, None, f'Invalid thinking level "{suffix}" in pattern "{pattern}". Using default instead.'
    )


def _exact_anywhere(reference: str, models: Sequence[Model]) -> Model | None:
    lowered = reference.lower()
    return next((m for m in models if lowered in (m.id.lower(), f"{m.provider}/{m.id}".lower())), None)


def _custom_model(provider: str, model_id: str, models: Sequence[Model], defaults: Mapping[str, str]) -> Model | None:
    """A model of `provider` by an id it does not list, on the provider's default model's settings."""
    own = [m for m in models if m.provider == provider]
    if not own:
        return None
    base = next((m for m in own if m.id == defaults.get(provider)), own[0])
    custom = copy.deepcopy(base)
    custom.id = model_id
    custom.name = model_id
    return custom


def resolve_cli_model(
    provider: str | None, reference: str, models: Sequence[Model], defaults: Mapping[str, str]
) -> CliModel:
    """`--provider`/`--model` as Pi resolves them against every known model (`defaults`: each
    provider's default model id, the base of a custom id)."""
    if not models:
        return CliModel(None, error="No models available. Check your installation or add models to models.json.")
    providers = {m.provider.lower(): m.provider for m in models}
    chosen = providers.get(provider.lower()) if provider else None
    if provider and chosen is None:
        return CliModel(None, error=f'Unknown provider "{provider}"')
    pattern = reference
    inferred = False
    if chosen is None:
        head, slash, tail = reference.partition("/")
        if slash and head.lower() in providers:
            chosen, pattern, inferred = providers[head.lower()], tail, True
    if chosen is None:
        exact = _exact_anywhere(reference, models)
        if exact is not None:
            return CliModel(exact)
    elif provider and pattern.lower().startswith(f"{chosen}/".lower()):
        pattern = pattern[len(chosen) + 1 :]
    candidates = [m for m in models if m.provider == chosen] if chosen else list(models)
    found = parse_model_pattern(pattern, candidates, strict=True)
    if found.model is not None:
        return CliModel(found.model, found.thinking_level, found.warning)
    if inferred:  # "openai/gpt-4o:extended" may be one id of another provider (OpenRouter's)
        exact = _exact_anywhere(reference, models)
        if exact is not None:
            return CliModel(exact)
        anywhere = parse_model_pattern(reference, models, strict=True)
        if anywhere.model is not None:
            return CliModel(anywhere.model, anywhere.thinking_level, anywhere.warning)
    if chosen is not None:
        custom = _custom_model(chosen, pattern, models, defaults)
        if custom is not None:
            note = f'Model "{pattern}" not found for provider "{chosen}". Using custom model id.'
            return CliModel(custom, warning=f"{found.warning} {note}" if found.warning else note)
    return CliModel(None, warning=found.warning, error=f"Model not found: {chosen or '*'}/{pattern}")


def resolve_model_scope(patterns: Sequence[str], models: Sequence[Model]) -> tuple[list[ScopedModel], list[str]]:
    """The cycling scope `patterns` name among `models` (each model once, in pattern order), and a
    warning for each pattern that names none or carries a bad level."""
    scope: list[ScopedModel] = []
    warnings: list[str] = []

    def add(model: Model, level: ThinkingLevel | None) -> None:
        if not any(_same(kept.model, model) for kept in scope):
            scope.append(ScopedModel(model, level))

    for pattern in patterns:
        if any(char in pattern for char in _GLOB_CHARS):
            glob, colon, suffix = pattern.rpartition(":")
            level = thinking_level_of(suffix) if colon else None
            glob = glob if level is not None else pattern
            matching = [
                m
                for m in models
                if glob_matches(f"{m.provider}/{m.id}", glob, nocase=True) or glob_matches(m.id, glob, nocase=True)
            ]
            if not matching:
                warnings.append(f'No models match pattern "{pattern}"')
            for model in matching:
                add(model, level)
            continue
        found = parse_model_pattern(pattern, models)
        if found.warning:
            warnings.append(found.warning)
        if found.model is None:
            warnings.append(f'No models match pattern "{pattern}"')
        else:
            add(found.model, found.thinking_level)
    return scope, warnings

"""The built-in model catalogue and the thinking-level mapping per API.

Limits and prices follow the vendors' published figures (dollars per million tokens), as Pi's
generated catalogue (`packages/ai/src/models.generated.ts`) records them. `compat` carries the
capability flags providers read: `supportsStrictTools` (Anthropic) and `supportsStrictMode` /
`supportsOpenAIGrammarTools` (OpenAI), as in Pi's model metadata.

Thinking levels (`off` … `xhigh`) follow Pi's `thinkingLevelMap` semantics: a level missing from
the map uses the API's own name for it (except `xhigh`, which a model must opt into); a level
mapped to `None` is unsupported and requests for it are clamped to the nearest supported level.
"""

from __future__ import annotations

import copy

from pi_rpc.ai.apis import ANTHROPIC, OPENAI
from pi_rpc.ai.compat import ModelCompat
from pi_rpc.ai.types import THINKING_LEVELS, Model, ModelCost, ThinkingLevel, model_compat

# Pi's default thinking budgets (`DEFAULT_THINKING_BUDGETS`), in tokens.
THINKING_BUDGETS: dict[ThinkingLevel, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
# Tokens always left for the answer when a thinking budget shares the output ceiling.
MIN_ANSWER_TOKENS = 1024


def _anthropic(
    model_id: str,
    name: str,
    cost: tuple[float, float, float, float],
    *,
    context_window: int = 200_000,
    max_tokens: int = 64_000,
    adaptive: bool = False,
) -> Model:
    level_map: dict[str, str | None] = {}
    if adaptive:
        # Adaptive-thinking models take an effort instead of a budget and have a `max` effort.
        level_map["xhigh"] = "max"
    model = Model(
        id=model_id,
        name=name,
        api="anthropic-messages",
        provider=ANTHROPIC.name,
        base_url=ANTHROPIC.base_url,
        reasoning=True,
        input=["text", "image"],
        cost=ModelCost(input=cost[0], output=cost[1], cache_read=cost[2], cache_write=cost[3]),
        context_window=context_window,
        max_tokens=max_tokens,
        compat=ModelCompat(supports_strict_tools=True, force_adaptive_thinking=True if adaptive else None),
    )
    if level_map:
        model.thinking_level_map = level_map
    return model


def _openai(
    model_id: str,
    name: str,
    cost: tuple[float, float, float],
    *,
    context_window: int = 400_000,
    max_tokens: int = 128_000,
    reasoning: bool = True,
    level_map: dict[str, str | None] | None = None,
    grammar: bool = True,
) -> Model:
    model = Model(
        id=model_id,
        name=name,
        api="openai-responses",
        provider=OPENAI.name,
        base_url=OPENAI.base_url,
        reasoning=reasoning,
        input=["text", "image"],
        cost=ModelCost(input=cost[0], output=cost[1], cache_read=cost[2]),
        context_window=context_window,
        max_tokens=max_tokens,
        compat=ModelCompat(supports_strict_mode=True, supports_open_ai_grammar_tools=grammar),
    )
    if level_map is not None:
        model.thinking_level_map = level_map
    return model


# GPT-5.1 and later accept effort "none" but dropped "minimal"; GPT-5 has "minimal" but no "none";
# the o-series always reasons.
_GPT5_MAP: dict[str, str | None] = {"off": "minimal"}
_GPT51_MAP: dict[str, str | None] = {"minimal": None}
_GPT52_MAP: dict[str, str | None] = {"minimal": None, "xhigh": "xhigh"}
_O_SERIES_MAP: dict[str, str | None] = {"off": None, "minimal": None}

_CATALOGUE: tuple[Model, ...] = (
    _anthropic("claude-opus-4-6", "Claude Opus 4.6", (5, 25, 0.5, 6.25), max_tokens=128_000, adaptive=True),
    _anthropic("claude-sonnet-4-6", "Claude Sonnet 4.6", (3, 15, 0.3, 3.75), adaptive=True),
    _anthropic("claude-opus-4-5", "Claude Opus 4.5", (5, 25, 0.5, 6.25)),
    _anthropic("claude-sonnet-4-5", "Claude Sonnet 4.5", (3, 15, 0.3, 3.75)),
    _anthropic("claude-haiku-4-5", "Claude Haiku 4.5", (1, 5, 0.1, 1.25)),
    _anthropic("claude-opus-4-1", "Claude Opus 4.1", (15, 75, 1.5, 18.75), max_tokens=32_000),
    # 272k keeps requests inside OpenAI's short-context price tier (Pi's default for GPT-5.4+).
    _openai("gpt-5.4", "GPT-5.4", (2.5, 15, 0.25), context_window=272_000, level_map=_GPT52_MAP),
    _openai("gpt-5.2", "GPT-5.2", (1.75, 14, 0.175), level_map=_GPT52_MAP),
    _openai("gpt-5.1", "GPT-5.1", (1.25, 10, 0.125), level_map=_GPT51_MAP),
    _openai("gpt-5.1-codex", "GPT-5.1 Codex", (1.25, 10, 0.125), level_map=_GPT51_MAP),
    _openai("gpt-5", "GPT-5", (1.25, 10, 0.125), level_map=_GPT5_MAP),
    _openai("gpt-5-mini", "GPT-5 Mini", (0.25, 2, 0.025), level_map=_GPT5_MAP),
    _openai("gpt-5-nano", "GPT-5 Nano", (0.05, 0.4, 0.005), level_map=_GPT5_MAP),
    _openai(
        "gpt-4.1", "GPT-4.1", (2, 8, 0.5), context_window=1_047_576, max_tokens=32_768, reasoning=False, grammar=False
    ),
    _openai(
        "o3", "o3", (2, 8, 0.5), context_window=200_000, max_tokens=100_000, level_map=_O_SERIES_MAP, grammar=False
    ),
    _openai(
        "o4-mini",
        "o4-mini",
        (1.1, 4.4, 0.275),
        context_window=200_000,
        max_tokens=100_000,
        level_map=_O_SERIES_MAP,
        grammar=False,
    ),
)

# The model picked when a provider becomes usable and nothing else was chosen.
DEFAULT_MODEL_IDS: dict[str, str] = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5.4"}


def list_models() -> list[Model]:
    """Every built-in model (copies: callers may change them freely)."""
    return [copy.deepcopy(model) for model in _CATALOGUE]


def get_model(provider: str, model_id: str) -> Model | None:
    for model in _CATALOGUE:
        if model.provider == provider and model.id == model_id:
            return copy.deepcopy(model)
    return None


# --- thinking levels -----------------------------------------------------------------------------


def _level_map(model: Model) -> dict[str, str | None]:
    return model.thinking_level_map if isinstance(model.thinking_level_map, dict) else {}


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """The levels a user may pick for `model` (Pi `getSupportedThinkingLevels`)."""
    if not model.reasoning:
        return ["off"]
    level_map = _level_map(model)
    supported: list[ThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in level_map and level_map[level] is None:
            continue
        if level == "xhigh" and level not in level_map:
            continue
        supported.append(level)
    return supported


def clamp_thinking_level(model: Model, level: ThinkingLevel) -> ThinkingLevel:
    """The supported level nearest `level`, looking upward first (Pi `clampThinkingLevel`)."""
    supported = supported_thinking_levels(model)
    if level in supported:
        return level
    wanted = THINKING_LEVELS.index(level) if level in THINKING_LEVELS else 0
    for candidate in THINKING_LEVELS[wanted:]:
        if candidate in supported:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:wanted]):
        if candidate in supported:
            return candidate
    return supported[0] if supported else "off"


def openai_reasoning_effort(model: Model, level: ThinkingLevel) -> str | None:
    """The OpenAI `reasoning.effort` (Responses) / `reasoning_effort` (Chat Completions) value.

    `None` means: send no reasoning parameter (a non-reasoning model, or a model whose map marks
    `off` as impossible and the level clamps to nothing else).
    """
    if not model.reasoning:
        return None
    clamped = clamp_thinking_level(model, level)
    level_map = _level_map(model)
    if clamped == "off":
        if "off" in level_map:
            return level_map["off"]
        return "none"
    mapped = level_map.get(clamped)
    return mapped if mapped is not None else clamped


def anthropic_thinking_budget(level: ThinkingLevel) -> int:
    """Budget tokens for budget-style Anthropic thinking; `xhigh` counts as `high`."""
    if level == "off":
        return 0
    return THINKING_BUDGETS["high" if level == "xhigh" else level]


# Claude 4.6 models choose their own thinking depth (`thinking: {type: "adaptive"}`); a configured
# model says so with `compat.forceAdaptiveThinking`.
_ADAPTIVE_MODEL_TAGS = ("opus-4-6", "opus-4.6", "sonnet-4-6", "sonnet-4.6")
_ANTHROPIC_EFFORTS: dict[ThinkingLevel, str] = {
    "minimal": "low",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "xhigh": "max",
}


def anthropic_adaptive_thinking(model: Model) -> bool:
    return model_compat(model).force_adaptive_thinking is True or any(tag in model.id for tag in _ADAPTIVE_MODEL_TAGS)


def anthropic_effort(model: Model, level: ThinkingLevel) -> str | None:
    """The `output_config.effort` for adaptive-thinking models; `None` when thinking is off. The
    model's `thinkingLevelMap` names the effort where it has one (Pi); the level is not clamped
    here, the session has done that already."""
    if level == "off":
        return None
    mapped = _level_map(model).get(level)
    return mapped if mapped is not None else _ANTHROPIC_EFFORTS[level]


def adjust_max_tokens_for_thinking(
    base_max_tokens: int | None, model_max_tokens: int, level: ThinkingLevel
) -> tuple[int, int]:
    """(max_tokens, thinking_budget) for budget-style thinking (Pi `adjustMaxTokensForThinking`).

    Without a caller cap the model's ceiling is used and the budget fits inside it; with one, the
    budget is added on top, still under the model's ceiling, leaving room for the answer.
    """
    budget = anthropic_thinking_budget(level)
    if base_max_tokens is None:
        max_tokens = model_max_tokens
    else:
        max_tokens = min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))
    return max_tokens, budget


# --- names ---------------------------------------------------------------------------------------


def closest_model_names(provider: str | None, model_id: str | None, models: list[Model], limit: int = 3) -> list[str]:
    """`provider/id` names of `models` nearest to what was asked for, best first, for a
    "Model not found" message (a typo, a retired id such as `gpt-4o`, a model of another provider)."""
    names = [f"{model.provider}/{model.id}" for model in models]
    if model_id is None:
        return [name for name in names if name.startswith(f"{provider}/")][:limit]
    ids = {f"{model.provider}/{model.id}": model.id for model in models}
    if provider is not None:
        same = [name for name in names if name.startswith(f"{provider}/")]
        names = same or names
    import difflib  # for this message alone, not in every daemon

    by_id = difflib.get_close_matches(model_id, [ids[name] for name in names], n=limit, cutoff=0.5)
    found = [name for wanted in by_id for name in names if ids[name] == wanted]
    return list(dict.fromkeys(found))[:limit]


def not_found_hint(provider: str | None, model_id: str | None, models: list[Model], *, cli: bool = False) -> str:
    """The tail of a "Model not found" message: the closest names (and, on the command line,
    where the whole list is); empty for a client when nothing is close."""
    close = closest_model_names(provider, model_id, models)
    listing = " (`pi-rpc models` lists every model)" if cli else ""
    return f". Did you mean {', '.join(close)}?{listing}" if close else listing

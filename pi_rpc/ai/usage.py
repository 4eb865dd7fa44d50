"""Price a turn's token usage from a model's per-million-token costs."""

from __future__ import annotations

from msgspec import UNSET

from pi_rpc.ai.types import Cost, ModelCost, Usage


def price_usage(usage: Usage, cost: ModelCost, billed: float | None = None) -> Usage:
    """Return `usage` with `cost` and `total_tokens` filled in; `billed`, what the provider said
    the request cost, is the total when given (Pi's `totalFromProvider`)."""
    per_token = 1 / 1_000_000
    priced = Cost(
        input=usage.input * cost.input * per_token,
        output=usage.output * cost.output * per_token,
        cache_read=usage.cache_read * cost.cache_read * per_token,
        cache_write=usage.cache_write * cost.cache_write * per_token,
    )
    priced.total = priced.input + priced.output + priced.cache_read + priced.cache_write
    priced.total_from_provider = billed is not None
    if billed is not None:
        priced.total = billed
    total = usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)
    return Usage(
        input=usage.input,
        output=usage.output,
        cache_read=usage.cache_read,
        cache_write=usage.cache_write,
        reasoning=usage.reasoning if usage.reasoning is not UNSET else 0,
        total_tokens=total,
        cost=priced,
    )


def add_usage(a: Usage, b: Usage) -> Usage:
    """Sum of two usages, tokens and cost alike (a run's total over its turns)."""
    return Usage(
        input=a.input + b.input,
        output=a.output + b.output,
        cache_read=a.cache_read + b.cache_read,
        cache_write=a.cache_write + b.cache_write,
        total_tokens=a.total_tokens + b.total_tokens,
        cost=Cost(
            input=a.cost.input + b.cost.input,
            output=a.cost.output + b.cost.output,
            cache_read=a.cost.cache_read + b.cost.cache_read,
            cache_write=a.cost.cache_write + b.cost.cache_write,
            total=a.cost.total + b.cost.total,
        ),
    )

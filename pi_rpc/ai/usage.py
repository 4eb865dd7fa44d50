"""Price a turn's token usage from a model's per-million-token costs."""

from __future__ import annotations

from pi_rpc.ai.types import Cost, ModelCost, Usage


def price_usage(usage: Usage, cost: ModelCost) -> Usage:
    """Return `usage` with `cost` and `total_tokens` filled in."""
    per_token = 1 / 1_000_000
    priced = Cost(
        input=usage.input * cost.input * per_token,
        output=usage.output * cost.output * per_token,
        cache_read=usage.cache_read * cost.cache_read * per_token,
        cache_write=usage.cache_write * cost.cache_write * per_token,
    )
    priced.total = priced.input + priced.output + priced.cache_read + priced.cache_write
    total = usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)
    return Usage(input=usage.input, output=usage.output, cache_read=usage.cache_read,
                 cache_write=usage.cache_write, total_tokens=total, cost=priced)

"""`pi-rpc models`: every model pi-rpc knows (built in and from models.json), whether its
provider has a key now, and the one a daemon started with no model flags would use."""

from __future__ import annotations

import argparse
import sys

import msgspec

from pi_rpc.ai import ConfigError, Model, ModelRegistry, list_models, no_model_message


class ModelRow(msgspec.Struct, rename="camel", kw_only=True):
    """One line of `pi-rpc models --json`."""

    provider: str
    id: str
    name: str
    api: str
    base_url: str
    context_window: int
    # Where the context window came from: "built-in", "models.json", or "assumed" (none given).
    context_from: str
    source: str  # "built-in" or "models.json"
    has_key: bool
    key: str  # where the key comes from, never the key itself
    default: bool


def model_rows(registry: ModelRegistry) -> list[ModelRow]:
    builtin = {(model.provider, model.id) for model in list_models()}
    default = registry.default_model()
    rows = []
    for model in registry.all():
        key, has_key = registry.key_origin(model.provider)
        rows.append(
            ModelRow(
                provider=model.provider,
                id=model.id,
                name=model.name,
                api=model.api,
                base_url=model.base_url,
                context_window=model.context_window,
                context_from=registry.context_window_from(model),
                source="built-in" if (model.provider, model.id) in builtin else "models.json",
                has_key=has_key,
                key=key,
                default=default is not None and _same(default, model),
            )
        )
    return rows


def _same(a: Model, b: Model) -> bool:
    return a.provider == b.provider and a.id == b.id


def _context(tokens: int) -> str:
    return f"{tokens // 1000}k" if tokens >= 1000 else str(tokens)


def render_table(rows: list[ModelRow], registry: ModelRegistry) -> str:
    names = [f"{row.provider}/{row.id}" for row in rows]
    width = max([len("MODEL"), *map(len, names)])
    api_width = max(len(row.api) for row in rows)
    lines = [f"  {'MODEL'.ljust(width)}  {'API'.ljust(api_width)}  CONTEXT  KEY"]
    for name, row in zip(names, rows, strict=True):
        mark = "*" if row.default else " "
        key = ("yes: " if row.has_key else "no: ") + row.key
        context = _context(row.context_window) + ("?" if row.context_from == "assumed" else "")
        lines.append(f"{mark} {name.ljust(width)}  {row.api.ljust(api_width)}  {context:>7}  {key}")
    default = next((row for row in rows if row.default), None)
    lines.append("")
    if any(row.context_from == "assumed" for row in rows):
        lines.append("? context assumed: models.json gives no contextWindow for the model (set it to the server's)")
    if default is not None:
        lines.append(
            f"* the default: {default.provider}/{default.id} (the first provider with a key; "
            "--provider/--model or a client's model/set choose another)"
        )
    else:
        lines.append(no_model_message())
    where = registry.config_path
    lines.append(
        f"models.json: {where}"
        if where is not None
        else "models.json: none (built-in models only; examples in docs/CONFIGURATION.md of the pi-rpc repository)"
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="pi-rpc models",
        description="List the models pi-rpc knows: the built-in catalogue and your models.json. "
        "`*` marks the one a daemon started without --provider/--model uses.",
    )
    parser.add_argument("--json", action="store_true", help="one JSON array, for scripts and editors")
    parser.add_argument("--available", action="store_true", help="only models whose provider has a key")
    args = parser.parse_args(argv)
    try:
        registry = ModelRegistry.load()
    except ConfigError as exc:
        sys.stderr.write(f"pi-rpc: {exc}\n")
        return 2
    rows = model_rows(registry)
    if args.available:
        rows = [row for row in rows if row.has_key]
    if args.json:
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(rows), indent=2) + b"\n")
    elif rows:
        sys.stdout.write(render_table(rows, registry))
    else:
        sys.stdout.write(no_model_message() + "\n")
    sys.stdout.flush()
    return 0

"""protocol/schema.json is generated from the wire Structs and must match them
(docs/ARCHITECTURE.md, "Generated and recorded artefacts")."""

from __future__ import annotations

from pi_rpc.modes.jsonrpc.schema import DEFAULT_PATH, render


def test_schema_is_fresh() -> None:
    assert DEFAULT_PATH.read_bytes() == render(), (
        "protocol/schema.json is stale: run `python -m pi_rpc.modes.jsonrpc.schema`"
    )

"""`pi-rpc models` says where each context window came from."""

from __future__ import annotations

import json
from pathlib import Path

from pi_rpc.ai import ModelRegistry
from pi_rpc.commands.models import model_rows, render_table


def test_a_context_window_models_json_does_not_give_is_marked_assumed(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    local = {"baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions"}
    models = [{"id": "sized", "contextWindow": 8192}, {"id": "unsized"}]
    path.write_text(json.dumps({"providers": {"llama-cpp": {**local, "models": models}}}), encoding="utf-8")
    registry = ModelRegistry.load(path, env={})
    rows = {f"{row.provider}/{row.id}": row for row in model_rows(registry)}
    assert rows["llama-cpp/sized"].context_from == "models.json"
    assert rows["llama-cpp/unsized"].context_from == "assumed"
    assert rows["anthropic/claude-sonnet-4-5"].context_from == "built-in"
    table = render_table(list(rows.values()), registry)
    [unsized] = [line for line in table.splitlines() if "llama-cpp/unsized" in line]
    [sized] = [line for line in table.splitlines() if "llama-cpp/sized" in line]
    assert "128k?" in unsized and "8k " in sized and "?" not in sized
    assert "? context assumed: models.json gives no contextWindow" in table

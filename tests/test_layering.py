"""Dependencies point down: ai <- agent <- tools <- session <- modes (docs/ARCHITECTURE.md, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pi_rpc"

# layer -> pi_rpc layers it must not import
FORBIDDEN = {
    "ai": {"agent", "tools", "session", "modes", "demo"},
    "agent": {"tools", "session", "modes", "demo"},
    "tools": {"session", "modes", "demo", "agent.loop", "agent.agent", "agent.tool_calls"},
    "session": {"modes", "demo"},
}
# pygls and lsprotocol belong to the language server alone: the JSON-RPC mode has its own dispatch
# and must not pay their start-up.
PYGLS_MODES = {("modes", "lsp")}
PYGLS = {"pygls", "lsprotocol"}


def imports_of(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_imports_respect_the_layers(path: Path) -> None:
    relative = path.relative_to(PACKAGE).parts
    layer = relative[0] if len(relative) > 1 else ""
    for name in imports_of(path):
        top = name.split(".")[0]
        if top in PYGLS:
            assert relative[:2] in PYGLS_MODES, f"{path}: only modes/lsp may import {top}"
        if not name.startswith("pi_rpc."):
            continue
        target = name.removeprefix("pi_rpc.")
        for banned in FORBIDDEN.get(layer, ()):
            assert target != banned and not target.startswith(banned + "."), (
                f"{path.relative_to(PACKAGE)} imports pi_rpc.{target}, above its layer")
        # cli.py picks the mode; other modes (acp, pi) never import each other.
        if layer == "modes" and relative[1] not in ("jsonrpc", "cli.py") and target.startswith("modes.jsonrpc"):
            pytest.fail(f"{path}: modes never import each other")

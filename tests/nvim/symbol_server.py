"""A minimal LSP server for the Neovim tests: `workspace/symbol` over the workspace's Python files.

Each top-level `def` or `class` is a symbol whose range runs to the last indented line after it,
as a real server's would: what `@symbol:Name` sends is read from that range. Started by Neovim's
own LSP client (`vim.lsp.start`) over stdio:  python symbol_server.py <root>."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

DEFINITION = re.compile(r"^(def|class) (\w+)")
KINDS = {"def": types.SymbolKind.Function, "class": types.SymbolKind.Class}


def symbols_in(path: Path) -> list[types.SymbolInformation]:
    lines = path.read_text().splitlines()
    found: list[types.SymbolInformation] = []
    for start, line in enumerate(lines):
        match = DEFINITION.match(line)
        if not match:
            continue
        end = start
        while end + 1 < len(lines) and (lines[end + 1].startswith((" ", "\t")) or not lines[end + 1].strip()):
            end += 1
        while end > start and not lines[end].strip():
            end -= 1  # trailing blank lines are not the definition's
        span = types.Range(types.Position(start, 0), types.Position(end, len(lines[end])))
        found.append(
            types.SymbolInformation(
                name=match.group(2), kind=KINDS[match.group(1)], location=types.Location(path.as_uri(), span)
            )
        )
    return found


def serve(root: Path) -> None:
    server = LanguageServer("test-symbols", "1")

    @server.feature(types.WORKSPACE_SYMBOL)
    def workspace_symbol(params: types.WorkspaceSymbolParams) -> list[types.SymbolInformation]:
        every = [s for path in sorted(root.glob("*.py")) for s in symbols_in(path)]
        return [s for s in every if params.query.lower() in s.name.lower()]

    server.start_io()


if __name__ == "__main__":
    serve(Path(sys.argv[1]))

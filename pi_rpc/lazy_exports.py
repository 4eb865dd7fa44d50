"""Lazy re-exports for the layer packages (`pi_rpc.ai`, `.agent`, `.tools`, `.session`).

Each package names its public API once, as the imports in its `if TYPE_CHECKING:` block (what mypy
and editors read) and in `__all__`. At run time nothing is imported up front: the package's
module-level `__getattr__` (PEP 562), made here, finds the module a name is imported from in that
same block and loads it on first access. So `import pi_rpc.session` costs nothing, and reaching
for `pi_rpc.ai.Model` does not load the providers, httpx, jsonschema or the MCP SDK. Reading the
block rather than keeping a second table means the names cannot drift apart (the layout of
scientific Python's lazy loaders, whose stubs are read the same way).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["lazy_exports", "type_checking_imports"]


def type_checking_imports(source: str) -> dict[str, str]:
    """name -> module, for every `from module import name` under `if TYPE_CHECKING:`."""
    import ast  # only on a package's first lazy lookup, so importing a package stays cheap

    origins: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module is not None:
                    origins.update({alias.asname or alias.name: statement.module for alias in statement.names})
    return origins


def lazy_exports(package: str, names: Sequence[str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose public `names` are its `__all__`."""
    origins: dict[str, str] = {}

    def origin_of(name: str) -> str | None:
        if not origins:
            path = sys.modules[package].__file__
            assert path is not None  # a package on disk: its __init__.py
            origins.update(type_checking_imports(Path(path).read_text(encoding="utf-8")))
        return origins.get(name)

    def __getattr__(name: str) -> object:
        # Dunder probes (copy, pickle, inspect) and submodules the import system looks up first
        # are not exports: answer them without reading anything.
        module = origin_of(name) if name in names else None
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # The import statement's own path, not importlib.import_module: `-X importtime` lists only
        # what goes through it, and would count the module as its importer's own time.
        __import__(module)
        value = getattr(sys.modules[module], name)
        setattr(sys.modules[package], name, value)  # later lookups find it without this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__

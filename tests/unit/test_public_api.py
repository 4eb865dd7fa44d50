"""Each layer package re-exports the names the layers above it use, with an explicit `__all__`, and
loads nothing until a name is first used (docs/ARCHITECTURE.md, "Layers";
`pi_rpc/lazy_exports.py`)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_rpc.lazy_exports import type_checking_imports

PACKAGE = Path(__file__).resolve().parents[2] / "pi_rpc"
LAYERS = ("ai", "agent", "tools", "session")


def declared_origins(layer: str) -> dict[str, str]:
    return type_checking_imports((PACKAGE / layer / "__init__.py").read_text(encoding="utf-8"))


def submodules(layer: str) -> set[str]:
    return {
        path.stem for path in (PACKAGE / layer).iterdir() if path.suffix == ".py" or (path / "__init__.py").is_file()
    }


def imports_across_layers(layer: str) -> Iterator[tuple[Path, ast.ImportFrom]]:
    """Every `from pi_rpc.<layer>.<module> import ...` in a module outside `pi_rpc/<layer>/`."""
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] == layer or "workspace" in parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module or "").startswith(f"pi_rpc.{layer}.")
            ):
                yield path, node


def names_imported_across_layers(layer: str) -> set[str]:
    """What modules outside `pi_rpc/<layer>/` import from that layer's modules (a name that is also
    a submodule's cannot be re-exported: importing the submodule rebinds it on the package)."""
    found: set[str] = set()
    for _, node in imports_across_layers(layer):
        found |= {alias.name for alias in node.names}
    return found - submodules(layer)


@pytest.mark.parametrize("layer", LAYERS)
def test_all_lists_exactly_the_declared_names(layer: str) -> None:
    package = importlib.import_module(f"pi_rpc.{layer}")
    assert len(set(package.__all__)) == len(package.__all__)
    assert sorted(package.__all__) == sorted(declared_origins(layer))
    assert not set(package.__all__) & submodules(layer)


@pytest.mark.parametrize("layer", LAYERS)
def test_every_name_is_the_object_its_module_defines(layer: str) -> None:
    package = importlib.import_module(f"pi_rpc.{layer}")
    for name, module in declared_origins(layer).items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name), name
    assert set(package.__all__) <= set(dir(package))


@pytest.mark.parametrize("layer", LAYERS)
def test_the_layers_above_find_every_name_they_use_in_the_package(layer: str) -> None:
    missing = names_imported_across_layers(layer) - set(declared_origins(layer))
    assert not missing, f"add to pi_rpc/{layer}/__init__.py (the TYPE_CHECKING imports and __all__): {sorted(missing)}"


def test_an_unknown_name_is_an_attribute_error() -> None:
    import pi_rpc.session

    misspelt = "AgentSesion"
    with pytest.raises(AttributeError, match="has no attribute 'AgentSesion'"):
        getattr(pi_rpc.session, misspelt)


HEAVY = ("httpx", "jsonschema", "mcp", "PIL", "pi_rpc.ai.providers.faux", "pi_rpc.ai.providers.anthropic")

_PROBE = """
import sys
import pi_rpc.ai, pi_rpc.agent, pi_rpc.tools, pi_rpc.session
before = len([name for name in sys.modules if name.startswith("pi_rpc.")])
from pi_rpc.ai import Model, StreamOptions
from pi_rpc.session import AgentSession
from pi_rpc.tools import ToolDefinition
print(before, " ".join(name for name in sys.argv[1:] if name in sys.modules))
"""


def test_the_packages_load_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *HEAVY], capture_output=True, text=True, check=True, timeout=120
    )
    modules_at_import, *heavy_loaded = done.stdout.split()
    assert heavy_loaded == []
    # The four packages and the helper that makes their lookups lazy; no module behind them.
    assert int(modules_at_import) == 5


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_every_all_is_written_out(path: Path) -> None:
    """An `__all__` computed at run time (from `dir()`, say) lists whatever the module imported."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            assert isinstance(node.value, ast.List | ast.Tuple)
            assert all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in node.value.elts)


@pytest.mark.parametrize("layer", LAYERS)
def test_modules_outside_a_layer_import_it_through_its_package(layer: str) -> None:
    """The layer's modules are its own (they may be split or renamed); what other layers and the
    front ends use goes through `pi_rpc.<layer>`. A name that is also a submodule's cannot be
    re-exported (importing the submodule rebinds it), so only those may be imported from a module."""
    offenders = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} from {node.module}"
        for path, node in imports_across_layers(layer)
        if {alias.name for alias in node.names} - submodules(layer)
    ]
    assert offenders == [], f"import these from pi_rpc.{layer}: {offenders}"

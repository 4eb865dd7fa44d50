"""Dependencies point down: ai <- agent <- tools <- session <- modes (docs/ARCHITECTURE.md, "Layers").

Inside `modes/`, each front end (a package: jsonrpc, pi, acp, lsp) may use the shared pieces (the
modules directly in `modes/`) but never another front end. The composition root (`pi_rpc/cli.py`,
which picks the mode, and `__main__.py`, which runs it) sits above every layer: it may import any,
and nothing but `__main__.py` imports it. The demo is a client of the daemon: it speaks the wire
(framing) and never reaches into a front end, and no part of the daemon imports it.

No two modules import each other, directly or through others, not even inside a function: a cycle
means neither can be read, tested or loaded without the other (the provider registry once was one).
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Mapping
from pathlib import Path

import pytest

from pi_rpc.ai.apis import API_DECLARATIONS

PACKAGE = Path(__file__).resolve().parents[1] / "pi_rpc"

# layer -> pi_rpc layers it must not import
FORBIDDEN = {
    "ai": {"agent", "tools", "session", "modes", "demo", "commands", "cli"},
    "agent": {"tools", "session", "modes", "demo", "commands", "cli"},
    "tools": {"session", "modes", "demo", "commands", "cli", "agent.loop", "agent.agent", "agent.tool_calls"},
    "session": {"modes", "demo", "commands", "cli"},
    "modes": {"demo", "commands", "cli"},
    "demo": {"commands", "cli"},
}
# The modules that compose the program: they import every front end (and the subcommands).
COMPOSITION_ROOTS = {("cli.py",), ("__main__.py",)}
# The composition root's own module; only `python -m pi_rpc` (`__main__.py`) may import it.
COMPOSITION_ROOT = "pi_rpc.cli"
# pygls and lsprotocol belong to the language server alone: the JSON-RPC mode has its own dispatch
# and must not pay their start-up.
PYGLS_MODES = {("modes", "lsp")}
PYGLS = {"pygls", "lsprotocol"}
FRONT_ENDS = sorted(p.name for p in (PACKAGE / "modes").iterdir() if (p / "__init__.py").is_file())


def imports_of(path: Path) -> list[str]:
    """Every absolute import in the module, function-level ones included."""
    tree = ast.parse(path.read_text(), str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def is_within(target: str, prefix: str) -> bool:
    return target == prefix or target.startswith(prefix + ".")


def front_end_of(relative: tuple[str, ...]) -> str | None:
    return relative[1] if len(relative) > 2 and relative[0] == "modes" and relative[1] in FRONT_ENDS else None


def layering_problems(relative: tuple[str, ...], imported: list[str]) -> list[str]:
    """What `pi_rpc/<relative>` may not import, of the modules it does import."""
    if relative in COMPOSITION_ROOTS:
        return [] if relative == ("__main__.py",) or COMPOSITION_ROOT not in imported else ["imports itself"]
    layer = relative[0] if len(relative) > 1 else ""
    own_front_end = front_end_of(relative)
    problems: list[str] = []
    for name in imported:
        top = name.split(".")[0]
        if top in PYGLS and relative[:2] not in PYGLS_MODES:
            problems.append(f"only modes/lsp may import {top}")
        if not name.startswith("pi_rpc."):
            continue
        if is_within(name, COMPOSITION_ROOT):
            problems.append(f"imports {name}: nothing imports the composition root")
            continue
        target = name.removeprefix("pi_rpc.")
        problems += [
            f"imports pi_rpc.{target}, above its layer"
            for banned in FORBIDDEN.get(layer, ())
            if is_within(target, banned)
        ]
        if layer in ("modes", "demo"):
            problems += [
                f"imports pi_rpc.{target}: front ends never import each other, and the demo "
                "and the shared modes/*.py import none"
                for other in FRONT_ENDS
                if other != own_front_end and is_within(target, f"modes.{other}")
            ]
    return problems


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "workspace" not in p.relative_to(PACKAGE).parts)


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_imports_respect_the_layers(path: Path) -> None:
    relative = path.relative_to(PACKAGE).parts
    assert layering_problems(relative, imports_of(path)) == []


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        (("modes", "pi", "server.py"), "pi_rpc.modes.jsonrpc.protocol"),  # one front end into another
        (("modes", "acp", "agent.py"), "pi_rpc.modes.pi.commands"),
        (("modes", "stdio.py"), "pi_rpc.modes.acp.transport"),  # a shared piece into a front end
        (("modes", "jsonrpc", "server.py"), "pi_rpc.demo.rpc_client"),  # the daemon into the demo
        (("modes", "writer.py"), "pi_rpc.commands.doctor"),
        (("demo", "client.py"), "pi_rpc.modes.jsonrpc.protocol"),  # the demo into a front end
        (("session", "session.py"), "pi_rpc.modes.stdio"),
        (("tools", "bash.py"), "pi_rpc.demo"),
        (("modes", "pi", "server.py"), "pygls.protocol"),
        (("modes", "jsonrpc", "rpc.py"), "pygls.protocol"),  # the JSON-RPC mode dispatches on its own
        (("commands", "doctor.py"), "pi_rpc.cli"),  # nothing imports the composition root
        (("modes", "jsonrpc", "server.py"), "pi_rpc.cli"),
        (("demo", "client.py"), "pi_rpc.cli"),
        (("modes", "cli.py"), "pi_rpc.modes.acp.server"),  # the composition root lives at the top only
    ],
)
def test_each_rule_refuses_its_import(module: tuple[str, ...], imported: str) -> None:
    assert layering_problems(module, [imported]) != []


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        (("modes", "pi", "server.py"), "pi_rpc.modes.framing"),  # a front end uses the shared pieces
        (("modes", "jsonrpc", "server.py"), "pi_rpc.modes.jsonrpc.rpc"),  # and its own package
        (("demo", "rpc_client.py"), "pi_rpc.modes.framing"),  # the demo frames like a client
        (("cli.py",), "pi_rpc.modes.acp.server"),  # the composition root picks the front end
        (("cli.py",), "pi_rpc.demo.client"),  # and may import every layer
        (("cli.py",), "pi_rpc.commands"),
        (("cli.py",), "pi_rpc.session.session"),
        (("__main__.py",), "pi_rpc.cli"),  # `python -m pi_rpc` runs it
        (("modes", "jsonrpc", "schema.py"), "pi_rpc.modes.jsonrpc.protocol"),
    ],
)
def test_what_the_layers_allow(module: tuple[str, ...], imported: str) -> None:
    assert layering_problems(module, [imported]) == []


def module_name(path: Path) -> str:
    parts = ("pi_rpc", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def internal_imports(path: Path, modules: set[str]) -> set[str]:
    """The pi_rpc modules this one imports: `from pkg import sub` names the submodule `pkg.sub`,
    any other name imported from a package is the package's `__init__`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom) and node.module in modules and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    found.discard(module_name(path))
    return found


def import_cycle(graph: Mapping[str, set[str]]) -> list[str]:
    """One cycle of the import graph (first module repeated at the end), or [] when there is none."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


# The registry imports each API's module by the name its declaration gives (pi_rpc/ai/apis.py).
REGISTRY = "pi_rpc.ai.registry"


def test_no_module_imports_itself_through_others() -> None:
    modules = {module_name(path): path for path in MODULES}
    graph = {name: internal_imports(path, set(modules)) for name, path in modules.items()}
    declared = {declaration.module for declaration in API_DECLARATIONS.values()}
    assert declared <= set(modules)
    graph[REGISTRY] |= declared
    assert import_cycle(graph) == []


def test_a_cycle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    cycle = import_cycle(graph)
    assert set(cycle) == {"a", "b", "c"} and cycle[0] == cycle[-1]

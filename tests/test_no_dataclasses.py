"""pi_rpc's records are msgspec Structs, never dataclasses: start-up cost.

The daemon's start is mostly imports, and a dataclass is built at import by generating and
`exec`-ing its `__init__`, `__repr__` and `__eq__`: about 1 ms for a frozen five-field one on the
development machine, against 0.03 ms for the same `msgspec.Struct` (built in C). `import pi_rpc.cli`
built 92 of them: `dataclasses._process_class` was 149 ms of its 538 ms under cProfile, and making
them Structs took its import from 270-277 ms to 196-200 ms (`-X importtime`, min of 9). A mutable
object with private state that is not a record is a plain class with `__slots__` (`SessionFile`).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pi_rpc"
# The demo's sample user project: the user's code, not ours (ruff skips it too).
NOT_OURS = PACKAGE / "demo" / "workspace"


def dataclass_imports(path: Path) -> list[int]:
    """The lines of the module that import `dataclasses`, function-level imports included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(alias.name == "dataclasses" for alias in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "dataclasses" and node.level == 0:
            lines.append(node.lineno)
    return lines


def test_pi_rpc_defines_no_dataclass() -> None:
    modules = [path for path in PACKAGE.rglob("*.py") if not path.is_relative_to(NOT_OURS)]
    assert PACKAGE / "session" / "session.py" in modules  # the walk still finds the package
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line}" for path in sorted(modules) for line in dataclass_imports(path)
    ]
    assert found == [], (
        "pi_rpc imports dataclasses; use msgspec.Struct (msgspec.field, msgspec.structs.replace): a dataclass "
        "costs the daemon's start about 1 ms each at import, a Struct 0.03 ms (this module's docstring)"
    )

"""The demo's sample project is copied without bytecode: pip compiles every `.py` of an installed
package, the sample's `src/greet.py` too, and the demo (or a transcript) would show that
`__pycache__` in the scratch project's listing."""

from __future__ import annotations

from pathlib import Path

from pi_rpc.demo.sample_project import WORKSPACE, copy_sample_project


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_the_copy_leaves_out_what_an_install_compiled(tmp_path: Path) -> None:
    installed = tmp_path / "installed"
    (installed / "src" / "__pycache__").mkdir(parents=True)
    (installed / "src" / "greet.py").write_text("print('hi')\n")
    (installed / "src" / "__pycache__" / "greet.cpython-311.pyc").write_bytes(b"\x00")
    (installed / "README.md").write_text("# greeter\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()  # the demo copies into the folder mkdtemp made
    copy_sample_project(scratch, source=installed)
    assert _files(scratch) == {"README.md", "src", "src/greet.py"}


def test_the_sample_project_is_copied_whole(tmp_path: Path) -> None:
    copy_sample_project(tmp_path)
    expected = {name for name in _files(WORKSPACE) if "__pycache__" not in name}
    assert _files(tmp_path) == expected and "src/greet.py" in expected

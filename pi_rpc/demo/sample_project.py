"""The sample project the demo and the recorded transcripts work on (pi_rpc/demo/workspace),
copied fresh into a scratch folder for each run."""

from __future__ import annotations

import shutil
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parent / "workspace"


def copy_sample_project(target: Path | str, source: Path = WORKSPACE) -> None:
    """The sample project's files into `target`, without bytecode: pip compiles every `.py` of an
    installed package, the sample's too, and the demo's `ls src` would show that `__pycache__`."""
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))


__all__ = ["WORKSPACE", "copy_sample_project"]

"""An offline wheelhouse for installing the built pi-rpc wheel into a fresh venv.

The test must not reach a package index, and this machine keeps no wheel cache, so the
dependencies come from where they already are: the project venv. Each installed distribution of
pi-rpc's dependency closure is packed back into a wheel from its RECORD (its files, its scripts
under `.data/scripts/` such as ripgrep's `rg`, its own WHEEL tags); pip then installs pi-rpc
from the built wheel with `--no-index --find-links`, resolving its dependencies as it would from
PyPI. Console scripts are left out: pip writes them again from `entry_points.txt`.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

_SKIPPED_METADATA = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def dependency_closure(requirements: list[str]) -> list[metadata.Distribution]:
    """The installed distributions that `requirements` need, transitively (no extras of ours)."""
    found: dict[str, metadata.Distribution] = {}
    pending = [(Requirement(text), "") for text in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        key = canonicalize_name(requirement.name)
        if key in found:
            continue
        dist = metadata.distribution(requirement.name)
        found[key] = dist
        for text in dist.requires or []:
            for wanted in ["", *requirement.extras]:
                pending.append((Requirement(text), wanted))
    return list(found.values())


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _wheel_tag(wheel_metadata: str) -> str:
    tags = [line.split(":", 1)[1].strip() for line in wheel_metadata.splitlines() if line.startswith("Tag:")]
    parts = [sorted({tag.split("-")[i] for tag in tags}) for i in range(3)]
    return "-".join(".".join(part) for part in parts)


def repack(dist: metadata.Distribution, out: Path) -> Path:
    """`dist` as a wheel file in `out`, built from its installed files."""
    files = list(dist.files or [])
    dist_info = next(file.parts[0] for file in files if file.parts[0].endswith(".dist-info"))
    stem = dist_info.removesuffix(".dist-info")
    console = {entry.name for entry in dist.entry_points if entry.group in ("console_scripts", "gui_scripts")}
    tag = _wheel_tag(Path(str(dist.locate_file(f"{dist_info}/WHEEL"))).read_text())
    target = out / f"{stem}-{tag}.whl"
    record: list[str] = []
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as wheel:
        for file in files:
            source = Path(str(file.locate()))
            if "__pycache__" in file.parts or file.suffix == ".pyc" or not source.is_file():
                continue
            if file.parts[0] == dist_info and file.name in _SKIPPED_METADATA:
                continue
            if file.parts[0] == "..":  # a script installed beside the interpreter (bin/)
                if file.name in console:
                    continue
                name = f"{stem}.data/scripts/{file.name}"
            else:
                name = file.as_posix()
            data = source.read_bytes()
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (source.stat().st_mode & 0o777 | 0o100000) << 16
            wheel.writestr(info, data)
            record.append(f"{name},{_record_hash(data)},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        wheel.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    return target


def build_wheelhouse(requirements: list[str], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return [repack(dist, out) for dist in dependency_closure(requirements)]

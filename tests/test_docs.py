"""The docs a clone carries resolve inside the clone.

Relative Markdown links in the repo's docs must name files that exist in the repo, and every
"spec N.M" cited in code and tests must name an item of docs/BEHAVIOUR.md.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
BEHAVIOUR = ROOT / "docs" / "BEHAVIOUR.md"

# [text](target) and [text](target "title"); images too. Reference-style links are not used here.
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# A path written as code that climbs out of its folder (`../x/y.md`) is a reference too.
PATH_MENTION = re.compile(r"`(\.\./[^`\s]+)`")
# "spec 13.5", "spec 1.2a, 3.3-3.6, 17.4", "spec 14.1/14.2", "Spec 9.4", "spec 3.3.2", "spec 15.4c".
REF = r"\d+(?:\.\d+)*[a-z]?"
CITATION = re.compile(rf"\bspec\s+§?\s*({REF}(?:\s*(?:,|/|-|–|and)\s*§?\s*{REF})*)\b", re.IGNORECASE)
# Items are list entries whose first word is the bold number: "- **13.5** ...".
ITEM = re.compile(r"^- \*\*(\d+\.\d+[a-z]?)\*\*", re.MULTILINE)
SECTION = re.compile(r"^## (\d+)\. ", re.MULTILINE)


def doc_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "protocol").glob("*.md"))]
    files += sorted((ROOT / "editor-clients").glob("*/README.md"))
    return files


def relative_links(text: str) -> list[str]:
    links = list(PATH_MENTION.findall(text))
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue  # http:, https:, mailto:, and anchors within the same file
        links.append(target)
    return links


def link_problem(doc: Path, target: str) -> str | None:
    path = unquote(target.split("#", 1)[0])
    resolved = (doc.parent / path).resolve()
    if not resolved.is_relative_to(ROOT):
        return f"{doc.relative_to(ROOT)}: link {target!r} leaves the repository"
    if not resolved.exists():
        return f"{doc.relative_to(ROOT)}: link {target!r} names a missing file"
    return None


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_stay_in_the_repo_and_resolve(doc: Path) -> None:
    problems = [p for t in relative_links(doc.read_text(encoding="utf-8")) if (p := link_problem(doc, t))]
    assert problems == []


def test_link_check_catches_links_out_of_the_repo_and_to_missing_files() -> None:
    readme = ROOT / "README.md"
    text = (
        "[design](../notes/DESIGN.md) [gone](docs/NOPE.md) [ok](docs/BEHAVIOUR.md#3-x) [web](https://x.org)"
        " see `../notes/spec.md`"
    )
    problems = [p for t in relative_links(text) if (p := link_problem(readme, t))]
    assert len(problems) == 3
    assert "leaves the repository" in problems[0] and "leaves the repository" in problems[1]
    assert "missing file" in problems[2]


class Behaviour:
    """The items and sections of docs/BEHAVIOUR.md, and whether a citation names one of them."""

    def __init__(self, text: str) -> None:
        self.sections = set(SECTION.findall(text))
        starts = [(m.group(1), m.start()) for m in ITEM.finditer(text)]
        ends = [start for _, start in starts[1:]] + [len(text)]
        self.items = {ref: text[start:end] for (ref, start), end in zip(starts, ends, strict=True)}

    def has(self, ref: str) -> bool:
        if "." not in ref:
            return ref in self.sections
        if ref in self.items:
            return True
        parts = ref.split(".")
        item, rest = ".".join(parts[:2]), parts[2:]
        if re.fullmatch(r"\d+\.\d+[a-z]", item) and item[:-1] in self.items:  # 15.4c: part (c) of 15.4
            return not rest and f"({item[-1]})" in self.items[item[:-1]]
        if item not in self.items or len(rest) != 1:
            return False
        return re.search(rf"^\s+{rest[0]}\. ", self.items[item], re.MULTILINE) is not None  # 3.3.2: step 2


def citations(text: str) -> list[str]:
    refs = []
    for group in CITATION.findall(text):
        refs += re.findall(REF, group)
    return refs


def cited_refs() -> dict[str, list[str]]:
    """ref -> the files that cite it, over pi_rpc/ and tests/."""
    where: dict[str, list[str]] = {}
    for folder in ("pi_rpc", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for ref in citations(path.read_text(encoding="utf-8")):
                where.setdefault(ref, []).append(str(path.relative_to(ROOT)))
    return where


def test_every_spec_citation_names_an_item_of_behaviour_md() -> None:
    behaviour = Behaviour(BEHAVIOUR.read_text(encoding="utf-8"))
    refs = cited_refs()
    assert len(refs) > 100  # the citation pattern still finds the citations
    missing = {ref: sorted(set(files)) for ref, files in refs.items() if not behaviour.has(ref)}
    assert missing == {}


def test_citation_check_resolves_items_steps_and_parts() -> None:
    behaviour = Behaviour(
        "## 3. Validation\n\n- **3.3** Steps:\n  1. copy\n  2. drop nulls\n- **3.4** More.\n"
        "- **1.2a** Schema.\n- **15.4** A turn: (a) inject; (c) stop.\n"
    )
    found = citations("spec 3.3.2; Spec 1.2a, 3.4-3.3 and 15.4c; spec 3")
    assert found == ["3.3.2", "1.2a", "3.4", "3.3", "15.4c", "3"]
    assert all(behaviour.has(ref) for ref in found)
    assert not any(behaviour.has(ref) for ref in ("3.5", "3.3.3", "15.4b", "4", "2.1a"))

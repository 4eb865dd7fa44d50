"""The docs a clone carries resolve inside the clone, and describe the code as it is.

Relative Markdown links in the repo's docs must name files that exist in the repo, and every
"spec N.M" cited in code and tests must name an item of docs/BEHAVIOUR.md. docs/ARCHITECTURE.md
names every module of the package, and the functions, classes and places it names exist.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
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
# In the docs also "docs/BEHAVIOUR.md 15.11", "BEHAVIOUR.md, items 18.3 to 18.7".
FILE_CITATION = re.compile(rf"\bBEHAVIOUR\.md,?\s+(?:items?\s+)?({REF}(?:\s*(?:,|/|-|–|and|to)\s*{REF})*)\b")
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
    for group in [*CITATION.findall(text), *FILE_CITATION.findall(text)]:
        refs += re.findall(REF, group)
    return refs


def cited_refs() -> dict[str, list[str]]:
    """ref -> the files that cite it, over pi_rpc/, tests/ (but this file, whose examples are no
    citations) and the docs."""
    where: dict[str, list[str]] = {}
    sources = [path for folder in ("pi_rpc", "tests") for path in sorted((ROOT / folder).rglob("*.py"))]
    for path in [*(path for path in sources if path != Path(__file__)), *doc_files()]:
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
    found = citations("spec 3.3.2; Spec 1.2a, 3.4-3.3 and 15.4c; spec 3; docs/BEHAVIOUR.md, items 3.3 to 3.4")
    assert found == ["3.3.2", "1.2a", "3.4", "3.3", "15.4c", "3", "3.3", "3.4"]
    assert all(behaviour.has(ref) for ref in found)
    assert not any(behaviour.has(ref) for ref in ("3.5", "3.3.3", "15.4b", "4", "2.1a"))


# --- docs/ARCHITECTURE.md names the system as built ----------------------------------------------

ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
PACKAGE = ROOT / "pi_rpc"
# ARCHITECTURE.md names a module by its path under pi_rpc/ (`session/storage/store.py`, `cli.py`), with or
# without the `pi_rpc/` in front.
# A backticked call: `finish()`, `serve(front_end)`, `Run.wait()`, `anyio.move_on_after(...)`.
CALL = re.compile(r"`((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\(")
# A backticked name followed by the module it is in: "`run_loop` (`agent/loop.py`)".
NAME_IN_MODULE = re.compile(r"`((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)`\s+\(`([\w/]+\.py)`")
# `models.json` (`ai/config.py`): a file the module reads, not a name in it.
FILE_NAME = re.compile(r"[\w-]+\.(?:json|jsonl|md|toml|py)")


def package_modules() -> list[str]:
    """Every module of the package by its path under pi_rpc/, as ARCHITECTURE.md names them."""
    return sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    )


def names_module(text: str, module: str) -> bool:
    return re.search(rf"(?<![\w./-])(?:pi_rpc/)?{re.escape(module)}(?![\w/])", text) is not None


class Definitions:
    """What a set of modules define: functions and classes by name, and each class's members."""

    def __init__(self, paths: list[Path]) -> None:
        self.callables: set[str] = set()
        self.members: dict[str, set[str]] = {}
        self.module_names: dict[Path, set[str]] = {}
        for path in paths:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            top: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    self.callables.add(node.name)
                if isinstance(node, ast.ClassDef):
                    self.members.setdefault(node.name, set()).update(_member_names(node))
            for node in tree.body:
                top |= _bound_names(node)
            self.module_names[path] = top

    def has_callable(self, dotted: str) -> bool:
        """`name` is a function or class of the package; `Class.member`: a member of that class;
        `module.name` of a library (`os.pipe`): that library has it."""
        *owner, name = dotted.split(".")
        if not owner:
            return name in self.callables
        if owner[-1] in self.members:
            return name in self.members[owner[-1]]
        library = _library(owner[0])
        if library is not None:
            return _has_attributes(library, [*owner[1:], name])
        return name in self.callables  # `control.scope()`: an instance of some class

    def defines(self, path: Path, dotted: str) -> bool:
        """The module at `path` defines `name` (a `Class.member`: that class, and in it the member)."""
        *owner, name = dotted.split(".")
        if not owner:
            return name in self.module_names[path]
        return owner[-1] in self.module_names[path] and name in self.members.get(owner[-1], set())


def _bound_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _member_names(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for node in cls.body:
        names |= _bound_names(node)
    return names


def _library(name: str) -> object | None:
    if name == "pi_rpc" or importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def _has_attributes(value: object, names: list[str]) -> bool:
    for name in names:
        if not hasattr(value, name):
            return False
        value = getattr(value, name)
    return True


def resolve_module(named: str) -> Path | None:
    """A module path as the doc writes it: under pi_rpc/ (`agent/loop.py`), else from the root."""
    for base in (PACKAGE, ROOT):
        if (base / named).is_file():
            return base / named
    return None


def test_every_module_is_named_in_architecture_md() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    modules = package_modules()
    assert "session/storage/store.py" in modules and "cli.py" in modules  # the walk still finds the package
    assert [module for module in modules if not names_module(text, module)] == []


def test_module_names_match_as_whole_paths() -> None:
    text = "`session/storage/store.py`, pi_rpc/cli.py and `ai/providers/faux.py`; see modes/jsonrpc/server.py."
    assert names_module(text, "session/storage/store.py") and names_module(text, "cli.py")
    assert names_module(text, "ai/providers/faux.py") and names_module(text, "modes/jsonrpc/server.py")
    assert not names_module(text, "store.py") and not names_module(text, "providers/faux.py")
    assert not names_module("`session/storage/store.pyi`", "session/storage/store.py")


def test_every_call_in_architecture_md_names_a_function_or_class_of_the_code() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    definitions = Definitions(sorted(PACKAGE.rglob("*.py")))
    calls = sorted(set(CALL.findall(text)))
    assert len(calls) > 10  # the pattern still finds them
    assert [call for call in calls if not definitions.has_callable(call)] == []


def test_every_name_placed_in_a_module_by_architecture_md_is_defined_there() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    paths = sorted(PACKAGE.rglob("*.py"))
    definitions = Definitions(paths)
    placed = [(name, module) for name, module in NAME_IN_MODULE.findall(text) if not FILE_NAME.fullmatch(name)]
    assert len(placed) > 10
    problems = []
    for name, module in placed:
        path = resolve_module(module)
        if path is None or path not in definitions.module_names:
            problems.append(f"`{name}` (`{module}`): no such module in pi_rpc/")
        elif not definitions.defines(path, name):
            problems.append(f"`{name}` (`{module}`): not defined there")
    assert problems == []


def test_definition_checks_tell_stale_names_from_real_ones() -> None:
    definitions = Definitions([PACKAGE / "session" / "runs.py", PACKAGE / "ai" / "validation.py"])
    assert definitions.has_callable("Run.wait") and definitions.has_callable("run_outcome")
    assert definitions.has_callable("os.pipe") and definitions.has_callable("anyio.move_on_after")
    assert not definitions.has_callable("Run.finish") and not definitions.has_callable("validate_tool_args")
    assert not definitions.has_callable("os.no_such_call")
    validation = PACKAGE / "ai" / "validation.py"
    assert definitions.defines(validation, "validate_tool_arguments")
    assert not definitions.defines(validation, "validate_tool_args")
    assert definitions.defines(PACKAGE / "session" / "runs.py", "SessionRuns.abort")
    assert not definitions.defines(PACKAGE / "session" / "runs.py", "SessionRuns.finish")


# --- citations a clone can follow ------------------------------------------------------------------

# The folders whose text is ours: what they cite must be in the repository.
OUR_FOLDERS = ("pi_rpc", "tests", "docs", "protocol", "bench", "editor-clients")
# Installed, generated or vendored: not ours to word.
NOT_OURS = {"node_modules", "__pycache__", ".venv", "out", "dist", ".vscode-test"}
NOT_OUR_FILES = {"package-lock.json"}
# An issue tracker's numbers, and the items of an issue, name nothing a clone has: say what is
# tested, and cite BEHAVIOUR.md or a doc's section. A link to a dependency's issue is fine.
TRACKER_REFERENCE = re.compile(r"\bissues?(?:\s*#?\d+|\s+items?\b)", re.IGNORECASE)
# A section of one of our docs: `protocol/PROTOCOL.md, "Scripted model"`, `PROTOCOL.md ("Errors")`.
SECTION_CITATION = re.compile(r"\b((?:[\w.-]+/)*[A-Z][A-Z_]*\.md),?\s+\(?\"([^\"]+)\"")
DOC_FOLDERS = {"PROTOCOL.md": "protocol", "ARCHITECTURE.md": "docs", "BEHAVIOUR.md": "docs", "CONFIGURATION.md": "docs"}
HEADING = re.compile(r"^#+\s+(.+?)\s*$", re.MULTILINE)


def our_text_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in OUR_FOLDERS:
        for directory, subfolders, names in os.walk(ROOT / folder):
            subfolders[:] = sorted(name for name in subfolders if name not in NOT_OURS)
            files += [Path(directory, name) for name in sorted(names) if name not in NOT_OUR_FILES]
    return [path for path in files if _is_text(path)]


def _is_text(path: Path) -> bool:
    try:
        path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return True


def tracker_references(text: str) -> list[str]:
    return [match.group() for match in TRACKER_REFERENCE.finditer(text)]


def test_no_tracker_issue_numbers_in_the_repository() -> None:
    files = our_text_files()
    assert ROOT / "pi_rpc" / "cli.py" in files and ROOT / "bench" / "README.md" in files
    found = {
        str(path.relative_to(ROOT)): refs for path in files if (refs := tracker_references(path.read_text("utf-8")))
    }
    assert found == {}


def test_tracker_references_are_told_from_words_and_links() -> None:
    issue = "Issue"  # spelled apart, so that this file does not cite what it tests for
    text = f"{issue} 9 item 4; ({issue.lower()} 18); {issue.lower()}s 3/4; {issue} #12; {issue} items 1 and 7"
    assert tracker_references(text) == [
        f"{issue} 9",
        f"{issue.lower()} 18",
        f"{issue.lower()}s 3",
        f"{issue} #12",
        f"{issue} items",
    ]
    fine = "github.com/x/y/issues/123, Re-issue the tool call, an issue number, me@example.org issue#"
    assert tracker_references(fine) == []


def headings(doc: Path) -> set[str]:
    return {heading.replace("`", "") for heading in HEADING.findall(doc.read_text(encoding="utf-8"))}


def section_problem(source: Path, doc_name: str, section: str) -> str | None:
    named = ROOT / doc_name
    if not named.is_file() and doc_name in DOC_FOLDERS:
        named = ROOT / DOC_FOLDERS[doc_name] / doc_name
    if not named.is_file():
        return f"{source.relative_to(ROOT)}: {doc_name} is not a doc of the repository"
    wanted = " ".join(section.replace("`", "").split())
    if any(h == wanted or h.startswith((f"{wanted} (", f"{wanted}:")) for h in headings(named)):
        return None
    return f'{source.relative_to(ROOT)}: {doc_name} has no section "{section}"'


def test_every_cited_doc_section_exists() -> None:
    problems, cited = [], 0
    for path in our_text_files():
        if path.suffix not in (".py", ".md", ".ts", ".lua"):
            continue
        for doc_name, section in SECTION_CITATION.findall(path.read_text(encoding="utf-8")):
            cited += 1
            if (problem := section_problem(path, doc_name, section)) is not None:
                problems.append(problem)
    assert cited > 3  # the pattern still finds the citations
    assert problems == []


def test_section_check_finds_headings_with_or_without_their_tail() -> None:
    here = ROOT / "tests" / "test_docs.py"
    assert section_problem(here, "protocol/PROTOCOL.md", "Scripted model") is None
    assert section_problem(here, "PROTOCOL.md", "Agent Client Protocol") is None  # "… (`--mode acp`)"
    assert section_problem(here, "PROTOCOL.md", "Pi's own RPC mode (--mode pi)") is None
    assert section_problem(here, "docs/ARCHITECTURE.md", "Layers") is None
    assert section_problem(here, "PROTOCOL.md", "Scripted") is not None
    assert section_problem(here, "NOTES.md", "Layers") is not None

"""The semantics are in the repository: every citation of docs/semantics.md names one of its numbered headings.

Code and tests cite ``docs/semantics.md section N`` (or ``semantics section N``, ``sections N and M``, ``N-M``,
``N.K``); a renumbered or missing heading would leave them pointing at nothing.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "semantics.md"
SKIP_DIRS = {".venv", ".git", "node_modules", ".run", "__pycache__"}
#: Every text file kind the repository holds that may cite it (the query grammar, the scripts and unit files too).
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".lark", ".sh", ".toml", ".tmpl", ".service", ".c"}

#: "semantics section 5", "docs/semantics.md sections 3-4", "semantics sections 1, 7", "semantics section 5.3".
CITATION = re.compile(r"semantics(?:\.md)?\)?\s+sections?\s+(\d+(?:\.\d+)?(?:(?:\s*(?:,|-|and)\s*)\d+(?:\.\d+)?)*)")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.?\s", re.MULTILINE)


def repository_files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        built = any(part.endswith(".egg-info") for part in rel.parts)  # a build's copy, not the repository's
        if path.suffix in SUFFIXES and path.is_file() and not SKIP_DIRS.intersection(rel.parts) and not built:
            out.append(path)
    return out


def test_the_semantics_has_sections_1_to_9_in_order() -> None:
    top = [n for n in HEADING.findall(DOC.read_text(encoding="utf-8")) if "." not in n]
    assert top == [str(i) for i in range(1, 10)]


def test_every_citation_names_a_heading() -> None:
    headings = set(HEADING.findall(DOC.read_text(encoding="utf-8")))
    dangling = []
    cited = 0
    for path in repository_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in CITATION.finditer(text):
            for number in NUMBER.findall(m.group(1)):
                cited += 1
                if number not in headings:
                    line = text.count("\n", 0, m.start()) + 1
                    dangling.append(f"{path.relative_to(ROOT)}:{line}: section {number}")
    assert cited > 50  # the code and tests do cite it
    assert not dangling, "citations of docs/semantics.md naming no heading:\n" + "\n".join(dangling)


#: A citation of the shared SPEC by section number (the word, a space, then "section N", "sections N..." or "N"), built
#: so that this file does not match it.
SPEC_CITATION = re.compile(r"\b" + "SPEC" + r" (?:sections? \d|\d)")


def test_nothing_cites_the_shared_spec_by_section() -> None:
    """The shared SPEC is not in the repository: code, tests and documents cite docs/semantics.md instead."""
    found = []
    for path in repository_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in SPEC_CITATION.finditer(text):
            found.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}")
    assert not found, "cite docs/semantics.md section N instead:\n" + "\n".join(found)

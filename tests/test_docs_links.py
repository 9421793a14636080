"""README and docs/ pages: every link resolves (issue 68).

A page's relative links name files that exist, and an anchor names a
heading of its page, as GitHub makes one (lower case, punctuation gone,
spaces as hyphens). Every page of docs/ is linked from README.md.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "README.ja.md",
                *ROOT.glob("docs/**/*.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page):
    """The anchors GitHub gives the headings of `page` (code fences
    skipped)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            text = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return found


def links(page):
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code, not links
    return [target for target in LINK.findall(text)
            if not target.startswith(("http://", "https://", "mailto:"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(
    ROOT)))
def test_every_link_of_a_page_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    assert broken == []


def test_readme_links_every_docs_page():
    linked = {(ROOT / target.partition("#")[0]).resolve()
              for target in links(ROOT / "README.md")}
    pages = {page.resolve() for page in ROOT.glob("docs/*.md")}
    assert pages - linked == set()


def test_the_anchor_rule_is_githubs():
    page = ROOT / "docs" / "kit.md"
    assert "what-a-resume-may-change" in anchors(page)


def test_every_row_readme_held_is_in_docs():
    """Each "What happens when…" row of the README before the split, and
    both its tables (the kit against TRL, what a resume keeps), are in
    docs/ (tests/data/errors_rows_2026-12-08.txt: the rows' first cells)."""
    errors = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    rows = [line for line in (ROOT / "tests" / "data" /
                              "errors_rows_2026-12-08.txt").read_text(
        encoding="utf-8").splitlines() if not line.startswith("#")]
    assert len(rows) == 144
    assert [row for row in rows if f"| {row} |" not in errors] == []
    assert "| name | what it computes | equal to TRL in | where the kit " \
           "differs |" in (ROOT / "docs" / "loss-types.md").read_text(
               encoding="utf-8")
    assert "| trainer | kept as saved |" in (
        ROOT / "docs" / "kit.md").read_text(encoding="utf-8")

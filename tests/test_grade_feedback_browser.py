"""A student's feedback page in a real browser (issue 65): it fits a
phone (360 px) and a laptop (1280 px), in English and Japanese, and the
gradebook as a spreadsheet shows it.

tools/class_report.py's made-up class, written by kit.grading.feedback
with the course's own notebooks standing in for the students' files (for
the cells to look at again). Screenshots go to a temporary folder, and to
docs/screenshots/ with KIT_UPDATE_DOCS=1 (README, "kit grade"). Chromium
and Playwright as tests/test_browser.py finds them; it skips without.
"""

import csv
import os
import shutil
from html import escape
from pathlib import Path

import pytest

from kit import i18n
from kit.grading import feedback
from test_browser import chromium_found

ROOT = Path(__file__).resolve().parents[1]
STUDENT = "mio"  # a named mistake, a stub and a passed exercise


@pytest.fixture(scope="module")
def browser():
    chromium = chromium_found()
    if not chromium:
        pytest.skip("no Chromium on PATH (tests/test_browser.py says how)")
    sync_playwright = pytest.importorskip(
        "playwright.sync_api").sync_playwright
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium)
        yield launched
        launched.close()


def _written(lang, folder):
    from tools import class_report
    cards = class_report.made_up_class(lang)
    course = ROOT / "notebooks" / ("ja" if lang == "ja" else "")
    sources = {card["submission"]: course / f"{card['notebook']}.ipynb"
               for card in cards}
    previous = i18n.language()
    i18n.set_language(lang)
    try:
        feedback.write_feedback(cards, folder, sources, chosen=lang)
        feedback.write_gradebook(cards, folder / "gradebook.csv")
    finally:
        i18n.set_language(previous)
    return folder


def _shot(page, name, tmp_path):
    page.screenshot(path=tmp_path / name, full_page=True)
    if os.environ.get("KIT_UPDATE_DOCS") == "1":
        shutil.copy(tmp_path / name, ROOT / "docs" / "screenshots" / name)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_feedback_page_fits_a_phone_and_a_laptop(browser, lang, tmp_path):
    folder = _written(lang, tmp_path)
    html = (folder / f"{STUDENT}.html").read_text(encoding="utf-8")
    for width in (360, 1280):
        page = browser.new_page(viewport={"width": width, "height": 800})
        page.set_content(html)
        assert page.evaluate(
            "document.documentElement.scrollWidth") <= width
        widest = page.evaluate("Math.max(...[...document.querySelectorAll("
                               "'body *')].map(e => e.getBoundingClientRect()"
                               ".right))")
        assert widest <= width
        if width == 360:
            _shot(page, f"{'ja_' if lang == 'ja' else ''}feedback.png",
                  tmp_path)
        page.close()


def test_the_gradebook_as_a_spreadsheet_shows_it(browser, tmp_path):
    folder = _written("en", tmp_path)
    with open(folder / "gradebook.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    cells = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row)
                    + "</tr>" for row in rows)
    page = browser.new_page(viewport={"width": 900, "height": 300})
    page.set_content(
        "<style>body{font-family:system-ui,sans-serif}table{border-collapse:"
        "collapse}td{border:1px solid #bbb;padding:.2em .5em}tr:first-child"
        "{background:#eee;font-weight:600}</style>"
        f"<table>{cells}</table>")
    assert page.locator("tr").count() == 9  # a header, eight students
    _shot(page, "gradebook.png", tmp_path)
    page.close()

"""`kit grade --feedback DIR --gradebook FILE` (issue 65): a page each
student can be handed, and a gradebook an LMS imports.

One run grades a class of five tiny notebooks (tests/test_grade.py's
stand-in check: no torch in the kernels): one passes and fails, one left
the stubs, one Japanese copy, one whose cell crashed, and one the run was
interrupted in. Every assertion reads that run's files; the hostile
names and messages are tried on cards alone, with no kernel.
"""

import csv
import os
import re
import signal
import tempfile
import threading
import time

import pytest

from kit.grading import feedback
from test_grade import (NB, fake, kit_grade, one_zygote,  # noqa: F401
                        share, write_notebook)

JAPANESE = '# setup_notebook(lang="ja")  # what a Japanese copy calls'
SLEEP = "open('running', 'w').close(); import time; time.sleep(60)"
CLASS = {
    "ann": fake(("sequence_logps", None, "passed"),
                ("dpo_loss", None, "failed", "published_snippet")),
    "ben": fake(("sequence_logps", None, "not attempted"),
                ("dpo_loss", None, "not attempted")),
    "chie": [JAPANESE] + fake(("sequence_logps", None, "failed",
                               "mean_not_sum"),
                              ("dpo_loss", None, "passed")),
    "dan": fake(("sequence_logps", None, "passed")) + [
        "1/0", "check('dpo_loss', None, 'not attempted')"],
    # last in the class's order: the run is stopped while it runs
    "zed": fake(("sequence_logps", None, "passed")) + [
        SLEEP, "check('dpo_loss', None, 'passed')"],
}


def _interrupt_when_zed_runs(work, book, done):
    """Ctrl-C once zed's kernel runs and the four others are in the
    gradebook (rewritten after each submission); never once the run is
    `done` (it failed before: no signal for a later test)."""
    def wait_then_signal():
        for _ in range(1200):
            if done.is_set():
                return
            rows = (book.read_text().count("\n") if book.exists() else 0)
            if list(work.glob("kit-grade-*/cwd/running")) and rows >= 5:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.1)
    threading.Thread(target=wait_then_signal, daemon=True).start()


@pytest.fixture(scope="module")
def graded(tmp_path_factory, one_zygote):
    root = tmp_path_factory.mktemp("class")
    out = tmp_path_factory.mktemp("reports")
    work = tmp_path_factory.mktemp("work")
    for student, cells in CLASS.items():
        write_notebook(root / student / NB, *cells)
    with pytest.MonkeyPatch.context() as patch:
        share(one_zygote, patch)
        patch.setattr(tempfile, "tempdir", str(work))
        patch.delenv("KIT_LANG", raising=False)
        done = threading.Event()
        _interrupt_when_zed_runs(work, out / "book.csv", done)
        try:
            # --timeout: were the interrupt missed, zed's sleep would
            # cost 30 s, not 60, and the run exit 1, not 130
            result = kit_grade(root, "--jobs", "2", "--timeout", "30",
                               "--csv",
                               out / "class.csv", "--html",
                               out / "class.html", "--feedback",
                               out / "feedback", "--gradebook",
                               out / "book.csv")
        finally:
            done.set()
    return {"result": result, "root": root, "out": out}


def _pages(graded):
    folder = graded["out"] / "feedback"
    return {path.name: path.read_text(encoding="utf-8")
            for path in sorted(folder.iterdir())}


def test_one_page_per_student_and_nothing_else(graded):
    assert graded["result"].returncode == 130, graded["result"].stdout
    pages = _pages(graded)
    assert sorted(pages) == sorted(f"{name}{suffix}" for name in CLASS
                                   for suffix in (".html", ".md"))
    for name, text in pages.items():
        own = name.split(".")[0]
        for other in CLASS:
            if other != own:  # no other student's name, anywhere
                assert not re.search(rf"\b{other}\b", text), (name, other)
        assert own in text
        # nothing of the instructor's machine
        assert str(graded["root"]) not in text and "/tmp" not in text
        assert "kit-grade-" not in text and "Traceback" not in text


def test_each_page_holds_the_students_own_verdicts(graded):
    pages = _pages(graded)
    ann = pages["ann.html"]
    assert "✓ sequence_logps ★: passed" in ann
    assert "✗ dpo_loss ★★: failed" in ann
    assert "published_snippet" in ann and "Hint 1" in ann
    assert "Look again at" in ann and "code cell 3" in ann
    assert "Score: 1 of 4 exercises passed, 1 of 8 ★." in ann
    assert "made published_snippet" in ann  # the checker's own words
    assert "not attempted" in pages["ben.md"]
    dan = pages["dan.html"]
    assert "! dpo_loss ★★: crashed" in dan and "ZeroDivisionError" in dan
    zed = pages["zed.html"]
    assert "What could not be graded" in zed
    assert "was stopped before this notebook was finished" in zed


def test_the_japanese_students_page_is_in_japanese(graded):
    chie = _pages(graded)["chie.html"]
    assert '<html lang="ja">' in chie
    assert "chie さんへのフィードバック" in chie
    assert "不合格" in chie and "名前の付いた間違い" in chie
    # the run spoke English (a mixed class): its checker's words stay out
    assert "made mean_not_sum" not in chie and "Hint 1" not in chie
    assert "<html lang=\"en\">" in _pages(graded)["ann.html"]


def test_the_gradebook_sums_the_stars_the_class_page_shows(graded):
    out = graded["out"]
    with open(out / "book.csv", newline="", encoding="utf-8") as f:
        book = list(csv.reader(f))
    assert book[0] == ["student", "03_dpo_compute_loss (max 8)",
                       "total (max 8)", "not graded"]
    rows = {row[0]: row for row in book[1:]}
    assert sorted(rows) == sorted(CLASS)
    with open(out / "class.csv", newline="", encoding="utf-8") as f:
        stars = {}
        for row in csv.DictReader(f):
            stars.setdefault(row["student"], 0)
            if row["status"] == "passed":
                stars[row["student"]] += int(row["stars"])
    assert {name: int(row[2]) for name, row in rows.items()} == stars
    assert stars == {"ann": 1, "ben": 0, "chie": 2, "dan": 1, "zed": 1}
    assert rows["zed"][3] == "03_dpo_compute_loss" and rows["ann"][3] == ""
    # the class page shows each of them
    page = (out / "class.html").read_text(encoding="utf-8")
    assert all(f">{name}</td>" in page for name in CLASS)


# ------------------------------------------- hostile names, no kernel

def _card(submission, message, mistake=None, error=None):
    return {"submission": submission, "notebook": "03_dpo_compute_loss",
            "error": error, "passed": 0, "total": 1, "exercises": [{
                "id": "dpo_loss", "stars": 2, "status": "failed",
                "mistake": mistake, "message": message, "attempts": 1,
                "mistakes": [mistake] if mistake else []}]}


def test_a_hostile_name_and_message_stay_inert(tmp_path):
    cards = [_card("<script>x</script>/03_dpo_compute_loss.ipynb",
                   "<img src=x onerror=alert(1)> in /home/teacher/x/y.py"),
             _card("=cmd|' /C calc'!A0/03_dpo_compute_loss.ipynb", "fine",
                   error="could not grade it: OSError: /srv/grader/k.py")]
    written = feedback.write_feedback(cards, tmp_path, {})
    names = sorted(path.name for path in written)
    assert all(not name.startswith(".") and "/" not in name
               for name in names)
    assert len(set(names)) == 4
    texts = [path.read_text(encoding="utf-8") for path in written]
    pages = [text for path, text in zip(written, texts)
             if path.suffix == ".html"]
    assert not any("<script>" in text or "<img" in text for text in pages)
    # in Markdown, every < is a backslash's: no tag, no link
    assert not any(re.search(r"(?<!\\)[<\[]", text) for path, text in
                   zip(written, texts) if path.suffix == ".md")
    assert not any("/home/teacher" in text or "/srv/grader" in text
                   for text in texts)
    assert any("&lt;script&gt;" in text for text in texts)
    # the grader's own failure is not the student's to read
    assert not any("OSError" in text for text in texts)
    feedback.write_gradebook(cards, tmp_path / "book.csv")
    first = [line.split(",")[0] for line in
             (tmp_path / "book.csv").read_text().splitlines()[1:]]
    assert all(not cell.lstrip('"').startswith("=") for cell in first)


def test_file_names_are_safe_and_unique():
    stems = feedback.safe_names(["a/b", "a_b", "..hidden", "", "アン"])
    assert stems == {"a/b": "a_b", "a_b": "a_b-2", "..hidden": "hidden",
                     "": "student", "アン": "アン"}


def test_japanese_words_keep_the_glossary():
    from test_japanese import breaches
    found = {key: breaches(text) for key, text in
             feedback.WORDS["ja"].items() if breaches(text)}
    assert not found, found
    assert set(feedback.WORDS["ja"]) <= set(feedback.WORDS["en"])


def test_a_second_run_may_rewrite_its_gradebook(tmp_path):
    from kit import cli
    book = tmp_path / "book.csv"
    feedback.write_gradebook([_card("a/03.ipynb", "x")], book)
    args = cli.parser().parse_args(["grade", str(tmp_path / "nb.ipynb"),
                                    "--gradebook", str(book)])
    assert cli._student_paths(args, ())[0] == book
    other = tmp_path / "notes.csv"
    other.write_text("my own notes\n")
    args.gradebook = str(other)
    with pytest.raises(Exception, match="the kit did not write"):
        cli._student_paths(args, ())

"""kit.grading.students: which submissions are one student's, so the class
report has one row per student (README, "kit grade").

A class folder comes in many layouts; the rule that holds is the one that
never puts two copies of one notebook in a student's row.
"""

import re

import pytest

from kit.grading import gradebook, students
from kit.grading.submissions import COURSE

NB01, NB03 = "01_stock_compute_loss", "03_dpo_compute_loss"


def card(submission, notebook, statuses=None, error=None):
    ids = COURSE[notebook]
    statuses = statuses or ["passed"] * len(ids)
    rows = [{"id": i, "stars": 1, "status": word, "mistake": None,
             "message": f"said of {i}", "attempts": 1, "mistakes": []}
            for i, word in zip(ids, statuses)]
    return {"submission": submission, "notebook": notebook, "error": error,
            "exercises": rows, "total": len(rows),
            "passed": statuses.count("passed")}


@pytest.mark.parametrize("files, expected", [
    # a folder per student, whatever the files are called
    ({"alice/01.ipynb": NB01, f"alice/{NB03}.ipynb": NB03,
      f"bob/{NB03}.ipynb": NB03}, ["alice", "alice", "bob"]),
    # one folder for the class: the name beside the notebook's name or number
    ({f"alice_{NB01}.ipynb": NB01, "alice-03.ipynb": NB03,
      f"bob {NB03}.ipynb": NB03}, ["alice", "alice", "bob"]),
    # a folder per notebook: the folders are not students
    ({"01/alice.ipynb": NB01, "03/alice.ipynb": NB03, "03/bob.ipynb": NB03},
     ["alice", "alice", "bob"]),
    # folders, and one student's files in the class folder itself
    ({f"amy/{NB01}.ipynb": NB01, f"amy/{NB03}.ipynb": NB03,
      "ken_01.ipynb": NB01, "ken_03.ipynb": NB03},
     ["amy", "amy", "ken", "ken"]),
    # a number inside a name is not the notebook's
    ({"bob2003_03.ipynb": NB03, "bob2003_01.ipynb": NB01},
     ["bob2003", "bob2003"]),
])
def test_one_students_files_share_a_row(files, expected):
    cards = [card(label, notebook) for label, notebook in files.items()]
    named = students.students(cards)
    assert [named[label] for label in files] == expected


def test_two_copies_of_one_notebook_are_never_one_row():
    """Two copies of 03 in alice's folder: each a row of its own, named by
    its path; the rest of the class still one row a student."""
    cards = [card(f"alice/{NB03}.ipynb", NB03),
             card(f"alice/{NB03} (1).ipynb", NB03),
             card("alice/01.ipynb", NB01),
             card(f"bob/{NB03}.ipynb", NB03), card("bob/01.ipynb", NB01)]
    named = students.students(cards)
    assert named == {
        f"alice/{NB03}.ipynb": f"alice/{NB03}.ipynb",
        f"alice/{NB03} (1).ipynb": f"alice/{NB03} (1).ipynb",
        "alice/01.ipynb": "alice/01.ipynb",
        f"bob/{NB03}.ipynb": "bob", "bob/01.ipynb": "bob"}
    # files that name only the notebook, in one folder: a row each
    cards = [card(f"{NB01}.ipynb", NB01), card(f"{NB03}.ipynb", NB03)]
    assert set(students.students(cards).values()) == {
        f"{NB01}.ipynb", f"{NB03}.ipynb"}


def students_table(cards):
    html = gradebook.html_page(cards, gradebook.summarise(cards))
    return html[html.index('<table class="students">'):]


def test_a_student_row_scores_all_their_files_sorted_by_share():
    cards = [card("amy/01.ipynb", NB01, ["failed", "passed"]),
             card("amy/03.ipynb", NB03),  # 5/6
             card("bo/03.ipynb", NB03, ["passed"] * 3 + ["failed"])]  # 3/4
    table = students_table(cards)
    assert re.findall(r"<tr><td[^>]*>(\w+)</td><td>([^<]*)</td>", table) == [
        ("bo", "3/4"), ("amy", "5/6")]
    # a column per exercise, under its notebook, in the course's order
    assert re.findall(r'<th class="id" colspan="(\d)">([^<]*)<', table) == [
        ("2", "01_"), ("4", "03_")]
    assert [h.replace("<wbr>", "") for h in re.findall(
        r'<th class="id">(.*?)</th>', table)] == COURSE[NB01] + COURSE[NB03]
    # bo has no 01: two empty cells, not a shifted row
    bo = re.search(r">bo</td>(.*?)</tr>", table).group(1)
    assert bo.count("<td></td>") == 2


def visible(html):
    """The page's text as shown: no tag, no attribute (so no tooltip)."""
    return re.sub(r"<[^>]*>", "", html)


def test_what_the_checkers_said_is_on_the_page_not_only_in_tooltips():
    cards = [card("amy/01.ipynb", NB01, ["failed", "crashed"]),
             card("amy/03.ipynb", NB03, ["passed", "not attempted",
                                          "passed", "passed"]),
             card("bo/03.ipynb", NB03, ["passed"] * 4,
                  error="the kernel died in cell 9")]
    text = visible(students_table(cards))
    assert "causal_lm_loss: said of causal_lm_loss" in text
    assert "compute_loss: said of compute_loss" in text
    assert "03.ipynb: the kernel died in cell 9" in text
    # passed and untouched exercises say nothing there
    assert "said of sequence_logps" not in text
    assert "said of dpo_loss" not in text

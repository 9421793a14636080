"""`python -m kit grade`: one notebook, a whole class, and what goes wrong.

The class is built here from tiny notebooks whose cells are fast: a
stand-in `check` writes to $KIT_GRADE_FILE the records the real one writes,
with made-up mistake ids, so these tests do not depend on which mistakes
the checkers know, and no kernel spends seconds importing torch. The real
`check` is graded in the one-notebook tests below.
"""

import csv
import io
import json
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from html.parser import HTMLParser

import nbformat
import pytest

from kit import cli, course, grade

HEADER = ["submission", "notebook", "exercise", "stars", "status",
          "mistake", "attempts", "message"]

# a stand-in for kit.checks.check: the same record, any mistake id we like
FAKE_CHECK = """import json, os
def check(exercise_id, candidate, status="failed", mistake=None):
    record = {"id": exercise_id, "status": status, "mistake": mistake,
              "message": f"made {mistake}" if mistake else "fine"}
    with open(os.environ["KIT_GRADE_FILE"], "a") as f:
        f.write(json.dumps(record) + "\\n")"""


def write_notebook(path, *cells):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    notebook.metadata["kernelspec"] = {"name": "python3",
                                       "display_name": "Python 3",
                                       "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


def fake(*checks):
    """A submission whose check calls record the given verdicts."""
    return [FAKE_CHECK] + [f"check({', '.join(map(repr, c))})"
                           for c in checks]


def kit_grade(*args):
    """`python -m kit grade ARGS` in this process (no second torch import)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["grade", *map(str, args)])
    return subprocess.CompletedProcess(args, code, out.getvalue(),
                                       err.getvalue())


NB = "03_dpo_compute_loss.ipynb"  # every student's file has the same name
CLASS = {
    "ann": fake(("sequence_logps", None, "not attempted"),  # stubs left
                ("dpo_loss", None, "not attempted")),
    "ben": fake(("sequence_logps", None, "passed"),  # solved
                ("dpo_loss", None, "passed")),
    "cat": fake(("sequence_logps", None, "passed"),
                ("dpo_loss", None, "failed", "beta_outside")),
    "dan": fake(("sequence_logps", None, "failed", "sum_not_mean"),
                ("dpo_loss", None, "failed", "beta_outside"),
                ("dpo_loss", None, "failed", "sign_flipped")),
    "eve": fake(("sequence_logps", None, "failed", "sum_not_mean"),
                ("sequence_logps", None, "passed"),
                ("dpo_loss", None, "failed", "beta_outside"),
                ("dpo_loss", None, "passed")),
    "fay": fake(("sequence_logps", None, "passed")) + [
        "while True: pass", "check('dpo_loss', None, 'passed')"],
}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """Grade the class once, --jobs 2; every class test reads the result."""
    root = tmp_path_factory.mktemp("class")
    for student, cells in CLASS.items():
        write_notebook(root / student / NB, *cells)
    (root / "gus").mkdir()
    (root / "gus" / NB).write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff corrupt")
    # graded only if the skip rules are broken: both would crash
    write_notebook(root / "solutions" / NB, "import os; os._exit(1)")
    write_notebook(root / "ann" / ".ipynb_checkpoints" / NB, "1/0")
    out = tmp_path_factory.mktemp("reports")
    result = kit_grade(str(root), "--jobs", "2", "--timeout", "5",
                       "--csv", str(out / "class.csv"),
                       "--html", str(out / "class.html"))
    as_json = kit_grade(str(root / "cat"), str(root / "gus"), "--json",
                        "--jobs", "2")
    return result, out, as_json


def test_class_csv_has_a_row_per_submission_and_exercise(graded_class):
    result, out, _ = graded_class
    with open(out / "class.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == HEADER
    table = {(r[0], r[2]): dict(zip(HEADER, r)) for r in rows[1:]}
    assert [r[0] for r in rows[1:]] == sorted(r[0] for r in rows[1:])
    assert len(rows) == 1 + 6 * 2 + 1  # six notebooks graded, one corrupt
    assert {r[1] for r in rows[1:]} == {"03_dpo_compute_loss"}
    sub = f"/{NB}"
    assert table["ann" + sub, "dpo_loss"]["status"] == "not attempted"
    assert table["ben" + sub, "dpo_loss"]["status"] == "passed"
    assert table["ben" + sub, "dpo_loss"]["stars"] == "2"
    assert table["ben" + sub, "sequence_logps"]["stars"] == "1"
    assert table["cat" + sub, "dpo_loss"]["mistake"] == "beta_outside"
    assert table["cat" + sub, "dpo_loss"]["message"] == "made beta_outside"
    dan = table["dan" + sub, "dpo_loss"]
    assert (dan["status"], dan["mistake"], dan["attempts"]) == (
        "failed", "sign_flipped", "2")
    eve = table["eve" + sub, "dpo_loss"]  # passed at the second attempt
    assert (eve["status"], eve["mistake"], eve["attempts"]) == (
        "passed", "", "2")
    fay = table["fay" + sub, "dpo_loss"]  # after the endless cell
    assert fay["status"] == "not graded"
    assert "cell 3 ran past the time limit (5 s" in fay["message"]
    assert table["fay" + sub, "sequence_logps"]["status"] == "passed"
    gus = table["gus" + sub, ""]
    assert gus["status"] == "not graded" and "not a notebook" in (
        gus["message"])


def test_class_summary_counts_and_exit_code(graded_class):
    result, _, _ = graded_class
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Graded 5 of 7 submissions."
    # worst first: dpo_loss passed once in six, sequence_logps four times
    assert lines[1] == ("  dpo_loss ★★: 2/6 passed, 2 failed, "
                        "1 not attempted, 1 not graded; beta_outside ×3, "
                        "sign_flipped ×1")
    assert lines[2] == ("  sequence_logps ★: 4/6 passed, 1 failed, "
                        "1 not attempted; sum_not_mean ×2")
    assert "fay/03_dpo_compute_loss.ipynb: cell 3 ran past" in (
        result.stdout)
    assert "gus/03_dpo_compute_loss.ipynb: not a notebook" in result.stdout
    assert "grading" in result.stderr  # the progress bar
    assert "Traceback" not in result.stdout + result.stderr


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.links, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        for key in ("href", "src"):
            if key in attrs and not attrs[key].startswith("data:"):
                self.links.append(attrs[key])

    def handle_data(self, data):
        self.text.append(data)


def test_class_html_is_one_page_with_the_chart_worst_first(graded_class):
    _, out, _ = graded_class
    html = (out / "class.html").read_text(encoding="utf-8")
    page = _Page()
    page.feed(html)
    assert len(page.images) == 1 and page.links == []  # self-contained
    assert page.images[0].startswith("data:image/png;base64,iVBOR")
    text = " ".join(page.text)
    assert text.index("dpo_loss") < text.index("sequence_logps")
    assert "beta_outside" in text and "sum_not_mean" in text
    # students, by folder: who could not be graded first, lowest scores next
    students = [name for name in re.findall(r"<tr><td>([^<]*)</td>", html)
                if name in CLASS or name == "gus"]
    assert students == ["gus", "fay", "ann", "dan", "cat", "ben", "eve"]


def test_class_json_carries_mistake_message_and_error(graded_class):
    _, _, result = graded_class
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["error"] is None
    cat, gus = report["submissions"]
    assert cat["submission"] == f"cat/{NB}" and cat["error"] is None
    assert cat["exercises"][1] == {
        "id": "dpo_loss", "stars": 2, "status": "failed",
        "mistake": "beta_outside", "message": "made beta_outside",
        "attempts": 1, "mistakes": ["beta_outside"]}
    assert gus["error"].startswith("not a notebook")
    assert [line["id"] for line in report["summary"]] == [
        "dpo_loss", "sequence_logps"]


# ------------------------------------------------------------ one notebook

def test_one_notebook_scores_passed_failed_and_not_attempted(tmp_path):
    path = write_notebook(
        tmp_path / "demo.ipynb",
        "from kit.checks import check\nfrom kit import losses",
        "check('causal_lm_loss', losses.causal_lm_loss)",
        "check('callback_or_subclass', {})",  # untouched
        "raise RuntimeError('a broken cell does not stop grading')",
        "check('compute_loss', object)")  # wrong
    # the real command, once, in a process of its own
    result = subprocess.run(
        [sys.executable, "-m", "kit", "grade", str(path), "--json"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    card = json.loads(result.stdout)
    assert (card["submission"], card["error"]) == (str(path), None)
    assert (card["passed"], card["total"]) == (1, 3)
    assert [(e["id"], e["stars"], e["status"], e["attempts"])
            for e in card["exercises"]] == [
        ("causal_lm_loss", 1, "passed", 1),
        ("callback_or_subclass", 2, "not attempted", 1),
        ("compute_loss", 2, "failed", 1)]
    # filled in by check() once it records them (read with .get until then)
    assert all({"mistake", "message"} <= set(e) for e in card["exercises"])


def test_one_notebook_all_passed_is_exit_0(tmp_path):
    path = write_notebook(tmp_path / "a.ipynb",
                          *fake(("dpo_loss", None, "passed")))
    result = kit_grade(str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1/1 passed" in result.stdout


def test_a_scorecard_names_the_mistake_and_says_what_differs(tmp_path):
    path = write_notebook(tmp_path / "b.ipynb", *fake(
        ("dpo_loss", None, "failed", "beta_outside")))
    result = kit_grade(str(path))
    assert result.returncode == 1
    assert result.stdout.splitlines()[1:] == [
        "  ❌ dpo_loss                 ★★   failed (beta_outside)",
        "       made beta_outside", "  0/1 passed"]


def test_an_untouched_course_notebook_is_all_not_attempted():
    result = kit_grade(str(course.NOTEBOOKS / "02_callbacks_vs_subclassing"
                           ".ipynb"), "--json")
    assert result.returncode == 1
    card = json.loads(result.stdout)
    assert card["total"] == 2 and card["passed"] == 0
    assert {e["status"] for e in card["exercises"]} == {"not attempted"}


# ------------------------------------- what cannot be graded (issue 10.15)

def test_a_missing_notebook_is_exit_2_and_json_says_why(tmp_path, capsys):
    missing = str(tmp_path / "missing.ipynb")
    assert cli.main(["grade", missing]) == 2
    assert capsys.readouterr().out == (
        f"no such notebook or folder: {missing}\n")
    assert cli.main(["grade", missing, "--json"]) == 2
    assert json.loads(capsys.readouterr().out) == {
        "error": f"no such notebook or folder: {missing}"}


def test_a_folder_without_notebooks_is_exit_2_in_one_line(tmp_path, capsys):
    write_notebook(tmp_path / "solutions" / "x.ipynb", "1")  # skipped
    assert cli.main(["grade", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"no notebooks in {tmp_path}")
    assert out.count("\n") == 1
    assert cli.main(["grade", str(tmp_path), "--json"]) == 2
    assert "no notebooks in" in json.loads(capsys.readouterr().out)["error"]


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\xff",
                                     b"not json", b'{"cells": 3}'])
def test_a_file_that_is_not_a_notebook_is_exit_2_in_one_line(
        tmp_path, capsys, content):
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    assert cli.main(["grade", str(path)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(f"could not grade {path}: not a notebook")
    assert out.count("\n") == 1
    assert cli.main(["grade", str(path), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"].startswith(
        "not a notebook")


@pytest.mark.parametrize("value", ["0", "-3", "soon"])
def test_timeout_and_jobs_below_one_are_refused(capsys, value):
    for option in ("--timeout", "--jobs"):
        with pytest.raises(SystemExit) as exit:
            cli.main(["grade", "x.ipynb", option, value])
        assert exit.value.code == 2
        assert f"argument {option}: must be" in capsys.readouterr().err


def test_a_notebook_without_checks_has_no_exercises(tmp_path, capsys):
    path = write_notebook(tmp_path / "plain.ipynb", "x = 1")
    assert cli.main(["grade", str(path)]) == 2  # decided without a kernel
    assert capsys.readouterr().out == (
        f"could not grade {path}: no exercises found: no check(...) "
        "calls\n")


def test_a_dead_kernel_is_not_called_a_time_limit(tmp_path):
    path = write_notebook(tmp_path / "dies.ipynb",
                          *fake(("dpo_loss", None, "passed")),
                          "import os; os._exit(1)")
    result = kit_grade(str(path), "--json")
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert error.startswith("the kernel died in cell 3")
    assert "time limit" not in error.replace("no time limit", "")


def test_an_endless_cell_stops_at_the_time_limit(tmp_path):
    path = write_notebook(tmp_path / "slow.ipynb",
                          "check = print  # no exercises run", "check('x')",
                          "import time; time.sleep(60)")
    result = kit_grade(str(path), "--timeout", "1")
    assert result.returncode == 2
    assert "cell 3 ran past the time limit (1 s per cell)" in result.stdout


def test_kernels_run_in_a_fresh_folder_with_the_graders_kit(
        tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "relative/means/nothing/elsewhere")
    monkeypatch.chdir(tmp_path)
    path = write_notebook(
        tmp_path / "where.ipynb", FAKE_CHECK.replace(
            '"fine"', "os.getcwd() + ' ' + kit.__file__").replace(
            "import json, os", "import json, os, kit"),
        "open('litter.txt', 'w').write('x')",
        "check('dpo_loss', None, 'passed')")
    result = kit_grade(path, "--json")
    cwd, kit_file = json.loads(result.stdout)["exercises"][0][
        "message"].split()
    assert kit_file == str(Path(grade.KIT_ROOT) / "kit" / "__init__.py")
    assert Path(cwd) != tmp_path and not Path(cwd).exists()  # cleaned up
    assert not (tmp_path / "litter.txt").exists()


def test_a_report_that_cannot_be_written_is_one_line(tmp_path, capsys):
    path = write_notebook(tmp_path / "plain.ipynb", "x = 1")
    csv_path = tmp_path / "no" / "such" / "folder.csv"
    # grade.main itself: the command line creates a missing folder first
    assert grade.main([str(path)], csv_path=csv_path) == 2
    captured = capsys.readouterr()
    assert captured.out.startswith("could not grade")  # shown first
    assert captured.err == (f"could not write {csv_path}: "
                            "No such file or directory\n")

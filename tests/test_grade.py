"""`python -m kit grade`: one notebook, a whole class, and what goes wrong.

The class is built here from tiny notebooks whose cells are fast: a
stand-in `check` writes to $KIT_GRADE_FILE the records the real one writes,
so no kernel spends seconds importing torch. The real `check` is graded in
the one-notebook tests below. Hostile and broken submissions sit in the
same class, so one run of kernels covers them all.
"""

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from html.parser import HTMLParser

import nbformat
import pytest

from kit import cli
from kit.builder import paths
from kit.grading import grade, sandbox, submissions, verdicts

HEADER = ["student", "submission", "notebook", "exercise", "stars", "status",
          "mistake", "attempts", "message", "error"]
NB03 = ["sequence_logps", "dpo_loss", "dpo_snippet", "dpo_compute_loss"]

# a stand-in for kit.checks.check: the same record, any mistake id we like
FAKE_CHECK = """import json, os
def check(exercise_id, candidate, status="failed", mistake=None):
    record = {"id": exercise_id, "status": status, "mistake": mistake,
              "message": f"made {mistake}" if mistake else "fine"}
    with open(os.environ["KIT_GRADE_FILE"], "a") as f:
        f.write(json.dumps(record) + "\\n")"""


def write_notebook(path, *cells):
    """Code cells; a (source, tag) pair is a tagged cell."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(c) if isinstance(c, str) else
        nbformat.v4.new_code_cell(c[0], metadata={"tags": [c[1]]})
        for c in cells]
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
                ("dpo_loss", None, "failed", "published_snippet")),
    "dan": fake(("sequence_logps", None, "failed", "mean_not_sum"),
                ("dpo_loss", None, "failed", "published_snippet"),
                ("dpo_loss", None, "failed", "no_reference")),
    "eve": fake(("sequence_logps", None, "failed", "mean_not_sum"),
                ("sequence_logps", None, "passed"),
                ("dpo_loss", None, "failed", "published_snippet"),
                ("dpo_loss", None, "passed")),
    "fay": fake(("sequence_logps", None, "passed")) + [
        "while True: pass", "check('dpo_loss', None, 'passed')"],
    # an exercise cell that does not parse: its check then raises NameError
    "lea": fake(("sequence_logps", None, "passed")) + [
        "def dpo_loss(:\n    return 1", "check('dpo_loss', dpo_loss)"],
    # ... or runs on the stub an earlier cell left: still not "untouched"
    "max": [FAKE_CHECK, "def dpo_loss(): raise NotImplementedError",
            "def dpo_loss(x:\n    return x",
            "check('dpo_loss', dpo_loss, 'not attempted')"],
}
# a training cell no check needs: skipped, so the endless loop costs nothing
CLASS["ben"].insert(2, ("while True: pass", "train"))
FORGED = [  # lines a notebook appends to its own grade file
    {"id": "dpo_loss", "status": "passed", "mistake": ["x"]},  # L6
    {"id": "sequence_logps", "status": "<script>alert(1)</script>"},  # U1
    {"id": "$\\frac{$", "status": "failed", "message": "mathtext"},
    {"id": "dpo_snippet", "status": "failed", "mistake": "my own notes",
     "message": 7}]
FORGE = ("with open(os.environ['KIT_GRADE_FILE'], 'a') as f:\n"
         "    for r in %r:\n        f.write(json.dumps(r) + '\\n')")
HOSTILE = {
    # grade lines written by cells that call no check(...) for them (the
    # file's name says it is notebook 03), and one more than its check
    # wrote from a check's own cell: none of them counts
    "ivy": fake(("sequence_logps", None, "failed", "mean_not_sum")) + [
        FORGE % (FORGED + [{"id": "sequence_logps", "status": "passed"}]),
        "check('dpo_snippet', None)\n" + FORGE % [
            {"id": "dpo_snippet", "status": "passed"}]],
    # the grader's parent signal, a process of its own, the grader's secret
    "jon": fake(("sequence_logps", None, "passed")) + [
        "import signal, subprocess\nos.kill(os.getppid(), signal.SIGTERM)\n"
        "child = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        "open(os.environ['SPY'], 'w').write(json.dumps([child.pid, "
        "os.environ.get('INSTRUCTOR_SECRET'), os.getppid(), "
        "os.environ['KIT_RUNS']]))",
        # cells after the last check are skipped: one (of no exercise of
        # the course, so graded as none) keeps it run
        "check('x', None)"],
    "kim": fake(("sequence_logps", None, "passed")) + [
        "print('x' * 5000)", "check('dpo_loss', None, 'passed')"],
}


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, one_zygote):
    """Grade the class once, --jobs 2; every class test reads the result
    (warm, from the module's zygote, as a class of this size would be)."""
    root = tmp_path_factory.mktemp("class")
    spy = tmp_path_factory.mktemp("spy") / "jon.json"
    for student, cells in {**CLASS, **HOSTILE}.items():
        write_notebook(root / student / NB, *cells)
    # jon's notebook finds its own spy file
    text = (root / "jon" / NB).read_text().replace("os.environ['SPY']",
                                                   repr(str(spy)))
    (root / "jon" / NB).write_text(text)
    (root / "gus").mkdir()
    (root / "gus" / NB).write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff corrupt")
    broken = json.loads((root / "ann" / NB).read_text())
    del broken["cells"][1]["source"]  # L4: a cell without a source
    (root / "hal").mkdir()
    (root / "hal" / NB).write_text(json.dumps(broken))
    # graded only if the skip rules are broken: both would crash
    write_notebook(root / "solutions" / NB, "import os; os._exit(1)")
    write_notebook(root / "ann" / ".ipynb_checkpoints" / NB, "1/0")
    out = tmp_path_factory.mktemp("reports")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INSTRUCTOR_SECRET", "hunter2")
        patch.setattr(grade, "OUTPUT_LIMIT", 1000)
        # the protections a grader that is not root has (as root, the wall
        # keeps jon's spy file out of reach: tests/test_grade_wall.py)
        patch.setattr(sandbox, "why_not", lambda mode: "this class's spy")
        share(one_zygote, patch)
        result = kit_grade(str(root), "--jobs", "2", "--timeout", "5",
                           "--csv", str(out / "class.csv"),
                           "--html", str(out / "class.html"))
    as_json = kit_grade(str(root / "cat"), str(root / "gus"), "--json",
                        "--jobs", "2")
    return result, out, as_json, spy


def test_class_csv_has_a_row_per_submission_and_exercise(graded_class):
    result, out, *_ = graded_class
    with open(out / "class.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == HEADER
    table = {(r[1], r[3]): dict(zip(HEADER, r)) for r in rows[1:]}
    assert [r[1] for r in rows[1:]] == sorted(r[1] for r in rows[1:])
    # each file in a folder of its own: the folder is the student
    assert {r[0] for r in rows[1:]} == set(CLASS) | set(HOSTILE) | {
        "gus", "hal"}
    # S8: every copy of 03 has 03's four exercises, whatever its cells say
    assert len(rows) == 1 + 13 * 4
    assert {r[3] for r in rows[1:]} == set(NB03)
    assert {r[2] for r in rows[1:]} == {"03_dpo_compute_loss"}
    sub = f"/{NB}"
    assert table["ann" + sub, "dpo_loss"]["status"] == "not attempted"
    assert table["ben" + sub, "dpo_loss"]["status"] == "passed"
    assert table["ben" + sub, "dpo_loss"]["stars"] == "2"
    assert table["ben" + sub, "sequence_logps"]["stars"] == "1"
    assert table["ben" + sub, "dpo_loss"]["error"] == ""  # train: skipped
    snippet = table["ben" + sub, "dpo_snippet"]  # its check cell deleted
    assert (snippet["status"], snippet["message"]) == (
        "not attempted", "no check(...) for it in this notebook")
    assert table["cat" + sub, "dpo_loss"]["mistake"] == "published_snippet"
    assert table["cat" + sub, "dpo_loss"]["message"] == (
        "made published_snippet")
    dan = table["dan" + sub, "dpo_loss"]
    assert (dan["status"], dan["mistake"], dan["attempts"]) == (
        "failed", "no_reference", "2")
    eve = table["eve" + sub, "dpo_loss"]  # passed at the second attempt
    assert (eve["status"], eve["mistake"], eve["attempts"]) == (
        "passed", "", "2")
    fay = table["fay" + sub, "dpo_loss"]  # after the endless cell
    assert fay["status"] == "crashed"
    assert fay["message"] == (
        "code cell 3 (`while True: pass`) ran past the time limit (5 s "
        "per cell) in its own code: an endless loop in it? (if it only "
        "needs longer: --timeout)")
    # the timeout shows beside the exercise graded before it
    passed = table["fay" + sub, "sequence_logps"]
    assert passed["status"] == "passed" and passed["error"] == fay["message"]
    for broken, why in (("gus", "not a notebook: binary"),
                        ("hal", "not a notebook: cell 2 has no source")):
        row = table[broken + sub, "dpo_loss"]
        assert row["status"] == "not graded" and row["error"].startswith(why)
    # forged lines (a list for a mistake, a made-up status, id or mistake;
    # a "passed" after a failed check): the verdicts stay check()'s
    ivy = [table["ivy" + sub, e] for e in NB03]
    assert [(row["status"], row["mistake"]) for row in ivy] == [
        ("failed", "mean_not_sum"), ("not attempted", ""),
        ("not attempted", ""), ("not attempted", "")]
    forger = "code cell 3 (`with open(os.environ['KIT_GRADE_FILE'], 'a') as"
    assert ivy[0]["message"] == ("made mean_not_sum (ignored: grade lines on "
                                 "it that no check(...) of their cell "
                                 f"wrote, from {forger} f:`))")
    assert ivy[1]["message"].endswith(f"from {forger} f:`))")
    assert ivy[2]["message"].endswith(
        f"from {forger} f:`), code cell 4 (`check('dpo_snippet', None)`))")
    assert ivy[3]["message"] == "no check(...) for it in this notebook"
    kim = table["kim" + sub, "dpo_loss"]
    assert kim["status"] == "crashed" and "printed more than 1,000" in (
        kim["message"])
    # code that does not parse: named, apart from an untouched stub
    lea = table["lea" + sub, "dpo_loss"]  # its check then raised NameError
    assert (lea["status"], lea["message"]) == (
        "crashed", "SyntaxError in code cell 3 (`def dpo_loss(:`): invalid "
        "syntax (line 1)")
    max_ = table["max" + sub, "dpo_loss"]  # its check ran on the old stub
    assert (max_["status"], max_["attempts"]) == ("crashed", "1")
    assert max_["message"].startswith("SyntaxError in code cell 3 (`def "
                                      "dpo_loss(x:`): ")


def _ends(pid, seconds=5):
    """The process is gone (or a zombie no one has reaped yet) in time."""
    for _ in range(int(seconds * 10)):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.1)
    return False


def test_a_hostile_kernel_reaches_neither_grader_nor_secret(graded_class):
    result, _, _, spy = graded_class
    child, secret, parent, runs = json.loads(spy.read_text())
    assert secret is None  # U3: the grader's environment stayed behind
    assert "kit-grade-" in runs  # runs/ in its own folder, removed after
    assert parent != os.getpid()  # its SIGTERM went to kit.grading.kernel_shim
    assert "jon/03_dpo_compute_loss.ipynb" not in result.stdout  # no error
    assert _ends(child)  # U2: its own session ended with the kernel


def test_class_summary_counts_and_exit_code(graded_class):
    result, *_ = graded_class
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    # graded: every exercise has a verdict (a crash is one); the counts
    # add up to all 13
    assert lines[0] == "Graded 11 of 13 submissions."
    # the most failed first (at a tie the lower pass rate): stubs left and
    # crashes do not put an exercise on top
    assert lines[1:5] == [
        "  dpo_loss ★★: 2/13 passed, 2 failed, 3 not attempted, "
        "4 crashed, 2 not graded; published_snippet ×3, no_reference ×1",
        "  sequence_logps ★: 7/13 passed, 2 failed, 2 not attempted, "
        "2 not graded; mean_not_sum ×3",
        "  dpo_snippet ★★: 0/13 passed, 0 failed, 9 not attempted, "
        "2 crashed, 2 not graded",
        "  dpo_compute_loss ★★★: 0/13 passed, 0 failed, 9 not attempted, "
        "2 crashed, 2 not graded"]
    assert lines[5] == "Errors (the grades made before them are kept):"
    assert [line.split(":")[0] for line in lines[6:-1]] == [
        f"  {name}/{NB}" for name in ("fay", "gus", "hal", "kim")]
    assert lines[-1] == ("Exit code 1: 4 of 13 submissions stopped with an "
                         "error (above); the grades before it are kept.")
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
    _, out, *_ = graded_class
    html = (out / "class.html").read_text(encoding="utf-8")
    page = _Page()
    page.feed(html)
    assert len(page.images) == 1 and page.links == []  # self-contained
    assert page.images[0].startswith("data:image/png;base64,iVBOR")
    text = " ".join(page.text)
    assert text.index("dpo_loss") < text.index("sequence_logps")
    assert "published_snippet" in text and "mean_not_sum" in text
    assert "<script" not in html and "alert(1)" not in html  # U1
    assert "1 attempt: " in html and "1 attempts" not in html
    # the named mistakes, in the catalogue's words, never a student's
    mistakes = html[html.index("<h2>Named mistakes"):html.index(
        "<h2>Students")]
    assert "the published snippet" in mistakes
    assert "made published" not in mistakes and "my own notes" not in html
    # students, by folder, the lowest share passed first, then by name
    students = [name for name in re.findall(r"<tr><td[^>]*>([^<]*)</td>",
                                            html)
                if name in CLASS or name in HOSTILE or name in "gus hal"]
    assert students == ["ann", "dan", "gus", "hal", "ivy", "max", "cat",
                        "fay", "jon", "kim", "lea", "ben", "eve"]
    # what stopped fay's run, under her grades
    fay = re.search(r"<tr><td[^>]*>fay</td>.*?</tr>(.*?)</tr>", html)
    assert "ran past the time limit" in fay.group(1)


def _scored(name, statuses):
    rows = [{"id": f"ex{i}", "stars": 1, "status": word, "mistake": None,
             "message": "", "attempts": 1, "mistakes": []}
            for i, word in enumerate(statuses)]
    return {"submission": name, "notebook": "nb", "error": None,
            "exercises": rows, "total": len(rows),
            "passed": statuses.count("passed")}


def test_students_sort_by_share_passed_and_exercises_by_failures():
    from kit.grading import gradebook
    cards = [_scored("amy", ["passed"] * 3),  # 3/3
             _scored("bob", ["passed"] * 3 + ["failed"]),  # 3/4: lower
             _scored("cy", ["passed", "crashed", "failed", "passed"])]
    html = gradebook.html_page(cards, gradebook.summarise(cards))
    rows = re.findall(r"<tr><td[^>]*>(amy|bob|cy)</td>", html)
    assert rows == ["cy", "bob", "amy"]  # 2/4, 3/4, 3/3
    # ex0: nobody failed it, two left the stub (pass rate 1/3); ex1: one
    # failed it (pass rate 2/3): ex1 is re-taught first
    cards = [_scored("amy", ["not attempted", "passed"]),
             _scored("bob", ["not attempted", "failed"]),
             _scored("cy", ["passed", "passed"])]
    assert [line["id"] for line in gradebook.summarise(cards)] == [
        "ex1", "ex0"]


def test_class_json_carries_mistake_message_and_error(graded_class):
    _, _, result, _ = graded_class
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["error"] is None
    cat, gus = report["submissions"]
    assert cat["submission"] == f"cat/{NB}" and cat["error"] is None
    assert (cat["student"], gus["student"]) == ("cat", "gus")
    assert cat["exercises"][1] == {
        "id": "dpo_loss", "stars": 2, "status": "failed",
        "mistake": "published_snippet", "message": "made published_snippet",
        "attempts": 1, "ignored": 0, "mistakes": ["published_snippet"]}
    assert gus["error"].startswith("not a notebook")
    assert [line["id"] for line in report["summary"]] == [
        "dpo_loss", "dpo_snippet", "dpo_compute_loss", "sequence_logps"]


def test_two_files_of_one_student_are_one_row(tmp_path, warm):
    """zoe's two notebooks in her folder, and uma's two named alike in the
    class folder, are one row each, with a column per exercise of both."""
    nb01 = "01_stock_compute_loss.ipynb"
    write_notebook(tmp_path / "zoe" / nb01, *fake(
        ("causal_lm_loss", None, "failed", "not_shifted"),
        ("compute_loss", None, "passed")))
    write_notebook(tmp_path / "zoe" / NB, *fake(
        ("sequence_logps", None, "passed")))
    write_notebook(tmp_path / "uma_01.ipynb", *fake(
        ("causal_lm_loss", None, "passed")))
    write_notebook(tmp_path / f"uma-{NB}", *fake(
        ("dpo_loss", None, "passed")))
    out = tmp_path / "reports"
    out.mkdir()
    result = kit_grade(tmp_path, "--jobs", "2", "--csv", out / "c.csv",
                       "--html", out / "c.html")
    assert result.returncode == 0, result.stdout + result.stderr
    with open(out / "c.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["submission"], r["student"]) for r in rows} == {
        (f"zoe/{nb01}", "zoe"), (f"zoe/{NB}", "zoe"),
        ("uma_01.ipynb", "uma"), (f"uma-{NB}", "uma")}
    html = (out / "c.html").read_text(encoding="utf-8")
    html = html[html.index('<table class="students">'):]
    names = re.findall(r"<tr><td[^>]*>([^<]*)</td><td>([^<]*)</td>", html)
    assert names == [("uma", "2/6"), ("zoe", "2/6")]  # a tie: by name
    # both notebooks' exercises, each under its notebook, in course order
    assert re.findall(r'<th class="id" colspan="(\d)">([^<]*)<', html) == [
        ("2", "01_"), ("4", "03_")]
    headers = re.sub(r"<wbr>", "", html)
    assert headers.index(">causal_lm_loss<") < headers.index(
        ">compute_loss<") < headers.index(">sequence_logps<")
    # what the checker said, on the page under zoe's row
    zoe = re.search(r">zoe</td>.*?</tr>(.*?)</tr>", html).group(1)
    assert "<b>causal_lm_loss</b>: made not_shifted" in zoe


# ------------------------------------------------------------ one notebook

@pytest.fixture(scope="module")
def one_zygote():
    """One warm zygote for this module's one-notebook grades: each would
    otherwise start a kernel cold (~6.5 s importing torch). The cold path
    is kept by the real command below and by the warm-against-cold test."""
    with pytest.MonkeyPatch.context() as patch:
        # as a grader that sets no thread count: start_zygote sets it
        # (test_the_zygote_starts_when_the_grader_sets_no_thread_count)
        patch.delenv("OMP_NUM_THREADS", raising=False)
        grade.start_zygote()
    started = dict(grade._zygote)
    grade._zygote.clear()
    yield started
    grade._zygote.update(started)
    grade.stop_zygote()


def share(zygote, patch):
    """`kit grade` runs fork from `zygote`, started once for several."""
    patch.setattr(grade, "warm_wanted", lambda count, jobs: True)
    patch.setattr(grade, "start_zygote", lambda: grade._zygote.update(zygote))
    patch.setattr(grade, "stop_zygote", grade._zygote.clear)


@pytest.fixture
def warm(one_zygote, monkeypatch):
    share(one_zygote, monkeypatch)

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


def test_one_notebook_all_passed_is_exit_0(tmp_path, warm):
    path = write_notebook(tmp_path / "a.ipynb", *fake(
        *[(exercise, None, "passed") for exercise in NB03]))
    result = kit_grade(str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4/4 passed" in result.stdout


def test_a_scorecard_names_the_mistake_and_says_what_differs(tmp_path,
                                                              warm):
    path = write_notebook(tmp_path / "b.ipynb", *fake(
        ("dpo_loss", None, "failed", "published_snippet")))
    result = kit_grade(str(path))
    assert result.returncode == 1
    assert result.stdout.splitlines()[1:] == [
        "  ⏸  sequence_logps           ★    not attempted",
        "  ❌ dpo_loss                 ★★   failed (published_snippet)",
        "       made published_snippet",
        "  ⏸  dpo_snippet              ★★   not attempted",
        "  ⏸  dpo_compute_loss         ★★★  not attempted", "  0/4 passed"]


def test_an_untouched_course_notebook_is_all_not_attempted(warm):
    result = kit_grade(str(paths.NOTEBOOKS / "02_callbacks_vs_subclassing"
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


CELL = {"cell_type": "code", "id": "c", "metadata": {}, "outputs": [],
        "execution_count": None}
BROKEN = [{"cells": [CELL], "metadata": {}, "nbformat": 4,
           "nbformat_minor": 5},  # L4: a code cell without a source
          {"cells": [{**CELL, "source": 5}], "metadata": {}, "nbformat": 4,
           "nbformat_minor": 5}]


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\xff",
                                     b"not json", b'{"cells": 3}'] + [
    json.dumps(broken).encode() for broken in BROKEN])
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


def test_a_dead_kernel_is_not_called_a_time_limit(tmp_path, warm):
    path = write_notebook(tmp_path / "dies.ipynb",
                          *fake(("dpo_loss", None, "passed")),
                          "import os; os._exit(1)", "check('x', None)")
    result = kit_grade(str(path), "--json")
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert error.startswith("the kernel died in code cell 3")
    assert "time limit" not in error.replace("no time limit", "")


def test_a_kernel_that_dies_before_a_check_marks_it_crashed(tmp_path, warm):
    path = write_notebook(tmp_path / "03_dpo_compute_loss.ipynb",
                          *fake(("sequence_logps", None, "passed")),
                          "import os; os._exit(1)",
                          "check('dpo_loss', None, 'passed')")
    result = kit_grade(str(path), "--json")
    rows = {row["id"]: row for row in
            json.loads(result.stdout)["exercises"]}
    assert rows["sequence_logps"]["status"] == "passed"
    assert rows["dpo_loss"]["status"] == "crashed"
    assert rows["dpo_loss"]["message"].startswith(
        "the kernel died in code cell 3 (`import os; os._exit(1)`)")
    shown = kit_grade(str(path)).stdout  # the terminal names it too
    assert "💥 dpo_loss" in shown and "crashed" in shown


def test_an_endless_cell_stops_at_the_time_limit(tmp_path, warm):
    """--all-cells runs the training cells too: this one never ends."""
    path = write_notebook(tmp_path / "slow.ipynb",
                          "check = print  # no exercises run", "check('x')",
                          ("import time; time.sleep(60)", "train"),
                          "check('x')")
    result = kit_grade(str(path), "--timeout", "1", "--all-cells")
    assert result.returncode == 2
    assert ("code cell 3 (`import time; time.sleep(60)`) ran past the "
            "time limit (1 s per cell) in its own code") in result.stdout


def test_kernels_run_in_a_fresh_folder_with_the_graders_kit(
        tmp_path, monkeypatch, warm):
    monkeypatch.setenv("PYTHONPATH", "relative/means/nothing/elsewhere")
    monkeypatch.chdir(tmp_path)
    path = write_notebook(
        tmp_path / "where.ipynb", FAKE_CHECK.replace(
            '"fine"', "os.getcwd() + ' ' + kit.__file__").replace(
            "import json, os", "import json, os, kit"),
        "open('litter.txt', 'w').write('x')",
        "check('dpo_loss', None, 'passed')")
    result = kit_grade(path, "--json")
    dpo_loss = json.loads(result.stdout)["exercises"][1]
    cwd, kit_file = dpo_loss["message"].split()
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
    isolation, refusal = captured.err.splitlines()
    assert isolation.startswith("isolation: ")
    assert refusal == (f"could not write {csv_path}: "
                       "No such file or directory")


# ------------------------------------- what grade skips (issue 18, item 5)

def _bound_and_used(source):
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a learner's stub line: nothing to learn from it
        return set(), set()
    bound, used = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, ast.Store) else used).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    # a function's parameters are its own names, not the notebook's
    used -= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    return bound, used


@pytest.mark.parametrize("path", sorted(paths.NOTEBOOKS.glob("0*.ipynb")) +
                         sorted(paths.SOLUTIONS.glob("0*.ipynb")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_grade_skips_only_cells_no_check_needs(path):
    """Training and explorer cells are tagged; no tagged cell checks, and
    no untagged cell uses what only a tagged cell defines."""
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    if not submissions.exercises_in(notebook):
        return  # never graded: 00 and 06 have no exercises
    only_tagged = set()
    for cell in code:
        tagged = bool(submissions.SKIPPED_TAGS & set(cell.metadata.get("tags", [])))
        bound, used = _bound_and_used(cell.source)
        trains = re.search(r"(?<!model)\.train\(\)|\bexplore_\w+\(\)",
                           cell.source)
        assert tagged or not trains, cell.source[:80]
        if tagged:
            assert "check(" not in cell.source, cell.source[:80]
            only_tagged |= bound
        else:
            assert not (used & only_tagged), (cell.source[:80],
                                              used & only_tagged)
            only_tagged -= bound


# --------------------------------- a class run that is stopped (L5, L6)

# a kernel says it runs its last cell in the one folder it can write, its
# own (a kernel behind the wall sees no other): the test's cue
RUNNING = "open('running', 'w').close(); import time; time.sleep(30)"


def signal_when_running(tmp_path, signum, thread=False):
    """Send `signum` to this process (the grader), or to a thread of it
    other than the main one, once a kernel graded with tempfile.tempdir =
    tmp_path runs RUNNING."""

    def wait_then_signal():
        for _ in range(600):
            if list(tmp_path.glob("kit-grade-*/cwd/running")):
                break
            time.sleep(0.1)
        if thread:  # this thread takes it: the main one's wait sleeps on
            signal.pthread_kill(threading.get_ident(), signum)
        else:
            os.kill(os.getpid(), signum)
    threading.Thread(target=wait_then_signal, daemon=True).start()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_class_run_keeps_what_was_graded(tmp_path, monkeypatch,
                                                   signum, warm):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = tmp_path / "class"
    write_notebook(root / "a" / NB, *fake(("dpo_loss", None, "passed")))
    write_notebook(root / "b" / NB, RUNNING)
    write_notebook(root / "c" / NB, "1/0")  # never started
    signal_when_running(tmp_path, signum)
    csv_path, html_path = tmp_path / "class.csv", tmp_path / "class.html"
    result = kit_grade(root, "--jobs", "1", "--csv", csv_path,
                       "--html", html_path)
    assert result.returncode == 130, result.stdout + result.stderr
    # one count for the run, not "Graded 1 of 1" above "1 of 3"
    headline = ("Interrupted: graded 1 of 3 submissions; 2 not graded (the "
                "run was stopped).")
    assert result.stdout.splitlines()[0] == headline
    page = html_path.read_text(encoding="utf-8")
    assert headline in page
    assert all(f">{name}</td>" in page for name in "abc")
    assert result.stdout.splitlines()[-1] == (
        f"Interrupted: 1 of 3 submissions graded, kept in {csv_path}, "
        f"{html_path}.")
    with open(csv_path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    # every student keeps a row: b stopped where it was, c never started
    errors = {row["submission"]: row["error"] for row in rows}
    assert errors == {
        f"a/{NB}": "",
        f"b/{NB}": "not graded: the run was interrupted while code cell 1 "
                   f"(`{RUNNING[:49]}…`) ran (2 of 3 submissions not "
                   "graded)",
        f"c/{NB}": "not graded: the run was interrupted before it started "
                   "(2 of 3 submissions not graded)"}
    assert "Traceback" not in result.stdout + result.stderr
    assert not list(tmp_path.glob("kit-grade-*"))  # temporary folders gone


def test_a_ctrl_c_that_another_thread_takes_still_stops_the_run(
        tmp_path, monkeypatch, warm):
    # The OS may hand a process's SIGINT to any of its threads; then the
    # main thread's wait is not woken (seen once under load: the grader
    # waited out the cell and graded all). Here a thread of the grader's
    # process takes it, while the kernel sleeps.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = tmp_path / "class"
    write_notebook(root / "a" / NB, *fake(("dpo_loss", None, "passed")))
    write_notebook(root / "b" / NB, RUNNING)
    signal_when_running(tmp_path, signal.SIGINT, thread=True)
    start = time.monotonic()
    result = kit_grade(root, "--jobs", "1")
    assert result.returncode == 130, result.stdout + result.stderr
    assert time.monotonic() - start < 25  # not the cell's 30 s


def test_a_grader_killed_outright_leaves_no_kernel_nor_folder(tmp_path):
    # the kernel's own process, and one it started: found by its argument
    marker = f"61.{os.getpid()}"
    path = write_notebook(tmp_path / "nb.ipynb", *fake(),
                          "import subprocess\nsubprocess.Popen(['sleep', "
                          f"{marker!r}])\n" + RUNNING, "check('x', None)")
    (tmp_path / "tmp").mkdir()
    grader = subprocess.Popen(
        [sys.executable, "-m", "kit", "grade", str(path)],
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):  # the kernel is running its last cell
        if list((tmp_path / "tmp").glob("kit-grade-*/cwd/running")):
            break
        time.sleep(0.1)
    assert _running(marker)
    grader.kill()
    grader.wait()
    for _ in range(100):  # kit.grading.kernel_shim notices, and cleans up
        if not list((tmp_path / "tmp").glob("kit-grade-*")):
            break
        time.sleep(0.1)
    assert not list((tmp_path / "tmp").glob("kit-grade-*"))
    for _ in range(50):
        if not _running(marker):
            break
        time.sleep(0.1)
    assert not _running(marker)


def _running(argument):
    """Pids of processes with `argument` on their command line."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if argument.encode() in cmdline.read_bytes().split(b"\0"):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


# ------------------------------------------ warm kernels (kit.grading.zygote)

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def test_a_warm_kernel_grades_as_a_cold_one_and_the_zygote_ends(
        tmp_path, monkeypatch):
    root = tmp_path / "class"
    for name, source in [("solved", NOTEBOOKS / "solutions" / NB),
                         ("stubs", NOTEBOOKS / NB)]:
        (root / name).mkdir(parents=True)
        (root / name / NB).write_text(source.read_text())
    # imported before any cell asks: this kernel was forked warm
    write_notebook(root / "warm" / "w.ipynb", FAKE_CHECK.replace(
        '"fine"', "str('torch' in sys.modules)").replace(
        "import json, os", "import json, os, sys"),
        "check('dpo_loss', None, 'passed')")
    zygotes = []
    stop = grade.stop_zygote

    def stop_and_see():
        zygotes.append(grade._zygote.get("process"))
        stop()
    monkeypatch.setattr(grade, "stop_zygote", stop_and_see)

    def verdicts(result):
        cards = json.loads(result.stdout)["submissions"]
        return {(c["submission"], r["id"], r["status"], r["mistake"])
                for c in cards for r in c["exercises"]}, cards
    warm, warm_cards = verdicts(kit_grade(root, "--json", "--jobs", "2"))
    monkeypatch.setenv("KIT_GRADE_COLD", "1")
    cold, cold_cards = verdicts(kit_grade(root, "--json", "--jobs", "2"))
    assert warm == cold
    assert ("solved/" + NB, "dpo_loss", "passed", None) in warm
    assert ("stubs/" + NB, "dpo_loss", "not attempted", None) in warm
    messages = [r["message"] for cards in (warm_cards, cold_cards)
                for c in cards if c["submission"] == "warm/w.ipynb"
                for r in c["exercises"] if r["id"] == "dpo_loss"]
    assert messages == ["True", "False"]  # forked warm, then started cold
    assert zygotes[0] is not None and zygotes[1] is None
    assert _ends(zygotes[0].pid)  # the zygote is gone after the run
    assert not Path(zygotes[0].args[-1]).parent.exists()  # its folder too


# ---------------------------------------------- reports of forged records

def _card(exercise_id, status, error=None):
    row = {"id": exercise_id, "stars": 1, "status": status, "mistake": None,
           "message": "m", "attempts": 1, "mistakes": []}
    return {"submission": "s.ipynb", "notebook": "03", "error": error,
            "exercises": [row], "passed": 0, "total": 1}


def test_the_page_escapes_a_status_even_in_a_class_attribute():
    from kit.grading import gradebook
    cards = [_card("dpo_loss", '"><script>alert(1)</script>')]
    html = gradebook.html_page(cards, gradebook.summarise(cards))
    assert "<script" not in html and 'class="not-graded"' in html


def test_a_label_with_dollars_still_gets_a_whole_page(tmp_path):
    from kit.grading import gradebook
    cards = [_card("$\\frac{$", "failed")]
    path = tmp_path / "class.html"
    gradebook.write_html(cards, gradebook.summarise(cards), path)
    assert "data:image/png;base64" in path.read_text(encoding="utf-8")


# ------------------------------------ the words beside a later exercise

def test_a_wrong_earlier_exercise_is_failed_not_not_done_yet(monkeypatch):
    import torch.nn.functional as F
    from transformers import Trainer

    from kit.checks import check

    def unshifted(logits, labels):  # wrong, not a stub
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(),
                               ignore_index=-100)

    class MyTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False,
                         num_items_in_batch=None):
            labels = inputs.pop("labels")
            outputs = model(**inputs)
            loss = causal_lm_loss(outputs.logits, labels)  # noqa: F821
            return (loss, outputs) if return_outputs else loss

    monkeypatch.setitem(globals(), "causal_lm_loss", unshifted)
    monkeypatch.delenv("KIT_GRADE_FILE", raising=False)
    with redirect_stdout(io.StringIO()):
        result = check("compute_loss", MyTrainer)
    assert "exercise 1 does not pass its check: using the kit's " in (
        result.message)
    assert "not done yet" not in result.message


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")
def test_the_zygote_starts_when_the_grader_sets_no_thread_count(one_zygote):
    # unset, torch's import starts a second thread and forking is unsafe:
    # the zygote must not then refuse and leave the class cold. The
    # module's zygote was started so (see one_zygote).
    assert one_zygote and one_zygote["process"].poll() is None


# ------------------------------------------------ in Japanese (issue 22)

JA_SETUP = "from kit.course import setup_notebook\nsetup_notebook(lang='ja')"
NOT_SHIFTED = """import torch.nn.functional as F
def not_shifted(logits, labels):  # the named mistake not_shifted
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(),
                           ignore_index=-100)"""


def _said_in(lang, exercise_id, source, name):
    """The message check() gives `name` (defined by `source`) in `lang`."""
    from kit import i18n
    from kit.checks import check
    namespace, previous = {}, i18n.language()
    exec(source, namespace)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("KIT_GRADE_FILE", raising=False)
        i18n.set_language(lang)
        try:
            with redirect_stdout(io.StringIO()):
                return check(exercise_id, namespace[name]).message
        finally:
            i18n.set_language(previous)


def test_the_notebooks_language_is_the_reports_default(tmp_path,
                                                       monkeypatch):
    ja = paths.NOTEBOOKS / "ja" / "04_grpo_dataloader.ipynb"
    en = paths.NOTEBOOKS / "04_grpo_dataloader.ipynb"
    assert [submissions.notebook_language(p) for p in (
        ja, en, tmp_path / "missing.ipynb")] == ["ja", "en", "en"]
    assert submissions.run_language([("a", ja), ("b", ja)]) == "ja"
    assert submissions.run_language([("a", ja), ("b", en)]) == "en"  # mixed
    # no kernel: the cards are made up; what is said is the point
    monkeypatch.delenv("KIT_LANG", raising=False)
    monkeypatch.setattr(grade, "grade_all", lambda submissions, *a, **k: [
        {**_card("dpo_loss", "failed"), "submission": label}
        for label, _ in submissions])
    # Japanese word order: the word, then the count
    for path, words in ((ja, "合格 0/1"), (en, "0/1 passed")):
        out = kit_grade(path).stdout
        assert words in out, out
    assert kit_grade(en, "--lang", "ja").stdout.endswith("合格 0/1\n")
    assert grade.i18n.language() == "en"  # as it was before the runs


def test_grade_lang_ja_reports_in_japanese_records_in_shape(tmp_path, warm):
    cells = ["from kit.checks import check\nfrom kit import losses",
             NOT_SHIFTED, "check('causal_lm_loss', not_shifted)",
             "check('callback_or_subclass', {})"]  # untouched
    write_notebook(tmp_path / "aki" / "demo.ipynb", JA_SETUP, *cells)
    write_notebook(tmp_path / "bob" / "demo.ipynb",  # an English copy
                   JA_SETUP.replace("lang='ja'", ""), *cells)
    page = tmp_path / "class.html"
    result = kit_grade(tmp_path / "aki", tmp_path / "bob", "--lang", "ja",
                       "--json", "--html", page)
    assert result.returncode == 0, result.stdout + result.stderr
    cards = json.loads(result.stdout)["submissions"]
    # the records: English data (statuses, ids), only the messages differ
    assert [sorted(card) for card in cards] == [[
        "error", "exercises", "notebook", "passed", "student",
        "submission", "total"]] * 2
    rows = [card["exercises"] for card in cards]
    assert [[(r["id"], r["status"], r["mistake"]) for r in row]
            for row in rows] == [[
                ("causal_lm_loss", "failed", "not_shifted"),
                ("callback_or_subclass", "not attempted", None)]] * 2
    # the English copy's kernel spoke Japanese too: the checker's message
    # is the one this process says in Japanese (kit.checks.messages)
    assert rows[0] == rows[1]
    assert rows[0][0]["message"] == _said_in("ja", "causal_lm_loss",
                                             NOT_SHIFTED, "not_shifted")
    html = page.read_text(encoding="utf-8")
    assert '<html lang="ja">' in html
    for words in ("<h1>クラスの成績レポート</h1>", "<h2>演習</h2>",
                  "<h2>チェッカーが見分けた間違い</h2>", "<th>合格</th>",
                  "<th>不合格</th>", "<th>未着手</th>", "not_shifted"):
        assert words in html, words
    assert "Class report" not in html and ">passed<" not in html


# --------------------------------- reports a submission cannot forge (N52-54)

FORGED_MESSAGES = ["\x1b[2J\x1b[H✅ passed · 3/3",
                   "ok\n  ✅ sequence_logps ★ passed",
                   "\u202egnissap", "=HYPERLINK(\"http://x\", \"see\")"]


def test_a_file_name_cannot_fake_a_line_nor_a_formula(tmp_path):
    names = ["a\nall 9 of 9 passed.ipynb", "b\x1b[2J.ipynb", "=1+2.ipynb",
             "@SUM(A1).ipynb"]
    for name in names:
        (tmp_path / name).write_text("not json")  # refused, no kernel
    result = kit_grade(tmp_path, "--csv", tmp_path / "class.csv")
    assert "\x1b" not in result.stdout
    assert not any(line.startswith("all 9 of 9")
                   for line in result.stdout.splitlines())
    assert "a\\nall 9 of 9 passed.ipynb" in result.stdout
    rows = list(csv.DictReader((tmp_path / "class.csv").open()))
    cells = [row["submission"] for row in rows]
    assert "'=1+2.ipynb" in cells and "'@SUM(A1).ipynb" in cells
    assert not any(cell[:1] in "=+-@" for row in rows
                   for cell in row.values() if cell)


@pytest.mark.parametrize("message", FORGED_MESSAGES)
def test_a_forged_message_is_shown_not_obeyed(message, tmp_path):
    from kit.grading import gradebook
    line = json.dumps({"id": "dpo_loss", "status": "failed",
                       "message": message})
    card = {"submission": "x.ipynb", "notebook": "x", "error": None,
            "exercises": verdicts.exercise_rows(
                ["dpo_loss"], ["dpo_loss"],
                verdicts.records([line], ["dpo_loss"]), None),
            "passed": 0, "total": 1}
    card = gradebook.inert_card(card)
    shown = gradebook.scorecard(card)
    assert all(char.isprintable() or char in " \n" for char in shown)
    assert len(shown.splitlines()) == 4  # title, row, message, score
    gradebook.write_csv([card], gradebook.summarise([card]),
                        tmp_path / "c.csv")
    row = next(csv.DictReader((tmp_path / "c.csv").open()))
    assert row["message"][:1] not in "=+-@"


# ------------------- submissions are plain files in the class folder (N59-65)

def test_an_empty_path_is_refused_not_the_current_folder(capsys):
    assert cli.main(["grade", "", "--json"]) == 2
    assert "an empty path (an unset variable?)" in json.loads(
        capsys.readouterr().out)["error"]


def test_a_link_a_fifo_or_a_huge_file_is_named_and_not_read(tmp_path,
                                                            monkeypatch):
    private = tmp_path / "private.txt"
    private.write_text("hunter2 is the instructor's password")
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "link.ipynb").symlink_to(private)
    os.mkfifo(folder / "fifo.ipynb")  # a read would never end
    (folder / "huge.ipynb").write_text("x" * 2_500_000)
    monkeypatch.setattr(submissions, "NOTEBOOK_SIZE_LIMIT", 1_000_000)
    result = kit_grade(folder, "--csv", tmp_path / "class.csv")
    assert result.returncode == 2
    assert "hunter2" not in (result.stdout
                             + (tmp_path / "class.csv").read_text())
    assert "link.ipynb: not read: it is a symbolic link" in result.stdout
    assert "fifo.ipynb: not read: it is not a plain file" in result.stdout
    assert "huge.ipynb: not read: 2 MB, more than the 1 MB" in result.stdout
    # named by itself, a device too is refused in one line, unread
    single = kit_grade("/dev/zero")
    assert single.returncode == 2
    assert single.stdout.count("\n") == 1 and "not a plain file" in (
        single.stdout)


# ------------------------------------- limits a notebook cannot get around

def test_many_cells_under_the_cell_limit_stop_at_the_notebook_limit(
        tmp_path, warm):
    # N55: each cell within --timeout, together past --notebook-timeout
    path = write_notebook(tmp_path / "slow.ipynb",
                          "check = print  # no exercises run", "check('x')",
                          *["import time; time.sleep(2)"] * 4,
                          "check('x')")
    started = time.monotonic()
    result = kit_grade(path, "--timeout", "3", "--notebook-timeout", "3")
    assert result.returncode == 2
    # in the second sleep, or (a loaded machine's slow first cells) the first
    assert re.search(r"the notebook ran past its time limit \(3 s for all "
                     r"cells\) in code cell [34] ", result.stdout)
    assert time.monotonic() - started < 30


def test_an_error_message_counts_toward_the_output_limit(tmp_path, warm,
                                                         monkeypatch):
    # N58: an exception's value is output too
    monkeypatch.setattr(grade, "OUTPUT_LIMIT", 1000)
    path = write_notebook(tmp_path / "loud.ipynb",
                          *fake(("dpo_loss", None, "passed")),
                          "raise ValueError('x' * 5000)",
                          "check('dpo_loss', None, 'passed')")
    result = kit_grade(path)
    assert "code cell 3 (`raise ValueError('x' * 5000)`) printed more than " in (
        result.stdout)

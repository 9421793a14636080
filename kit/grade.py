"""`python -m kit grade PATH...`: run learners' notebooks, grade each exercise.

PATH is a notebook or a folder (every .ipynb below it, except in
`solutions/` and `.ipynb_checkpoints/`). Each submission runs headless in a
fresh kernel of its own, every cell even after an error, in an empty
temporary folder, N kernels at a time. Each `check(...)` call appends one
JSON line to the file named in the kernel's KIT_GRADE_FILE (a file of that
submission's own); the exercises are found in the notebook's code, so one
never checked still shows up, as "not attempted".

Student code runs with the grader's rights, as in nbgrader: grade only
what you would run yourself.

Exit codes, one notebook: 0 every exercise passed, 1 some did not, 2 it
could not be graded. Several: 0 every submission graded (whatever the
scores), 1 some could not be graded, 2 none could.
"""

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from tqdm import tqdm

import kit
from kit import gradebook
from kit.checks import EXERCISES

CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([\w.-]+)["']""")
ANY_CHECK = re.compile(r"\bcheck\(")
SKIPPED_FOLDERS = {"solutions", ".ipynb_checkpoints"}
# the folder holding `kit`: kernels import the grader's own kit from it
KIT_ROOT = str(Path(kit.__file__).resolve().parent.parent)


class CannotGrade(Exception):
    """Nothing to grade at all: the message is the one line we print."""


# ----------------------------------------------------------- what to grade

def find_submissions(paths):
    """Notebooks named by `paths`, each once, as (label, path) pairs.

    Labels are paths relative to the folder the submissions share, so
    alice/03.ipynb and bob/03.ipynb stay apart.
    """
    found = []
    for given in map(Path, paths):
        if given.is_dir():
            found += sorted(
                p for p in given.rglob("*.ipynb") if p.is_file() and not
                SKIPPED_FOLDERS & set(p.relative_to(given).parts[:-1]))
        elif given.exists():
            found.append(given)
        else:
            raise CannotGrade(f"no such notebook or folder: {given}")
    unique = list({p.resolve(): p for p in found}.values())
    if not unique:
        raise CannotGrade(f"no notebooks in {', '.join(map(str, paths))} "
                          "(solutions/ and .ipynb_checkpoints/ are skipped)")
    if len(paths) == 1 and not Path(paths[0]).is_dir():
        return [(str(unique[0]), unique[0])]
    absolute = [p.resolve() for p in unique]
    root = Path(os.path.commonpath([p.parent for p in absolute]))
    return [(str(a.relative_to(root)), p) for a, p in zip(absolute, unique)]


def exercises_in(notebook):
    """Exercise ids in the order the notebook's code cells check them."""
    ids = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            ids += [i for i in CHECK_CALL.findall(cell.source) if i not in ids]
    return ids


# ------------------------------------------------------- running one kernel

def _kernel_env(grade_file):
    env = dict(os.environ)
    env.pop("KIT_STRICT", None)  # grade every exercise, stop at none
    env.update(KIT_GRADE_FILE=str(grade_file), KIT_HEADLESS="1",
               HF_HUB_OFFLINE=env.get("HF_HUB_OFFLINE", "1"),
               PYTHONPATH=os.pathsep.join(
                   [KIT_ROOT] + [p for p in [env.get("PYTHONPATH")] if p]))
    return env


def execute(notebook, timeout):
    """Run every cell in a fresh kernel and a fresh folder.

    Returns the grade records and the error that stopped the run (None,
    or CellTimeoutError / DeadKernelError with `.cell`, the number from 1
    of the cell that was running); records made before it are kept.
    """
    running = {"cell": 0}

    def on_cell_execute(cell, cell_index):
        running["cell"] = cell_index + 1

    work = Path(tempfile.mkdtemp(prefix="kit-grade-"))
    stopped = None
    try:
        # the grade file sits beside, not inside, the student's folder
        (work / "cwd").mkdir()
        grade_file = work / "grades.jsonl"
        client = NotebookClient(
            notebook, timeout=timeout, allow_errors=True,
            kernel_name="python3", on_cell_execute=on_cell_execute)
        try:
            # own event loop: several kernels run in threads side by side
            # (the kernel's own stderr is its logging, not the student's)
            asyncio.run(client.async_execute(
                env=_kernel_env(grade_file), cwd=str(work / "cwd"),
                stderr=subprocess.DEVNULL))
        except (CellTimeoutError, DeadKernelError) as error:
            error.cell = running["cell"]
            stopped = error
        lines = (grade_file.read_text("utf-8", "replace").splitlines()
                 if grade_file.exists() else [])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _records(lines), stopped


def _records(lines):
    """The grade file's JSON objects; mangled lines skipped."""
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("id"), str):
            records.append(record)
    return records


def _exercise_rows(ids, records, error):
    attempts = {}
    for record in records:
        attempts.setdefault(record.get("id"), []).append(record)
    rows = []
    for exercise_id in ids + [i for i in attempts if i not in ids]:
        tries = attempts.get(exercise_id, [])
        last = tries[-1] if tries else {}
        known = EXERCISES.get(exercise_id)
        if tries:
            status, message = last.get("status"), last.get("message") or ""
        elif error:
            status, message = "not graded", error
        else:
            status = "not attempted"
            message = "its check(...) never ran: an error before it?"
        rows.append({
            "id": exercise_id, "stars": known.stars if known else None,
            "status": status, "mistake": last.get("mistake"),
            "message": message, "attempts": len(tries),
            # every named mistake made on the way, for the class summary
            "mistakes": list(dict.fromkeys(
                t["mistake"] for t in tries if t.get("mistake")))})
    return rows


def _not_a_notebook(error):
    if isinstance(error, UnicodeDecodeError):
        return "not a notebook: binary, not JSON text"
    if isinstance(error, OSError):
        return f"cannot read it: {error.strerror}"
    first = (str(error).strip().splitlines() or [""])[0][:100]
    return f"not a notebook: {type(error).__name__}: {first}"


def grade_one(label, path, timeout):
    """Grade one submission; never raises: trouble goes in "error"."""
    card = {"submission": label, "notebook": Path(path).stem, "error": None,
            "exercises": [], "passed": 0, "total": 0}
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception as error:
        card["error"] = _not_a_notebook(error)
        return card
    ids = exercises_in(notebook)
    # the course notebook it is a copy of, whatever the student named it
    course = {EXERCISES[i].notebook for i in ids if i in EXERCISES}
    if len(course) == 1:
        card["notebook"] = course.pop()
    records = []
    if not ids and not any(ANY_CHECK.search(c.source)
                           for c in notebook.cells if c.cell_type == "code"):
        card["error"] = "no exercises found: no check(...) calls"
        return card
    try:
        records, stopped = execute(notebook, timeout)
    except Exception as error:  # one broken submission must not stop a class
        stopped = error
    if isinstance(stopped, CellTimeoutError):
        card["error"] = (f"cell {stopped.cell} ran past the time limit "
                         f"({timeout} s per cell)")
    elif isinstance(stopped, DeadKernelError):
        card["error"] = (f"the kernel died in cell {stopped.cell} (a crash "
                         "or out of memory), no time limit was hit")
    elif stopped:
        card["error"] = (f"could not run it: {type(stopped).__name__}: "
                         f"{stopped}")
    card["exercises"] = _exercise_rows(ids, records, card["error"])
    if not card["exercises"] and not card["error"]:
        card["error"] = "no exercises found: no check(...) call ran"
    card["passed"] = sum(r["status"] == "passed" for r in card["exercises"])
    card["total"] = len(card["exercises"])
    return card


def grade_all(submissions, jobs, timeout, progress=True):
    """Grade (label, path) pairs, `jobs` at a time; cards in label order."""
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = [pool.submit(grade_one, label, path, timeout)
               for label, path in submissions]
    try:
        for future in tqdm(futures, desc="grading", unit="notebook",
                           file=sys.stderr, disable=not progress):
            future.result()
    finally:
        # on Ctrl-C: start no more kernels (the running ones finish)
        pool.shutdown(cancel_futures=True)
    return sorted((f.result() for f in futures),
                  key=lambda card: card["submission"])


# ------------------------------------------------------------ the command

def default_jobs():
    return max(1, min(os.cpu_count() or 1, 4))


def main(paths, as_json=False, timeout=600, jobs=None, csv_path=None,
         html_path=None):
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    try:
        submissions = find_submissions(paths)
    except CannotGrade as error:
        print(json.dumps({"error": str(error)}) if as_json else str(error))
        return 2
    single = len(paths) == 1 and not Path(paths[0]).is_dir()
    cards = grade_all(submissions, jobs or default_jobs(), timeout,
                      progress=not single)
    summary = gradebook.summarise(cards)
    if single:
        card = cards[0]
        print(json.dumps(card, indent=1, ensure_ascii=False) if as_json
              else gradebook.scorecard(card))
        code = 2 if card["error"] else int(card["passed"] < card["total"])
    else:
        graded = sum(card["error"] is None for card in cards)
        print(json.dumps({
            "error": None if graded else "no submission could be graded",
            "summary": summary, "submissions": cards},
            indent=1, ensure_ascii=False) if as_json
            else gradebook.class_summary(cards, summary))
        code = 2 if not graded else int(graded < len(cards))
    # the reports come after the summary: a bad path loses nothing shown
    for path, write in ((csv_path, gradebook.write_csv),
                        (html_path, gradebook.write_html)):
        try:
            if path:
                write(cards, summary, path)
        except OSError as error:
            print(f"could not write {path}: {error.strerror}",
                  file=sys.stderr)
            code = 2
    return code

"""What `kit grade` grades: the submissions a path names, each read and
refused by name where it is not a notebook, the exercises it checks, and
the course notebook it is a copy of. kit.grading.grade runs them.
"""

import os
import re
import stat
from pathlib import Path

import nbformat

from kit import i18n
from kit.checks import EXERCISES
from kit.grading.report_text import say

CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([\w.-]+)["']""")
ANY_CHECK = re.compile(r"\bcheck\(")
SKIPPED_FOLDERS = {"solutions", ".ipynb_checkpoints"}
# cells no check needs (kit.builder.notebooks)
SKIPPED_TAGS = {"train", "plot"}
# how a notebook says its language (kit.builder.japanese writes it so)
SETUP_LANG = re.compile(
    r"""\bsetup_notebook\([^)]*\blang\s*=\s*\\?["'](\w+)\\?["']""")
NOTEBOOK_SIZE_LIMIT = 64_000_000  # bytes: outputs and pictures included
LANG_READ_LIMIT = 2_000_000  # bytes read to find it; the call is near the top
# the course's own exercise list, notebook by notebook, in order
COURSE = {}
for _exercise in EXERCISES.values():
    COURSE.setdefault(_exercise.notebook, []).append(_exercise.id)


class CannotGrade(Exception):
    """Nothing to grade at all: the message is the one line we print."""


def find_submissions(paths):
    """Notebooks named by `paths`, each once, as (label, path) pairs.

    Labels are paths relative to the folder the submissions share, so
    alice/03.ipynb and bob/03.ipynb stay apart.
    """
    found = []
    for given in paths:
        if not str(given).strip():  # "$DIR" unset: not the current folder
            raise CannotGrade(say("empty_path"))
        given = Path(given)
        if given.is_dir():
            # links and FIFOs too: each is refused by name when graded,
            # and a student's folder that is a link (rglob does not enter
            # it) is refused as one row
            found += sorted(
                p for p in given.rglob("*") if (
                    p.is_symlink() and p.is_dir()
                    or p.suffix == ".ipynb" and not p.is_dir())
                and not SKIPPED_FOLDERS & set(p.relative_to(given).parts[:-1]))
        elif given.exists() or given.is_symlink():
            found.append(given)
        else:
            raise CannotGrade(say("no_such_path", path=given))
    # where each is, its folder resolved but not a link it may be
    unique = list({p.parent.resolve() / p.name: p for p in found}.values())
    if not unique:
        raise CannotGrade(say("no_notebooks",
                              paths=", ".join(map(str, paths))))
    if len(paths) == 1 and not Path(paths[0]).is_dir():
        return [(str(unique[0]), unique[0])]
    absolute = [p.parent.resolve() / p.name for p in unique]
    root = Path(os.path.commonpath([p.parent for p in absolute]))
    return [(str(a.relative_to(root)), p) for a, p in zip(absolute, unique)]


def notebook_language(path):
    """The language `path`'s setup_notebook(lang=...) asks for, else "en".

    Read as raw text (a JSON string escapes the quotes), so a file that is
    not a notebook costs nothing here: it is refused when it is graded.
    """
    try:
        if not_a_plain_file(path):  # a FIFO would never open
            return "en"
        with open(path, "rb") as file:
            raw = file.read(LANG_READ_LIMIT).decode("utf-8", "replace")
    except OSError:
        return "en"
    found = SETUP_LANG.search(raw)
    return found.group(1) if found and found.group(1) in i18n.LANGUAGES \
        else "en"


def run_language(submissions):
    """--lang's default: the language every submission shares, else en."""
    languages = {notebook_language(path) for _, path in submissions}
    return languages.pop() if len(languages) == 1 else "en"


def read_notebook(path):
    """The notebook, every cell with text for a source; else ValueError."""
    notebook = nbformat.read(path, as_version=4)
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise ValueError("it has no list of cells")
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or not isinstance(
                cell.get("source"), str) or not isinstance(
                cell.get("cell_type"), str):
            raise ValueError(f"cell {number} has no source text")
    return notebook


def exercises_in(notebook):
    """Exercise ids in the order the notebook's code cells check them."""
    ids = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            ids += [i for i in CHECK_CALL.findall(cell.source) if i not in ids]
    return ids


def course_notebook(path, ids):
    """The course notebook this is a copy of, whatever the student named
    it (or deleted): the one its checks belong to, else its file name."""
    checked = {EXERCISES[i].notebook for i in ids if i in EXERCISES}
    if len(checked) == 1:
        return checked.pop()
    if not checked and Path(path).stem in COURSE:
        return Path(path).stem
    return None


def _tags(cell):
    tags = cell.get("metadata", {}).get("tags", [])
    return {t for t in tags if isinstance(t, str)} if isinstance(
        tags, list) else set()


def skip_cells(notebook):
    """Empty the cells no check needs, so nbclient skips them: those tagged
    `train` or `plot`, and every cell after the last one that calls
    check(...) (notebook 03's `dpo_beside_trl(MyDPOTrainer)`): they only
    run the student's code again, and an endless loop in it would be
    waited out a second time, to the cell limit."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    last = max((n for n, cell in enumerate(code)
                if ANY_CHECK.search(cell.source)), default=len(code))
    for number, cell in enumerate(code):
        if SKIPPED_TAGS & _tags(cell) or number > last:
            cell.source = ""


def first_line(cell, width=50):
    line = next((l.strip() for l in cell.source.splitlines() if l.strip()),
                "")
    return line if len(line) <= width else line[:width - 1] + "…"


def code_cell(notebook, number):
    """Cell `number` (from 1, markdown cells counted, as nbclient counts)
    as JupyterLab's reader finds it: 'code cell 5 (`def f(x):`)', code
    cells alone counted (the page shows no numbers; markdown cells are
    not code to look for)."""
    cells = notebook.cells
    if not 0 < number <= len(cells):
        return say("cell", n=number)
    nth = sum(cell.cell_type == "code" for cell in cells[:number])
    return say("code_cell", n=nth, first=first_line(cells[number - 1]))


def not_a_plain_file(path):
    """Why `path` is not read at all, or None: a submission is a plain
    file of a notebook's size, not a link to a private file (symbolic or
    hard: the grader may read what the student may not), a FIFO (a read
    that never ends) or a device (/dev/zero: one that never stops)."""
    found = os.lstat(path)
    if stat.S_ISLNK(found.st_mode):
        return say("a_link")
    if not stat.S_ISREG(found.st_mode):
        return say("not_a_file")
    if found.st_nlink > 1:  # a name of a file that may be anyone's
        return say("hard_link", links=found.st_nlink)
    if found.st_size > NOTEBOOK_SIZE_LIMIT:
        return say("too_big", size=found.st_size // 1_000_000,
                   limit=NOTEBOOK_SIZE_LIMIT // 1_000_000)
    return None

"""A class of tomorrow, made from the course's own notebook 03: what an
instructor finds in a real class folder, for `kit grade` to be tried on
(issue 63; tests/test_grade_class.py grades a small one).

    .venv/bin/python tools/grade_class.py class/ [--size 31]
    time .venv/bin/python -m kit grade class/ --jobs 2 --csv class.csv \\
        --html class.html

Copies of notebooks/03 and notebooks/solutions/03, a folder per student,
one of each kind, then the kinds in turn but the loop: solved, untouched,
wrong (a mean for a sum), a syntax error, one endless `while` loop in
`sequence_logps` (called again by the later cells), a right answer whose
last `check(...)` line was deleted, half done; and one student, zoe, whose
two files sit in the class folder itself under two names
(`zoe_01_stock_compute_loss.ipynb`, a solved 01, and `zoe-03.ipynb`).
`--size 31` is the issue's class: 30 copies of 03 and zoe's 01.

Measured (2026-12-08, 2 cores, other tests running beside it): the 31
files graded with `--jobs 2` in 66 s.
"""

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NB03 = "03_dpo_compute_loss.ipynb"
NB01 = "01_stock_compute_loss.ipynb"
LOOP = "    while True:  # the student's endless loop\n        pass\n"


def _cells(notebook, pattern):
    return [cell for cell in notebook.cells if cell.cell_type == "code"
            and re.search(pattern, cell.source)]


def solved(learner, solution):
    return solution


def untouched(learner, solution):
    return learner


def half_done(learner, solution):
    """The first two exercises solved, the rest still stubs."""
    for exercise in ("sequence_logps", "dpo_loss"):
        mine = _cells(learner, rf"check\(\"{exercise}\"")
        theirs = _cells(solution, rf"check\(\"{exercise}\"")
        mine[0].source = theirs[0].source
    return learner


def wrong(learner, solution):
    cell, = _cells(solution, r"def sequence_logps")
    cell.source = cell.source.replace(".sum(-1)  # (B,)", ".mean(-1)  # (B,)")
    return solution


def syntax_error(learner, solution):
    cell, = _cells(solution, r"def dpo_loss")
    cell.source = cell.source.replace("def dpo_loss(", "def dpo_loss((", 1)
    return solution


def endless_loop(learner, solution):
    cell, = _cells(solution, r"def sequence_logps")
    head, docstring, rest = cell.source.partition('(B,)."""\n')
    cell.source = head + docstring + LOOP + rest
    return solution


def check_deleted(learner, solution):
    cell, = _cells(solution, r"check\(\"dpo_compute_loss\"")
    cell.source = "\n".join(line for line in cell.source.splitlines()
                            if not line.startswith("check("))
    return solution


# in this order: a class of 8 (zoe's two files and six) has one of each
# but half_done
KINDS = [solved, untouched, wrong, syntax_error, endless_loop, check_deleted,
         half_done]


def _read(path):
    return nbformat.read(path, as_version=4)


def _shorter_checks(notebook, seconds):
    """check(id, f) -> check(id, f, timeout=seconds): a loop costs less."""
    for cell in _cells(notebook, r"^check\("):
        cell.source = re.sub(r"^(check\(.*)\)$", rf"\1, timeout={seconds})",
                             cell.source, flags=re.M)
    return notebook


def make(folder, size=31, check_timeout=None):
    """Write a class of `size` files into `folder`; {file: kind}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    made = {}

    def write(notebook, path, kind):
        if check_timeout:
            _shorter_checks(notebook, check_timeout)
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
        made[str(path.relative_to(folder))] = kind

    write(_read(ROOT / "notebooks" / "solutions" / NB01),
          folder / f"zoe_{NB01}", "solved")
    write(_read(ROOT / "notebooks" / "solutions" / NB03),
          folder / "zoe-03.ipynb", "solved")
    # one endless loop in the class, as in the issue; the rest in turn
    others = [kind for kind in KINDS if kind is not endless_loop]
    for number in range(size - 2):
        kind = KINDS[number] if number < len(KINDS) else others[
            number % len(others)]
        notebook = kind(_read(ROOT / "notebooks" / NB03),
                        _read(ROOT / "notebooks" / "solutions" / NB03))
        write(notebook, folder / f"s{number + 1:02d}_{kind.__name__}" / NB03,
              kind.__name__)
    return made


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--size", type=int, default=31)
    parser.add_argument("--check-timeout", type=int, default=None,
                        help="seconds each check(...) allows (default: "
                             "the notebook's own, 20)")
    args = parser.parse_args(argv)
    made = make(args.folder, args.size, args.check_timeout)
    print(f"{len(made)} notebooks in {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

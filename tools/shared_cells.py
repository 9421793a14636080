"""A pytest plugin: the learner suite skips the cells the solution suite
already runs as they are.

A learner copy differs from its solution copy only in its exercise cells.
A training or explorer cell (tagged `train` or `plot`) that is the same in
both, reads nothing an exercise cell made (directly or through the cells
that used it), and makes nothing a later cell reads, does the same work in
both copies: notebook 07's grpo-vs-dapo training (18 s) is one. With
`--skip-shared-cells` the learner suite skips such cells, and says so;
tools/run_tests.py asks for it only when the solution suite runs too, and
the solution suite runs every cell (in the other language, whose code
cells are the same: `kit build --check`), or leaves the copy to the
browser test, which runs it whole.

What names cannot see (a file a skipped cell writes, the random state it
leaves) is not followed: a later cell then runs as it would on a machine
where the skipped cell was never run, which a learner may also do.
"""

import ast
import re
from pathlib import Path

import nbformat
import pytest

# kit.grading.submissions.SKIPPED_TAGS: cells that train or draw only
SHARED_TAGS = {"train", "plot"}
# The build's one difference outside the exercises: the solved copy's setup
# call says so (kit.course.show then hides nothing). It binds no name.
SOLVED = re.compile(r"(setup_notebook\(.*?), solved=True")


def pytest_addoption(parser):
    parser.addoption("--skip-shared-cells", action="store_true",
                     help="skip learner-copy cells the solution copy runs "
                          "as they are (tools/shared_cells.py)")


def pytest_collection_modifyitems(config, items):
    if not config.getoption("skip_shared_cells"):
        return
    shared = {}  # notebook path -> the code cells to skip
    for item in items:
        path = Path(str(item.fspath))
        solution = path.parent / "solutions" / path.name
        if path.suffix != ".ipynb" or not solution.is_file():
            continue  # not a learner copy
        if path not in shared:
            shared[path] = shared_cells(nbformat.read(path, as_version=4),
                                        nbformat.read(solution, as_version=4))
        if item.cell_num in shared[path]:
            item.add_marker(pytest.mark.skip(
                reason="the same as the solution copy's cell, which the "
                       "solution suite runs"))


def shared_cells(learner, solution):
    """Indices (among code cells) of the learner's cells to skip."""
    ours, theirs = ([c for c in notebook.cells if c.cell_type == "code"]
                    for notebook in (learner, solution))
    if len(ours) != len(theirs):
        return set()  # not copies of one source: skip nothing
    try:
        names = [_bound_and_free(cell.source) for cell in ours]
    except SyntaxError:  # a cell that is not Python: skip nothing
        return set()
    tainted, candidates = set(), set()  # names an exercise cell made
    for index, (cell, (bound, free)) in enumerate(zip(ours, names)):
        same = cell.source == SOLVED.sub(r"\1", theirs[index].source)
        if not same or free & tainted:
            tainted |= bound
        elif (SHARED_TAGS & _tags(cell)
              and "raises-exception" not in _tags(cell)):
            candidates.add(index)
    # backwards: a cell is skipped only if no cell run after it reads
    # what it made
    skipped, read_later = set(), set()
    for index in reversed(range(len(ours))):
        bound, free = names[index]
        if index in candidates and not bound & read_later:
            skipped.add(index)
        else:
            read_later |= free
    return skipped


def _tags(cell):
    tags = cell.get("metadata", {}).get("tags", [])
    return set(tags) if isinstance(tags, list) else set()


def _bound_and_free(source):
    """The names a cell binds, and those it reads before binding them
    (statement by statement: enough for the course's cells)."""
    from IPython.core.inputtransformer2 import TransformerManager
    # `!pip install` and `%magic` lines become calls, as IPython runs them
    statements = ast.parse(TransformerManager().transform_cell(source)).body
    bound, free = set(), set()
    for statement in statements:
        stored, loaded = set(), set()
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                (stored if isinstance(node.ctx, (ast.Store, ast.Del))
                 else loaded).add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                   ast.ClassDef)):
                stored.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                stored |= {(a.asname or a.name).split(".")[0]
                           for a in node.names}
        # a loop or a function reads names it binds itself; a plain
        # assignment (x = x + 1) reads the old one
        own = stored if not isinstance(statement, (ast.Assign,
                                                   ast.AugAssign)) else set()
        free |= loaded - bound - own
        bound |= stored
    return bound, free

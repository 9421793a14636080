"""One source, two notebooks: the learner's copy and the solved one.

Each notebook has a single source, `notebooks/src/NN_name.py`, in jupytext's
percent format. Solutions sit between markers, as in nbgrader:

    ### BEGIN SOLUTION
    loss = ...
    ### END SOLUTION
    ### BEGIN STUB          (optional: what the learner starts from)
    loss = None
    ### END STUB

The solved copy drops the markers and the stubs; the learner's copy swaps
each solution for its stub, or for `raise NotImplementedError`. A cell tagged
`uses-exercise` runs code the learner writes, so in the learner's copy it is
tagged `raises-exception`: nbval and `grade` then expect it may fail.
A cell tagged `train` (it trains, or reads what training made) or `plot`
(it only draws) keeps its tag in both copies: no check needs it, so
`kit grade` skips it unless `--all-cells`.
"""

import hashlib
import json
from pathlib import Path

from kit.builder import paths

# What JupyterLab writes when ipykernel's kernel starts: the same text here,
# so opening a notebook does not change (and mark modified) its kernelspec.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python",
              "name": "python3"}

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_STUB, END_STUB = "### BEGIN STUB", "### END STUB"
STUB = 'raise NotImplementedError("exercise: write your code here")'

# Colab has torch, ipywidgets 7.7 and matplotlib already: pip keeps them
# (the kit asks for no newer ones), so installing takes seconds, and the
# JupyterLab that `make lab` adds is left out (it is the `lab` extra).
COLAB_INSTALL = f"""\
# On Colab, install the kit first; anywhere else this cell does nothing.
import subprocess, sys
if "google.colab" in sys.modules:
    kit = "git+https://github.com/{paths.REPOSITORY}"
    pip = [sys.executable, "-m", "pip", "install", "-q", kit]
    if subprocess.run(pip).returncode != 0:
        print("❌ Could not install the kit (pip's message is above): "
              "check the connection, then run this cell again.")"""


def colab_badge(name, solutions=False, lang="en"):
    """The 'Open in Colab' badge of notebook `name`, in its own set."""
    folder = "notebooks" if lang == "en" else f"notebooks/{lang}"
    folder += "/solutions" if solutions else ""
    url = (f"https://colab.research.google.com/github/{paths.REPOSITORY}"
           f"/blob/main/{folder}/{name}.ipynb")
    return (f"[![Open In Colab](https://colab.research.google.com/assets/"
            f"colab-badge.svg)]({url})")


# ------------------------------------------------- solution regions

def _regions(lines):
    """Yield (kind, lines) runs: kind is "code", "solution" or "stub"."""
    kind, run = "code", []
    for line in lines:
        marker = line.strip()
        if marker in (BEGIN, BEGIN_STUB):
            if kind != "code":
                raise ValueError(f"{marker!r} inside an open region")
            yield kind, run
            kind, run = ("solution" if marker == BEGIN else "stub"), [line]
        elif marker in (END, END_STUB):
            if (kind, marker) not in (("solution", END), ("stub", END_STUB)):
                raise ValueError(f"{marker!r} without its BEGIN")
            yield kind, run + [line]
            kind, run = "code", []
        else:
            run.append(line)
    if kind != "code":
        raise ValueError(f"a {kind} region is never closed")
    yield kind, run


def solved(source):
    """The solved cell: solutions kept without markers, stubs dropped."""
    out = []
    for kind, run in _regions(source.splitlines()):
        if kind == "solution":
            out += run[1:-1]
        elif kind == "code":
            out += run
    return "\n".join(out)


def _followed_by_stub(regions):
    for kind, run in regions:
        if kind == "code" and not any(line.strip() for line in run):
            continue  # blank lines between END SOLUTION and BEGIN STUB
        return kind == "stub"
    return False


def learner(source):
    """The learner's cell, and whether running it raises at top level."""
    out, raises = [], False
    regions = list(_regions(source.splitlines()))
    for i, (kind, run) in enumerate(regions):
        if kind == "code":
            out += run
        elif kind == "stub":
            out += run[1:-1]
        else:
            indent = run[0][:len(run[0]) - len(run[0].lstrip())]
            if not _followed_by_stub(regions[i + 1:]):
                out.append(indent + STUB)
                raises = raises or indent == ""
    return "\n".join(out), raises


# ------------------------------------------------------------ building

def _notebook(cells, name, solutions=False, lang="en"):
    import nbformat
    nb = nbformat.v4.new_notebook()
    from kit.builder import japanese
    install = (COLAB_INSTALL if lang == "en"
               else japanese.ja_code(COLAB_INSTALL))
    header = [nbformat.v4.new_markdown_cell(colab_badge(name, solutions,
                                                        lang)),
              nbformat.v4.new_code_cell(install)]
    nb.cells = header + cells
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{name[:2]}-{i:02d}"  # stable ids: stable diffs
    nb.metadata = {"kernelspec": dict(KERNELSPEC),
                   "language_info": {"name": "python"},
                   # what build wrote, so that it never overwrites more
                   "kit": {"built": fingerprint(nb.cells)}}
    return nb


def fingerprint(cells):
    """The text a learner can change in a notebook's cells (not outputs,
    which running it changes), as a short hash."""
    text = json.dumps([[cell.get("cell_type"), "".join(cell.get("source", ""))]
                       for cell in cells])
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def edited(text):
    """True when a notebook's cells are no longer what build wrote: the
    learner's answers, or a file build never wrote."""
    try:
        notebook = json.loads(text)
        return notebook["metadata"]["kit"]["built"] != fingerprint(
            notebook["cells"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return True


def _cell(cell, source, tags):
    import nbformat
    if cell.cell_type == "markdown":
        new = nbformat.v4.new_markdown_cell(source)
    else:
        new = nbformat.v4.new_code_cell(source)
    if tags:
        new.metadata["tags"] = sorted(tags)
    return new


def _copies(cells, name, lang="en"):
    """-> (learner notebook, solved notebook) from a source's cells.

    Each copy's setup_notebook(...) says first which copy it is
    (kit.course.show hides the answers in the learner's); first, so that a
    Japanese cell is still its English one with `lang="ja"` added last."""
    learner_says = f"notebook={int(name[:2])}"
    solved_says = learner_says + ", solved=True"
    solved_cells, learner_cells = [], []
    for number, cell in enumerate(cells, 1):
        try:
            solved_cell, learner_cell = _copy_cell(cell, solved_says,
                                                   learner_says)
        except ValueError as error:  # a marker left open: say where
            raise ValueError(f"notebooks/src/{name}.py, cell {number}: "
                             f"{error}") from None
        solved_cells.append(solved_cell)
        learner_cells.append(learner_cell)
    return (_notebook(learner_cells, name, lang=lang),
            _notebook(solved_cells, name, solutions=True, lang=lang))


def _copy_cell(cell, solved_says, learner_says):
    """-> (the solved copy's cell, the learner's) of one source cell."""
    from kit.builder.japanese import with_setup_args
    tags = set(cell.metadata.get("tags", []))
    uses_exercise = "uses-exercise" in tags
    tags.discard("uses-exercise")
    if cell.cell_type != "code":
        return _cell(cell, cell.source, tags), _cell(cell, cell.source, tags)
    solved_cell = _cell(cell, with_setup_args(
        solved(cell.source), solved_says, first=True), tags)
    text, raises = learner(cell.source)
    if raises or uses_exercise:
        tags = tags | {"raises-exception"}
    return solved_cell, _cell(
        cell, with_setup_args(text, learner_says, first=True), tags)


def build_one(path, ja_cells=None):
    """-> {output path: notebook text} for one source file (and its
    Japanese copies, given the Japanese cells)."""
    import jupytext  # the build needs it, learners' notebooks do not
    import nbformat
    name = Path(path).stem
    learner_nb, solved_nb = _copies(jupytext.read(path).cells, name)
    out = {paths.NOTEBOOKS / f"{name}.ipynb": nbformat.writes(learner_nb),
           paths.SOLUTIONS / f"{name}.ipynb": nbformat.writes(solved_nb)}
    if ja_cells is not None:
        learner_nb, solved_nb = _copies(ja_cells, name, lang="ja")
        from kit.builder.japanese import JA, JA_SOLUTIONS
        out[JA / f"{name}.ipynb"] = nbformat.writes(learner_nb)
        out[JA_SOLUTIONS / f"{name}.ipynb"] = nbformat.writes(solved_nb)
    return out


def build_all():
    out = {}
    from kit.builder import japanese
    for path, (ja_cells, _) in japanese.ja_sources().items():
        out.update(build_one(path, ja_cells))
    return out


def text_problems():
    """What each source's text gets wrong (kit.builder.prose), one line
    each: prose in a code cell, a panel the figure does not have."""
    import jupytext
    from kit.builder.japanese import ja_sources, translation_path
    from kit.builder.prose import problems
    found = [f"{path.name}: {problem}"
             for path in sorted(paths.SOURCES.glob("[0-9][0-9]_*.py"))
             for problem in problems(jupytext.read(path).cells)]
    # the Japanese text gets the same checks (headings in code cells...)
    return found + [f"{translation_path(path).name}: {problem}"
                    for path, (cells, _) in ja_sources().items()
                    if cells is not None for problem in problems(cells)]


def damage(path):
    """Why the file at a notebook's path cannot be a notebook, or "".

    A folder of that name, a binary file, JSON cut off mid-save: read as
    a notebook, each stopped the build with a library's error that named
    no file (IsADirectoryError, "'utf-8' codec can't decode", NotJSONError).
    """
    path = Path(path)
    if path.is_dir():
        return "a folder, not a notebook"
    try:
        notebook = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError:
        return "not a notebook: binary, not text"
    except ValueError as error:
        return (f"not a whole notebook: its JSON breaks off at line "
                f"{error.lineno}, column {error.colno} (saved half-way?)")
    if not isinstance(notebook, dict) or not isinstance(
            notebook.get("cells"), list):
        return "not a notebook: JSON without a list of cells"
    return ""


def orphans():
    """Notebooks build wrote whose source is gone from notebooks/src: no
    build will ever bring them up to date again."""
    sources = {path.stem for path in paths.SOURCES.glob("[0-9][0-9]_*.py")}
    sets = (paths.NOTEBOOKS, paths.SOLUTIONS, paths.NOTEBOOKS / "ja",
            paths.NOTEBOOKS / "ja" / "solutions")
    return [path for folder in sets
            for path in sorted(folder.glob("[0-9][0-9]_*.ipynb"))
            if path.stem not in sources and _built_by_kit(path)]


def _built_by_kit(path):
    """A notebook that records build's fingerprint (its own copies; not a
    learner's "05_mine" without it, nor a file that is not JSON)."""
    try:
        notebook = json.loads(path.read_text())
        return "built" in notebook["metadata"]["kit"]
    except (OSError, ValueError, KeyError, TypeError):
        return False


def build(check=False, force=False):
    """Write both notebook sets (with check=True, nothing) -> (stale, kept):
    the notebooks that differ from their sources, and of those, the ones
    left as they are because they hold what build did not write (a
    learner's answers, or a damaged file: `damage`), unless `force`. A
    folder in a notebook's place is kept, `force` or not."""
    stale, kept = [], []
    for path, text in build_all().items():
        if path.is_dir():
            stale.append(path)
            kept.append(path)
            continue
        current = (path.read_bytes().decode("utf-8", "replace")
                   if path.exists() else None)
        if current == text + "\n":
            continue
        stale.append(path)
        if current is not None and not force and edited(current):
            kept.append(path)
        elif not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n")
    return stale, kept


def expectations(name):
    """The claims the solved notebook `name` checks with `expect`, in order,
    each as (claim, index of its code cell): a test can see they are there,
    after the training they are about."""
    import ast
    import json
    solved_copy = paths.SOLUTIONS / f"{name}.ipynb"
    cells = json.loads(solved_copy.read_text())["cells"]
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if (isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) == "expect"
                    and isinstance(node.args[0], ast.Constant)):
                found.append((node.args[0].value, index))
    return found

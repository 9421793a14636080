"""show() in a learner's copy prints no answer before the learner writes it:
not the kit's code that answers an exercise of this or a later notebook,
and not a line of a solution region of the notebook sources.

Each committed copy's show(...) calls are replayed as the notebook makes
them (its imports, then `source_shown` of each shown object, under the
copy's own setup_notebook(...) arguments), without a kernel: the same text
show() displays. `build --check` (test_course.py) holds the committed
copies to their sources.
"""

import ast
import importlib
import inspect
import json
import textwrap
from collections import Counter

import pytest
from transformers import Trainer

from kit import course
from kit.builder import notebooks, paths
from kit.checks import EXERCISES
from kit.runtime import ROOT

LEARNER_COPIES = (sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
                  + sorted((paths.NOTEBOOKS / "ja").glob("[0-9][0-9]_*.ipynb")))


def copy_id(path):
    return path.relative_to(paths.NOTEBOOKS).with_suffix("").as_posix()


def code_cells(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def calls(path, name):
    for source in code_cells(path):
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) == name):
                yield node


def shown_objects(path):
    """[(expression, object)] of each show(...) call of a notebook."""
    namespace = {}
    for source in code_cells(path):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                try:
                    exec(compile(ast.Module([node], []), "<cell>", "exec"),
                         namespace)
                except ImportError:  # trl, where it is not installed
                    pass
    shown = []
    for node in calls(path, "show"):
        expression = ast.unparse(node.args[0])
        try:
            shown.append((expression, eval(expression, namespace)))
        except NameError:  # a name from an import that failed (trl)
            pass
    return shown


def setup_arguments(path):
    """The keywords of the notebook's setup_notebook(...) call."""
    for node in calls(path, "setup_notebook"):
        return {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    raise AssertionError(f"{path.name} never calls setup_notebook")


def kit_answer(name):
    module, _, qualified = name.partition(":")
    answer = importlib.import_module(module)
    for part in qualified.split("."):
        answer = getattr(answer, part)
    return answer


def body(function):
    """The lines of a function after its def and docstring."""
    lines, _ = inspect.getsourcelines(function)
    tree = ast.parse(textwrap.dedent("".join(lines))).body[0]
    start = tree.body[0]
    if isinstance(start, ast.Expr) and isinstance(start.value, ast.Constant):
        return lines[start.end_lineno:]
    return lines[start.lineno - 1:]


def public_lines():
    """Lines anyone may see: the stock Trainer's (an answer's `super()`
    call is no secret), and a line the kit writes more often than its
    answers do (it is in the open elsewhere too)."""
    written, in_answers = Counter(), Counter()
    for path in (ROOT / "kit").rglob("*.py"):
        if "checks" in path.parts:  # the checkers' copies are answers too
            continue
        written.update(line.strip() for line in
                       path.read_text(encoding="utf-8").splitlines())
    for exercise in EXERCISES.values():
        for name in exercise.kit_code:
            in_answers.update(line.strip()
                              for line in body(kit_answer(name)))
    stock = {line.strip() for line in inspect.getsource(Trainer).splitlines()}
    return stock | {line for line in written
                    if written[line] > in_answers[line]}


def answer_lines(number):
    """The telling lines of every answer from notebook `number` on: the
    kit's code for it and the sources' solution regions."""
    lines = set()
    for exercise in EXERCISES.values():
        if int(exercise.notebook[:2]) >= number:
            lines |= {line.strip() for name in exercise.kit_code
                      for line in body(kit_answer(name))}
    for source in sorted(paths.SOURCES.glob("[0-9][0-9]_*.py")):
        if int(source.name[:2]) < number:
            continue
        text = source.read_text(encoding="utf-8")
        for kind, run in notebooks._regions(text.splitlines()):
            if kind == "solution":
                lines |= {line.strip() for line in run[1:-1]}
    # lines that say something (not `)` or `return loss`) that only an
    # answer writes
    return {line for line in lines - PUBLIC
            if len(line) >= 30 and not line.startswith("#")}


def leaks(path, solved=None):
    """The answer lines show() would print in this copy of notebook `path`
    (or, with `solved`, as if it were the other copy)."""
    arguments = setup_arguments(path)
    saved = dict(course.COPY)
    course.COPY.update(notebook=arguments.get("notebook"),
                       solved=arguments.get("solved", False)
                       if solved is None else solved)
    try:
        secret = answer_lines(int(path.name[:2]))
        return sorted({(expression, line)
                       for expression, obj in shown_objects(path)
                       for line in course.source_shown(obj).splitlines()
                       if line.strip() in secret})
    finally:
        course.COPY.update(saved)


PUBLIC = public_lines()


@pytest.fixture(autouse=True)
def nothing_passed():
    """show() reveals an answer once it passed in this process: start and
    end with none passed."""
    for exercise in EXERCISES.values():
        exercise.passed = False
    yield
    for exercise in EXERCISES.values():
        exercise.passed = False


@pytest.mark.parametrize("path", LEARNER_COPIES, ids=copy_id)
def test_a_learner_copy_shows_no_answer(path):
    assert setup_arguments(path).get("notebook") == int(path.name[:2])
    assert "solved" not in setup_arguments(path)
    assert leaks(path) == []


@pytest.mark.parametrize("path", LEARNER_COPIES, ids=copy_id)
def test_the_solved_copy_says_so_and_shows_the_code_whole(path):
    solved = path.parent / "solutions" / path.name
    assert setup_arguments(solved) == {**setup_arguments(path),
                                       "solved": True}
    course.COPY.update(notebook=int(path.name[:2]), solved=True)
    try:
        for _, obj in shown_objects(solved):
            assert course.source_shown(obj) == inspect.getsource(obj)
    finally:
        course.COPY.update(notebook=None, solved=False)


def test_the_test_sees_what_the_learner_copies_showed():
    """What the issue found, shown as before (every copy as if solved):
    03 printed its ★★★, 01 and 04 both their answers, 05 notebook 07's
    ★★★."""
    def shown(name):
        path = paths.NOTEBOOKS / f"{name}.ipynb"
        return {expression for expression, _ in leaks(path, solved=True)}
    assert shown("01_stock_compute_loss") == {"CausalLMTrainer",
                                              "losses.causal_lm_loss"}
    assert shown("03_dpo_compute_loss") == {"DPOTrainer"}
    assert shown("04_grpo_dataloader") == {
        "GRPOTrainer.get_train_dataloader", "GRPOTrainer._prepare_inputs"}
    assert shown("05_grpo_end_to_end") == {"GRPOTrainer"}


def test_a_placeholder_keeps_the_signature_and_names_the_exercise():
    from kit import losses
    course.COPY.update(notebook=1, solved=False)
    try:
        shown = course.source_shown(losses.causal_lm_loss)
    finally:
        course.COPY.update(notebook=None, solved=False)
    assert shown.startswith("def causal_lm_loss(logits, labels")
    assert '"""' in shown  # the docstring says what, not how
    assert shown.rstrip().endswith(
        "...  # ★ notebook 01 asks you to write this (exercise 1, "
        "causal_lm_loss): it shows once yours passes")
    assert "logits[:, :-1, :]" not in shown
    compile(textwrap.dedent(shown), "<shown>", "exec")  # still Python


def test_an_answer_shows_once_it_passes_here_and_not_before():
    from kit import losses
    from kit.checks import check
    course.COPY.update(notebook=1, solved=False)
    try:
        assert "logits[:, :-1, :]" not in course.source_shown(
            losses.causal_lm_loss)
        assert not check("causal_lm_loss", lambda logits, labels: 0 * logits)
        assert "logits[:, :-1, :]" not in course.source_shown(
            losses.causal_lm_loss)
        assert check("causal_lm_loss", losses.causal_lm_loss)
        assert course.source_shown(losses.causal_lm_loss) == (
            inspect.getsource(losses.causal_lm_loss))
    finally:
        course.COPY.update(notebook=None, solved=False)


def test_an_earlier_notebooks_answer_is_no_secret_a_later_ones_is():
    from kit.trainers import GRPOTrainer
    course.COPY.update(notebook=5, solved=False)
    try:  # notebook 04's answers show in 05; notebook 07's does not
        shown = course.source_shown(GRPOTrainer)
    finally:
        course.COPY.update(notebook=None, solved=False)
    assert inspect.getsource(GRPOTrainer.get_train_dataloader) in shown
    assert inspect.getsource(GRPOTrainer.get_batch_samples) not in shown
    assert "notebook 07 asks you to write this" in shown

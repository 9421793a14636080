"""What each notebook calls: `setup_notebook` at its top, `show` to print
the kit's own code, `expect` for a claim about its own run.

Building the notebooks from their sources is `kit.builder`; this module is
what a learner's kernel imports, so it stays small and quick to import.

Which copy a kernel runs is said by the build, in the setup cell it writes:
`setup_notebook(notebook=3)` in the learner's copy of notebook 03,
`setup_notebook(notebook=3, solved=True)` in the solved one. `show` reads it.
"""

import ast
import importlib
import inspect
import os
import textwrap

from kit.labels import say
from kit.runtime import COPY  # the copy this kernel runs


def show(obj):
    """Display the kit's own source of `obj`: one copy, never pasted.

    In a learner's copy, the kit's answer to an exercise of this notebook
    or a later one is a marked placeholder until the learner's own answer
    passes its check in this kernel; the solved copy shows it whole.
    """
    from IPython.display import Code, display
    display(Code(source_shown(obj), language="python"))


def source_shown(obj):
    """The source of `obj` as show() displays it (answers hidden)."""
    lines, first = inspect.getsourcelines(obj)
    path = inspect.getsourcefile(obj)
    hidden = []
    for exercise, answer in _answers_to_hide():
        answer = inspect.unwrap(answer)  # a @contextmanager's own function
        if inspect.getsourcefile(answer) != path:
            continue
        answer_lines, start = inspect.getsourcelines(answer)
        start -= first  # where its def sits in `lines`
        if 0 <= start and start + len(answer_lines) <= len(lines):
            hidden.append((start, answer_lines, exercise))
    # bottom up, so that each swap leaves the line numbers above it true
    for start, answer_lines, exercise in sorted(hidden, key=lambda h: h[0],
                                                reverse=True):
        lines[start:start + len(answer_lines)] = _placeholder(answer_lines,
                                                              exercise)
    return "".join(lines)


def _answers_to_hide():
    """(exercise, the kit's code that answers it) for each answer this copy
    must not show yet: this notebook's and later ones', not yet passed."""
    if COPY["solved"]:
        return []
    from kit.checks import EXERCISES
    here = COPY["notebook"] or 0  # not said: hide every answer
    hidden = []
    for exercise in EXERCISES.values():
        if int(exercise.notebook[:2]) < here or exercise.passed:
            continue
        for name in exercise.kit_code:
            module, _, qualified = name.partition(":")
            answer = importlib.import_module(module)
            for part in qualified.split("."):
                answer = getattr(answer, part)
            hidden.append((exercise, answer))
    return hidden


def _placeholder(answer_lines, exercise):
    """The answer's signature and docstring (they say what, not how), then
    one marked line in place of its body."""
    function = ast.parse(textwrap.dedent("".join(answer_lines))).body[0]
    body = function.body
    has_docstring = (isinstance(body[0], ast.Expr)
                     and isinstance(body[0].value, ast.Constant)
                     and isinstance(body[0].value.value, str))
    keep = function.lineno  # the def line, then on to the signature's colon
    while not answer_lines[keep - 1].split("#")[0].rstrip().endswith(":"):
        keep += 1
    if has_docstring:
        keep = body[0].end_lineno
    code = body[1] if has_docstring and len(body) > 1 else body[0]
    line = answer_lines[code.lineno - 1]
    indent = line[:len(line) - len(line.lstrip())]
    note = say("hidden_answer", stars="★" * exercise.stars,
               notebook=exercise.notebook[:2], number=exercise.number,
               id=exercise.id)
    return answer_lines[:keep] + [f"{indent}...  # {note}\n"]


def _not_done_yet(shell, etype, value, tb, tb_offset=None):
    """Learners see one line, not a traceback, for an unfinished exercise:
    the kit's own, when it says which (kit.checks.ready.needs), else the
    general one and where to start."""
    from kit.checks.ready import start_here
    print(getattr(value, "says", None) or say("not_done_yet") + start_here())


def _unfinished_is_not_an_error(result):
    """A cell stopped by an unfinished exercise replies "ok": it has said
    "Not done yet", and Run All goes on with its prompts. Replied as an
    error, JupyterLab unmarks the queued cells while the kernel (ipykernel
    7) runs them all the same: trainings with no [*] beside them."""
    if isinstance(result.error_in_exec, NotImplementedError):
        result.error_in_exec = None


def stubs_stop_politely(shell):
    """One line for an unfinished exercise, and a cell that ends well."""
    shell.set_custom_exc((NotImplementedError,), _not_done_yet)
    callbacks = shell.events.callbacks["post_run_cell"]
    if _unfinished_is_not_an_error not in callbacks:
        shell.events.register("post_run_cell", _unfinished_is_not_an_error)


def japanese_figures():
    """Let matplotlib draw Japanese text (kit.labels.use_japanese_font):
    True when the `ja` extra's font is installed."""
    from kit.labels import use_japanese_font
    return use_japanese_font()


def setup_notebook(seed=0, lang="en", notebook=None, solved=False):
    """Quiet logs, the Trainer's own progress bar, friendly stubs, a seed,
    and the language the kit speaks (`lang`: "en" or "ja").

    `notebook` (its number) and `solved` say which copy this is: the build
    writes them, and show() hides the answers a learner has yet to write.
    """
    import logging
    import warnings

    from kit import i18n
    COPY.update(notebook=notebook, solved=bool(solved))
    if os.environ.get("KIT_GRADE_FILE") and os.environ.get("KIT_LANG"):
        # under `kit grade`, the run's language wins: one report speaks one
        lang = os.environ["KIT_LANG"]
    if lang not in i18n.LANGUAGES:
        raise ValueError(f"setup_notebook(lang={lang!r}): lang must be one "
                         f"of {', '.join(map(repr, i18n.LANGUAGES))}")
    i18n.set_language(lang)
    if lang == "ja":
        japanese_figures()

    import datasets
    import transformers
    warnings.filterwarnings("ignore", message=".*pin_memory.*")
    transformers.logging.set_verbosity_error()
    # TrainingArguments turns the progress bar off (and prints raw log
    # dicts instead) when its logger is quieter than warnings: keep that
    # one logger at warnings, so a Trainer shows its bar. Runs with a live
    # plot, which shows the progress itself, drop the bar (recipes.quiet).
    logging.getLogger("transformers.training_args").setLevel(logging.WARNING)
    transformers.utils.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    transformers.set_seed(seed)
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        stubs_stop_politely(shell)
    from kit.runtime import default_preset, one_cpu_thread, pick_device
    one_cpu_thread()
    print(say("setup", device=pick_device(), preset=default_preset()))



def expect(claim, holds, seen):
    """A notebook's claim about its own run, checked where the run happens.

    `claim` is the condition written as code ("losses[-1] < losses[0] / 2"),
    so a learner reads it the same in every language.

    The solution notebooks run under KIT_STRICT=1 in `make test`, so a
    course run that stops learning fails there, without training it a
    second time in a unit test. A learner (no KIT_STRICT) gets one line
    instead: their own code may be why, and the run is still theirs.
    """
    if holds:
        return
    if os.environ.get("KIT_STRICT") == "1":
        raise AssertionError(f"expected {claim}; saw {seen}")
    if _exercises_left():
        return  # the run was never the learner's: check() has said why
    print(say("expected", claim=claim, seen=seen))


def _exercises_left():
    """Whether this notebook has an exercise not yet passed in this kernel
    (a copy that did not say its number has none)."""
    if COPY["notebook"] is None:
        return False
    from kit.checks import EXERCISES
    return any(int(e.notebook[:2]) == COPY["notebook"] and not e.passed
               for e in EXERCISES.values())

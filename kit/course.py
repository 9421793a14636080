"""What each notebook calls: `setup_notebook` at its top, `show` to print
the kit's own code, `expect` for a claim about its own run.

Building the notebooks from their sources is `kit.builder`; this module is
what a learner's kernel imports, so it stays small and quick to import.
"""

import inspect
import os

from kit.labels import say


def show(obj):
    """Display the kit's own source of `obj`: one copy, never pasted."""
    from IPython.display import Code, display
    display(Code(inspect.getsource(obj), language="python"))


def _not_done_yet(shell, etype, value, tb, tb_offset=None):
    """Learners see one line, not a traceback, for an unfinished exercise."""
    print(say("not_done_yet"))


def japanese_figures():
    """Let matplotlib draw Japanese text (kit.labels.use_japanese_font):
    True when the `ja` extra's font is installed."""
    from kit.labels import use_japanese_font
    return use_japanese_font()


def setup_notebook(seed=0, lang="en"):
    """Quiet logs, the Trainer's own progress bar, friendly stubs, a seed,
    and the language the kit speaks (`lang`: "en" or "ja")."""
    import logging
    import warnings

    from kit import i18n
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
        shell.set_custom_exc((NotImplementedError,), _not_done_yet)
    from kit.runtime import default_preset, one_cpu_thread, pick_device
    one_cpu_thread()
    print(say("setup", device=pick_device(), preset=default_preset()))



def expect(claim, holds, seen):
    """A notebook's claim about its own run, checked where the run happens.

    The solution notebooks run under KIT_STRICT=1 in `make test`, so a
    course run that stops learning fails there, without training it a
    second time in a unit test. A learner (no KIT_STRICT) gets one line
    instead: their own code may be why, and the run is still theirs.
    """
    if holds:
        return
    message = f"expected {claim}; saw {seen}"
    if os.environ.get("KIT_STRICT") == "1":
        raise AssertionError(message)
    print(f"⚠️  {message}: compare your code with the solution.")

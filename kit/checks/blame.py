"""Whose is it: what kind of answer check() takes, and whose code raised.

A learner never sees the kit's own failure blamed on them: an error that
came up through no frame of theirs (only the kit and the libraries) is the
checker's. And an answer of the wrong kind (None, a class for a function)
gets one line saying what check() expected, before anything runs.
"""

import inspect
import os
import sys
from pathlib import Path

from kit.checks.messages import MESSAGES
from kit.i18n import text

_KIT = str(Path(__file__).resolve().parent.parent)
_LIBRARIES = tuple({str(Path(p).resolve()) for p in sys.path
                    if "-packages" in p} | {str(Path(os.__file__).parent)})


def written_by_the_learner(error):
    """Whether the error came up through code outside the kit and the
    libraries: the learner's. Else it is the checker's own."""
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not (filename.startswith((_KIT, "<frozen"))
                or filename.startswith(_LIBRARIES)):
            return True
        tb = tb.tb_next
    return False


def raised_in_a_library(error):
    """Whether the innermost frame of the error is a library's (torch's
    "not implemented for 'Long'"): a NotImplementedError from there is a
    crash of the learner's code, not their untouched stub."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    filename = tb.tb_frame.f_code.co_filename if tb else "<none>"
    if not filename.startswith("<"):  # a venv reached through a link
        filename = str(Path(filename).resolve())
    return filename.startswith(_LIBRARIES) and not filename.startswith(_KIT)


def learners_method(error):
    """The learner's function or method the error came up in, innermost
    first ("MyTrainer._save_checkpoint"), or None: where an endless loop
    inside the kit's own calls (a real Trainer.train()) was cut short."""
    where, tb = None, error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if not (code.co_filename.startswith((_KIT, "<frozen"))
                or code.co_filename.startswith(_LIBRARIES)):
            where = code.co_qualname.rpartition("<locals>.")[2]
        tb = tb.tb_next
    return where


# -------------------------------------------------- what check expects

def what_check_expects(exercise, candidate):
    """One line when `candidate` is not the kind of answer the exercise
    takes (None, a class for a function, ...); None when it is."""
    answer = exercise.answer
    start = text(MESSAGES, "kind.start", id=exercise.id)
    if isinstance(answer, type):
        base = next(c for c in answer.__mro__
                    if not c.__module__.startswith("kit.checks"))
        wanted = (text(MESSAGES, "kind.class method", base=base.__name__,
                       method=exercise.method) if exercise.method
                  else text(MESSAGES, "kind.class", base=base.__name__))
        if isinstance(candidate, base):
            return start + wanted + text(MESSAGES, "kind.instance",
                                         name=type(candidate).__name__)
        if not isinstance(candidate, type):
            return start + wanted + text(MESSAGES, "kind.got",
                                         kind=_kind(candidate))
        if not issubclass(candidate, base):
            return start + wanted + text(
                MESSAGES, "kind.not a subclass", name=candidate.__name__,
                base=base.__name__)
        return None
    if callable(answer):
        if isinstance(candidate, type) or not callable(candidate):
            return start + text(
                MESSAGES, "kind.function", name=answer.__name__,
                signature=inspect.signature(answer), kind=_kind(candidate))
        return None
    if isinstance(answer, dict) and not isinstance(candidate, dict):
        return start + text(MESSAGES, "kind.dict", kind=_kind(candidate))
    return None


def _kind(value):
    if value is None:
        return "None"
    if isinstance(value, type):
        return text(MESSAGES, "kind.the class", name=value.__name__)
    if inspect.isroutine(value):
        return text(MESSAGES, "kind.the function",
                    name=getattr(value, "__name__", "?"))
    return f"{value!r:.40} ({type(value).__name__})"

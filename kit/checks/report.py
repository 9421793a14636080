"""What check() does with a verdict: print it, record it, then (strict)
raise.

In that order: the learner reads the verdict and its help before a strict
run stops, and `kit grade` has the record even of the verdict that
stopped it.
"""

import json
import os

from kit.checks import advice
from kit.checks.messages import MESSAGES
from kit.i18n import text

# a Result's status -> its verdict line's first words in MESSAGES
VERDICTS = {"passed": "verdict.passed", "failed": "verdict.failed",
            "not attempted": "verdict.not attempted"}


def report(result, notes=()):
    """Print the verdict and its help, record it; raise in strict mode."""
    if notes:  # the notes belong to the verdict: in the record too
        result.message += " (" + "; ".join(notes) + ")"
    show(result, notes)
    record(result)
    strict(result)


def show(result, notes=()):
    """The notes, the verdict line, and the help that fits what was seen."""
    for note in notes:
        print(text(MESSAGES, "note", note=note))
    exercise = result.exercise
    print(text(MESSAGES, "verdict.line",
               verdict=text(MESSAGES, VERDICTS[result.status]),
               id=exercise.id, stars="★" * exercise.stars,
               message=result.message))
    line = advice.help_after(exercise, result)
    if line and result.advise:
        print(text(MESSAGES, "help", line=line))


def record(result):
    """Append the verdict to $KIT_GRADE_FILE, where `kit grade` reads it."""
    path = os.environ.get("KIT_GRADE_FILE")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(result.record()) + "\n")


def strict(result):
    """Under KIT_STRICT=1 (solution notebooks, CI) a failure stops the run."""
    if os.environ.get("KIT_STRICT") == "1" and not result:
        raise AssertionError(
            f"{result.exercise.id}: {result.status}: {result.message}")

"""The grading machinery: run a learner's answer, say what differs, hint.

A checker is a function that takes the learner's candidate and either
returns (a pass, optionally with a note) or raises `Mismatch` saying what is
wrong. `check()` turns that into ✅ / ❌ / ⏸ for a person, a record for
`python -m kit grade`, and an exception under KIT_STRICT=1.
"""

import inspect
import json
import os
from dataclasses import dataclass, field

import torch


class Mismatch(AssertionError):
    """A wrong answer; the message says what differs."""


@dataclass
class Exercise:
    id: str
    stars: int
    notebook: str
    grade: callable
    reference: object  # what solution() shows: a function, class or value
    hints: list = field(default_factory=list)


EXERCISES = {}
_failures = {}  # exercise id -> wrong answers so far: picks the next hint


def exercise(id, stars, notebook, reference, hints):
    """Register the decorated function as the checker of exercise `id`."""
    def register(grade):
        EXERCISES[id] = Exercise(id, stars, notebook, grade, reference, hints)
        return grade
    return register


class Result:
    """What check() returns: truthy when the answer passed."""

    def __init__(self, exercise, status, message):
        self.exercise, self.status, self.message = exercise, status, message

    def __bool__(self):
        return self.status == "passed"

    def __repr__(self):
        return f"Result({self.exercise.id!r}, {self.status!r})"

    def _ipython_display_(self):
        pass  # check() has printed the verdict already: show nothing more


def _lookup(exercise_id):
    if exercise_id not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        raise KeyError(f"no exercise {exercise_id!r}; known: {known}")
    return EXERCISES[exercise_id]


def check(exercise_id, candidate, **options):
    """Grade `candidate` for exercise `exercise_id`; print, return a Result."""
    exercise = _lookup(exercise_id)
    try:
        note = exercise.grade(candidate, **options)
        result = Result(exercise, "passed", note or "matches the reference")
    except NotImplementedError:
        result = Result(exercise, "not attempted",
                        "still the stub: replace the `raise "
                        "NotImplementedError` with your code")
    except Mismatch as wrong:
        result = Result(exercise, "failed", str(wrong))
    except Exception as error:  # the learner's code broke: say how, briefly
        result = Result(exercise, "failed",
                        f"your code raised {type(error).__name__}: {error}")
    _report(result)
    return result


def _report(result):
    exercise = result.exercise
    stars = "★" * exercise.stars
    if result.status == "passed":
        print(f"✅ {exercise.id} {stars}: {result.message}")
    elif result.status == "not attempted":
        print(f"⏸  {exercise.id} {stars}: not attempted — "
              f"{result.message}")
    else:
        level = _failures[exercise.id] = _failures.get(exercise.id, 0) + 1
        print(f"❌ {exercise.id} {stars}: {result.message}")
        if exercise.hints:
            level = min(level, len(exercise.hints))
            print(f"   hint {level}/{len(exercise.hints)}: "
                  f"{exercise.hints[level - 1]}")
    _record(result)
    if os.environ.get("KIT_STRICT") == "1" and not result:
        raise AssertionError(
            f"{exercise.id}: {result.status}: {result.message}")


def _record(result):
    """Append the verdict to $KIT_GRADE_FILE, where `kit grade` reads it."""
    path = os.environ.get("KIT_GRADE_FILE")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"id": result.exercise.id,
                                "status": result.status}) + "\n")


def hint(exercise_id, level=1):
    """Print hint number `level` (1 is the gentlest) of an exercise."""
    hints = _lookup(exercise_id).hints
    level = max(1, min(level, len(hints)))
    print(f"hint {level}/{len(hints)}: {hints[level - 1]}")


def solution(exercise_id):
    """Show the reference answer: the kit's own code where there is some."""
    reference = _lookup(exercise_id).reference
    if callable(reference):
        print(inspect.getsource(reference))
    else:
        print(reference)


# ----------------------------------------------------- comparing answers

def compare(name, actual, expected, atol=1e-5, rtol=1e-4):
    """Compare a learner's tensor with the reference, like Karpathy's cmp().

    Raises Mismatch naming the first thing that differs: type, shape, dtype,
    then values (with the max difference). Returns "exact" or "close".
    """
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{name} should be a torch.Tensor, got "
                       f"{type(actual).__name__}")
    if actual.shape != expected.shape:
        raise Mismatch(f"{name} has shape {tuple(actual.shape)}, expected "
                       f"{tuple(expected.shape)}")
    if actual.dtype.is_floating_point != expected.dtype.is_floating_point:
        raise Mismatch(f"{name} has dtype {actual.dtype}, expected "
                       f"{expected.dtype}")
    actual = actual.detach().to(expected.dtype)
    if torch.equal(actual, expected):
        return "exact"
    difference = (actual - expected).abs().max().item()
    if torch.allclose(actual, expected, atol=atol, rtol=rtol):
        return f"close (max difference {difference:.1e})"
    raise Mismatch(f"{name} differs from the reference: max difference "
                   f"{difference:.3g} (yours {_preview(actual)}, expected "
                   f"{_preview(expected)})")


def _preview(tensor, n=4):
    flat = tensor.flatten()[:n].tolist()
    text = ", ".join(f"{v:.4g}" for v in flat)
    return f"[{text}{', …' if tensor.numel() > n else ''}]"

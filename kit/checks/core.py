"""The grading machinery: run a learner's answer, name the mistake, hint.

An exercise is graded in two steps. `observe(candidate)` runs the answer on
fixed inputs (copies of them) and returns what it saw, {name: value}; the
same function runs the kit's answer and every known mistake of the
catalogue, each written as real code. `judge(candidate, seen, expected)`
then says what differs (raising `Mismatch`). When a wrong answer behaves
exactly like a catalogued mistake, `check()` names it and gives its hint.
"""

import inspect
import json
import math
import numbers
import os
from contextlib import contextmanager
from dataclasses import dataclass, field

from kit.checks import advice
from kit.checks.blame import what_check_expects, written_by_the_learner
from kit.checks.clock import paused, time_limit  # noqa: F401 (re-exported)
from kit.checks.compare import (Mismatch, TimeLimit, default_judge,
                                describe_error, is_the_learners, same,
                                scale_factor)

# every verdict line carries a word, so it reads where the emoji font is
# missing and the glyph shows as a box
VERDICTS = {"passed": "✅ passed", "failed": "❌ failed",
            "not attempted": "⏸  not attempted"}
NOTE = "ℹ️  note:"
STUB = "replace the `raise NotImplementedError` with your code"


@dataclass
class Mistake:
    """A known wrong answer: `code` is written as a learner would write it."""
    id: str
    title: str  # a few words: "not shifted"
    why: str  # one line: what is wrong
    hint: str  # how to fix it
    code: object
    # the 1-based index of the exercise's `hints` rung that addresses this
    # mistake's symptom: reading the ladder in order reaches it, and
    # hint(id, 1) right after this mistake starts there
    rung: int = None


@dataclass
class Exercise:
    id: str
    stars: int
    notebook: str
    number: int  # its place in the notebook: "exercise 1"
    observe: callable  # candidate -> {name: value}
    judge: callable  # (candidate, seen, expected) -> note, or Mismatch
    answer: object  # the kit's right answer, in the learner's form
    solution: object  # what solution() prints: code, or a value
    hints: list = field(default_factory=list)
    mistakes: list = field(default_factory=list)
    # earlier exercises this one calls: [(name, exercise id, kit's version)]
    uses: list = field(default_factory=list)
    method: str = None  # for a class: the method the learner writes
    # {symptom: rung} where a rung of `hints` fits a symptom the machinery
    # tells apart ("crash", "shape", ...); advice.SYMPTOM_HINTS otherwise
    symptoms: dict = field(default_factory=dict)
    stub: str = STUB  # what "not attempted" asks the learner to do
    _cache: dict = field(default_factory=dict, repr=False)

    def seen(self, answer):
        """Observations of a kit answer (the reference or a mistake)."""
        key = id(answer)
        if key not in self._cache:
            with standing_in_for(self, answer) as answer:
                self._cache[key] = self.observe(answer)
        return self._cache[key]


EXERCISES = {}


def exercise(id, stars, notebook, answer, hints, mistakes=(), solution=None,
             uses=(), method=None, judge=None, symptoms=None, stub=STUB):
    """Register the decorated `observe` function of exercise `id`."""
    def register(observe):
        number = 1 + sum(e.notebook == notebook for e in EXERCISES.values())
        EXERCISES[id] = Exercise(
            id, stars, notebook, number, observe, judge or default_judge,
            answer, answer if solution is None else solution, list(hints),
            list(mistakes), list(uses), method, dict(symptoms or {}), stub)
        return observe
    return register


class Result:
    """What check() returns: truthy when the answer passed."""

    def __init__(self, exercise, status, message, mistake=None,
                 symptom=None, factor=None):
        self.exercise, self.status, self.message = exercise, status, message
        self.mistake = mistake  # the id of a named mistake, or None
        self.symptom, self.factor = symptom, factor  # where help starts
        self.advise = True  # False: no hint fits (the answer's kind, a bug)

    def __bool__(self):
        return self.status == "passed"

    def __repr__(self):
        name = self.exercise.id if self.exercise else None
        return f"Result({name!r}, {self.status!r})"

    def _ipython_display_(self):
        pass  # check() has printed the verdict already: show nothing more


def _lookup(exercise_id):
    """The exercise, or None after one line saying which ids there are."""
    try:
        return EXERCISES[exercise_id]
    except (KeyError, TypeError):  # TypeError: an unhashable "id"
        known = ", ".join(sorted(EXERCISES))
        print(f"there is no exercise {exercise_id!r}: the exercises are "
              f"{known}")
        return None


# ------------------------------------------------------------- checking

def check(exercise_id, candidate, timeout=20, **options):
    """Grade `candidate` for exercise `exercise_id`; print, return a Result.

    `timeout` (seconds) bounds the learner's code: past it the answer fails
    and the notebook goes on.
    """
    exercise = _lookup(exercise_id)
    if exercise is None:
        return _refused(f"no exercise {exercise_id!r}")
    if (isinstance(timeout, bool) or not isinstance(timeout, numbers.Real)
            or not timeout > 0):
        print(f"check({exercise_id!r}, ..., timeout={timeout!r}): timeout "
              f"is the seconds your code may run, a number > 0, e.g. "
              f"timeout=60")
        return _refused(f"timeout={timeout!r}", exercise)
    wrong_kind = what_check_expects(exercise, candidate)
    if wrong_kind:
        result = Result(exercise, "failed", wrong_kind)
        result.advise = False
        _report(result)
        return result
    notes = []
    # no limit of its own: the kit's handler holds the alarm throughout, so
    # an outer alarm's exception is marked as not the learner's everywhere
    with time_limit(math.inf), standing_in_for(
            exercise, candidate, notes) as candidate:
        result = evaluate(exercise, candidate, timeout)
    if result.status == "not attempted":
        notes = []
    _report(result, notes)
    return result


def _refused(why, exercise=None):
    """A check() call that could not grade anything: not a verdict."""
    if os.environ.get("KIT_STRICT") == "1":
        raise AssertionError(f"check() refused: {why}")
    return Result(exercise, "failed", f"not checked: {why}")


def evaluate(exercise, candidate, timeout=20):
    """Grade without printing: a Result."""
    seen = symptom = None
    ours = []  # the limit this call set: only its expiry is ours to report
    try:
        with time_limit(timeout) as limit:
            ours.append(limit)
            seen = exercise.observe(candidate)
            with paused():
                expected = exercise.seen(exercise.answer)
            note = exercise.judge(candidate, seen, expected)
        return Result(exercise, "passed", note or "matches the reference")
    except NotImplementedError:
        return Result(exercise, "not attempted", f"still the stub: "
                      f"{exercise.stub}")
    except TimeLimit as expired:
        if not ours or expired.limit is not ours[0]:
            raise  # an outer limit's: not this check's to report
        return Result(exercise, "failed", f"your code ran for more than "
                      f"{timeout:g} s (an endless loop?)", symptom="timeout")
    except Mismatch as wrong:
        message, symptom = str(wrong), wrong.symptom
    except Exception as error:
        if not is_the_learners(error):
            raise
        if not written_by_the_learner(error):
            result = Result(exercise, "failed", f"the checker itself failed "
                            f"({describe_error(error)}): a bug in the kit, "
                            f"not in your answer; please report it")
            result.advise = False
            return result
        message = f"your code raised {describe_error(error)}"
        symptom = "crash"
    mistake = name_mistake(exercise, seen) if seen is not None else None
    if mistake is not None:
        return Result(exercise, "failed", f"{mistake.title} — {mistake.why}",
                      mistake.id)
    factor = None
    if symptom is None and seen is not None:
        factor = scale_factor(seen, exercise.seen(exercise.answer))
        symptom = "scaled" if factor is not None else None
    return Result(exercise, "failed", message, symptom=symptom,
                  factor=factor)


def name_mistake(exercise, seen):
    """The catalogued mistake that behaves exactly like `seen`, or None."""
    for mistake in exercise.mistakes:
        try:
            if same(seen, exercise.seen(mistake.code)):
                return mistake
        except Exception as error:  # a mistake that cannot even run
            if not is_the_learners(error):
                raise
            continue
    return None


# ------------------------------------------------------------ reporting

def _report(result, notes=()):
    """Print the verdict and its help, record it; raise in strict mode."""
    for note in notes:
        print(f"{NOTE} {note}")
    if notes:
        result.message += " (" + "; ".join(notes) + ")"
    exercise = result.exercise
    print(f"{VERDICTS[result.status]} · {exercise.id} "
          f"{'★' * exercise.stars}: {result.message}")
    line = advice.help_after(exercise, result)
    if line and result.advise:
        print(f"   {line}")
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
                                "status": result.status,
                                "mistake": result.mistake,
                                "message": result.message}) + "\n")


# ------------------------------------------------- exercises stand alone

@contextmanager
def standing_in_for(exercise, candidate, notes=None):
    """Yield the candidate, with the kit's version of each earlier exercise
    it calls that is not done yet.

    A later exercise calls the learner's earlier ones (their `causal_lm_loss`
    inside their `compute_loss`): grade it on its own, against the kit's
    versions of everything else, and say so in `notes`.
    """
    undo = []
    try:
        for name, earlier_id, kit_version in exercise.uses:
            earlier = _lookup(earlier_id)
            if exercise.method is None or name != earlier.method:
                code = (getattr(candidate, exercise.method, None)
                        if exercise.method else candidate)
                scope = getattr(code, "__globals__", {})  # the notebook's
                current = scope.get(name, kit_version)
                verdict = current is kit_version or (
                    what_check_expects(earlier, current) is None
                    and evaluate(earlier, current))
                if verdict:
                    continue
                undo.append((scope, name, current))
                scope[name] = kit_version
            else:  # an earlier method of the same class
                verdict = getattr(candidate, name) is kit_version or evaluate(
                    earlier, candidate)
                if verdict:
                    continue
                candidate = type(candidate.__name__, (candidate,),
                                 {name: kit_version})
            if notes is not None:  # a wrong answer is not an unwritten one
                state = ("is not done yet" if getattr(
                    verdict, "status", None) == "not attempted"
                    else "does not pass its check")
                notes.append(f"exercise {earlier.number} {state}: "
                             f"using the kit's `{name}` to check this one")
        yield candidate
    finally:
        for scope, name, current in undo:
            scope[name] = current


# ------------------------------------------------------- hint, solution

def hint(exercise_id, level=1):
    """Print hint number `level` (1 is the gentlest) of an exercise.

    Right after a failure, level 1 is the hint for what check() saw.
    """
    exercise = _lookup(exercise_id)
    if exercise is None:
        return
    hints = advice.ladder(exercise)
    levels = ", ".join(str(i) for i in range(1, len(hints) + 1))
    if (isinstance(level, bool) or not isinstance(level, int)
            or not 1 <= level <= len(hints)):
        print(f"{exercise_id} has hints {levels}: try "
              f"hint({exercise_id!r}, 1), not level {level!r}")
        return
    print(f"hint {level}/{len(hints)}: {hints[level - 1]}")


def solution(exercise_id):
    """Print code that solves the exercise when pasted into its cell."""
    exercise = _lookup(exercise_id)
    if exercise is None:
        return
    shown = exercise.solution
    if isinstance(shown, str):
        print(shown)
    elif callable(shown):
        print(inspect.getsource(shown))
    else:
        print(shown)

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
import os
import signal
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field

from kit.checks.compare import (Mismatch, TimeLimit, default_judge,
                                describe_error, same)


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
    _cache: dict = field(default_factory=dict, repr=False)

    def seen(self, answer):
        """Observations of a kit answer (the reference or a mistake)."""
        key = id(answer)
        if key not in self._cache:
            with standing_in_for(self, answer) as answer:
                self._cache[key] = self.observe(answer)
        return self._cache[key]


EXERCISES = {}
_failures = {}  # exercise id -> unnamed wrong answers so far: next hint


def exercise(id, stars, notebook, answer, hints, mistakes=(), solution=None,
             uses=(), method=None, judge=None):
    """Register the decorated `observe` function of exercise `id`."""
    def register(observe):
        number = 1 + sum(e.notebook == notebook for e in EXERCISES.values())
        EXERCISES[id] = Exercise(
            id, stars, notebook, number, observe, judge or default_judge,
            answer, answer if solution is None else solution, list(hints),
            list(mistakes), list(uses), method)
        return observe
    return register


class Result:
    """What check() returns: truthy when the answer passed."""

    def __init__(self, exercise, status, message, mistake=None):
        self.exercise, self.status, self.message = exercise, status, message
        self.mistake = mistake  # the id of a named mistake, or None

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


# ------------------------------------------------------------- checking

def check(exercise_id, candidate, timeout=20, **options):
    """Grade `candidate` for exercise `exercise_id`; print, return a Result.

    `timeout` (seconds) bounds the learner's code: past it the answer fails
    and the notebook goes on.
    """
    exercise = _lookup(exercise_id)
    notes = []
    with standing_in_for(exercise, candidate, notes) as candidate:
        result = evaluate(exercise, candidate, timeout)
    if result.status == "not attempted":
        notes = []
    _report(result, notes)
    return result


def evaluate(exercise, candidate, timeout=20):
    """Grade without printing: a Result."""
    seen = None
    try:
        with time_limit(timeout):
            seen = exercise.observe(candidate)
            with paused():
                expected = exercise.seen(exercise.answer)
            note = exercise.judge(candidate, seen, expected)
        return Result(exercise, "passed", note or "matches the reference")
    except NotImplementedError:
        return Result(exercise, "not attempted", "still the stub: replace "
                      "the `raise NotImplementedError` with your code")
    except TimeLimit:
        return Result(exercise, "failed", f"your code ran for more than "
                      f"{timeout:g} s (an endless loop?)")
    except Mismatch as wrong:
        message = str(wrong)
    except Exception as error:  # the learner's code broke: say how, briefly
        message = f"your code raised {describe_error(error)}"
    mistake = name_mistake(exercise, seen) if seen is not None else None
    if mistake is not None:
        return Result(exercise, "failed", f"{mistake.title} — {mistake.why}",
                      mistake.id)
    return Result(exercise, "failed", message)


def name_mistake(exercise, seen):
    """The catalogued mistake that behaves exactly like `seen`, or None."""
    for mistake in exercise.mistakes:
        try:
            if same(seen, exercise.seen(mistake.code)):
                return mistake
        except Exception:  # a mistake that cannot even run: not this one
            continue
    return None


def _report(result, notes=()):
    exercise = result.exercise
    stars = "★" * exercise.stars
    for note in notes:
        print(f"ℹ️  {note}")
    if notes:
        result.message += " (" + "; ".join(notes) + ")"
    if result.status == "passed":
        print(f"✅ {exercise.id} {stars}: {result.message}")
    elif result.status == "not attempted":
        print(f"⏸  {exercise.id} {stars}: not attempted — "
              f"{result.message}")
    else:
        print(f"❌ {exercise.id} {stars}: {result.message}")
        named = [m for m in exercise.mistakes if m.id == result.mistake]
        if named:
            print(f"   hint: {named[0].hint}")
        elif exercise.hints:
            level = _failures[exercise.id] = _failures.get(exercise.id, 0) + 1
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
                verdict = current is kit_version or evaluate(earlier, current)
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
                state = ("is not done yet" if verdict.status ==
                         "not attempted" else "does not pass its check")
                notes.append(f"exercise {earlier.number} {state}: "
                             f"using the kit's `{name}` to check this one")
        yield candidate
    finally:
        for scope, name, current in undo:
            scope[name] = current


# ----------------------------------------------------------- time limit

@contextmanager
def time_limit(seconds):
    """Raise TimeLimit in the code running inside after `seconds`.

    A signal (SIGALRM), so it works where notebook cells run: the main
    thread. Elsewhere, and inside another limit, no new limit is set.
    """
    if (threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "SIGALRM")
            or signal.getitimer(signal.ITIMER_REAL)[0] > 0):
        yield
        return

    def expire(signum, frame):
        raise TimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def paused():
    """Stop the clock of time_limit while the kit's own code runs inside
    (loading a model, building a trainer): only the learner's code counts.
    """
    left = (signal.getitimer(signal.ITIMER_REAL)[0]
            if hasattr(signal, "SIGALRM")
            and threading.current_thread() is threading.main_thread() else 0)
    if left:
        signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if left:
            signal.setitimer(signal.ITIMER_REAL, left)


# ------------------------------------------------------- hint, solution

def hint(exercise_id, level=1):
    """Print hint number `level` (1 is the gentlest) of an exercise."""
    hints = _lookup(exercise_id).hints
    levels = ", ".join(str(i) for i in range(1, len(hints) + 1))
    if (isinstance(level, bool) or not isinstance(level, int)
            or not 1 <= level <= len(hints)):
        print(f"{exercise_id} has hints {levels}: try "
              f"hint({exercise_id!r}, 1), not level {level!r}")
        return
    print(f"hint {level}/{len(hints)}: {hints[level - 1]}")


def solution(exercise_id):
    """Print code that solves the exercise when pasted into its cell."""
    shown = _lookup(exercise_id).solution
    if isinstance(shown, str):
        print(shown)
    elif callable(shown):
        print(inspect.getsource(shown))
    else:
        print(shown)

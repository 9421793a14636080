"""The grading machinery: run a learner's answer, name the mistake, hint.

An exercise is graded in two steps. `observe(candidate)` runs the answer on
fixed inputs (copies of them) and returns what it saw, {name: value}; the
same function runs the kit's answer and every known mistake of the
catalogue, each written as real code. `judge(candidate, seen, expected)`
then says what differs (raising `Mismatch`). When a wrong answer behaves
exactly like a catalogued mistake, `check()` names it and gives its hint.
When none does, `name_property()` looks for the property of the
inputs that separates the answer from the reference: the observations made
on inputs with it (GA > 1, a labelled first position, β off its default)
are the only ones that differ, so that property is what the answer misses.
`report.py` prints and records the verdict. The machinery's words come from
`messages.MESSAGES`; an exercise's own (its hints, each mistake's title,
why and hint, its judge's lines) sit beside its checker, `words=` below.
"""

import inspect
import math
import numbers
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from kit.checks import advice, relations, remedies, report
from kit.checks.blame import (learners_method, raised_in_a_library,
                              what_check_expects, written_by_the_learner)
from kit.checks.clock import (paused, time_limit,  # noqa: F401 (re-exported)
                              unpaused)
from kit.checks.compare import (Mismatch, Raised, TimeLimit, default_judge,
                                describe_error, is_the_learners, same,
                                scale_factor)
from kit.checks.messages import MESSAGES
from kit.i18n import said, text

@dataclass
class Mistake:
    """A known wrong answer: `code` is written as a learner would write it.

    Its words, `{"en": (title, why, hint), "ja": (...)}`, sit in its
    exercise's words under its id; exercise() hands them over.
    """
    id: str
    code: object
    # the 1-based index of the exercise's `hints` rung that addresses this
    # mistake's symptom: reading the ladder in order reaches it, and
    # hint(id, 1) right after this mistake starts there
    rung: int = None
    words: dict = None
    # a test over the learner's syntax tree (kit.checks.remedies): True
    # when the fix this mistake's hint names is there already, so the
    # same numbers have another cause and the checker looks on
    remedy: object = None

    @property
    def title(self):  # a few words: "not shifted"
        return said(self.words)[0]

    @property
    def why(self):  # one line: what is wrong
        return said(self.words)[1]

    @property
    def hint(self):  # how to fix it
        return said(self.words)[2]


@dataclass
class Property:
    """A property of the inputs an answer must respect (GA > 1, a labelled
    first position), known by the observations made on inputs that have it.

    An answer that differs from the reference only there, and agrees
    elsewhere, misses it. `where` picks those observations by name: a piece
    of the name, or a function of it. Or `varies` names a setting in the
    names, a regex with one group ("epsilon=([\\d.]+)"): an answer right
    somewhere the setting has one value, and wrong only where it has
    another, wrong at each other value tried, has that value written in.
    `off_by` names a setting the same way: an answer that differs by
    exactly that factor, or its inverse, divides once too few or too many.
    An exercise lists its properties most specific first. Its words,
    `{"en": (title, why), "ja": (...)}`, sit in its exercise's words under
    "property:<id>".
    """
    id: str
    where: object = None
    # the 1-based rung of the exercise's `hints` that teaches the idea:
    # hint(id, 1) right after this property is named starts there
    rung: int = 1
    varies: str = None
    # a setting in the names (a regex, as `varies`) that an answer is off
    # by, as a factor: a sum divided by one count too few or too many
    off_by: str = None
    words: dict = None

    @property
    def key(self):  # what Result.mistake holds, and `grade` counts
        return "property:" + self.id

    def fits(self, seen, expected, differs, stopped=False):
        """Whether an answer that differs from the reference observations
        `expected` at `differs` misses this property: every difference is
        on inputs with it, and some input without it agrees (or the
        observation `stopped` at its first problem, which has it)."""
        if not differs:
            return False
        if self.off_by is not None:
            return self._off_by(seen, expected, differs)
        if self.varies is None:
            holds = {name for name in expected if (
                self.where(name) if callable(self.where)
                else self.where in name)}
            return differs <= holds and (stopped or bool(
                set(expected) - holds))
        setting = _settings(self.varies, expected)
        for value in set(setting.values()):  # written in as `value`?
            at = {name for name in setting if setting[name] == value}
            elsewhere = set(setting) - at
            if (differs <= elsewhere and at - differs
                    # and wrong at every other value the inputs tried
                    and {setting[name] for name in elsewhere} == {
                        setting[name] for name in differs}):
                return True
        return False

    def _off_by(self, seen, expected, differs):
        """Each observation that differs is the reference's times its
        setting's value (or divided by it): one division too few, or too
        many, by a count the inputs vary."""
        setting = _settings(self.off_by, expected)
        if not differs <= set(setting):
            return False
        for power in (1, -1):
            if all(_times(seen.get(name), expected[name],
                          float(setting[name]) ** power)
                   for name in differs):
                return True
        return False

    title = Mistake.title
    why = Mistake.why


def _settings(pattern, names):
    """{name: the setting's value in it} for the names that hold one."""
    return {name: found.group(1) for name in names
            if (found := re.search(pattern, name))}


def _times(actual, wanted, factor):
    """Whether the float tensor `actual` is `wanted` times `factor`."""
    return (isinstance(actual, torch.Tensor)
            and isinstance(wanted, torch.Tensor)
            and actual.shape == wanted.shape and factor != 1
            and actual.dtype.is_floating_point
            and torch.allclose(actual.double(), wanted.double() * factor,
                               atol=1e-5, rtol=1e-4))


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
    mistakes: list = field(default_factory=list)
    # properties of the inputs it is checked on, named when no mistake is
    properties: list = field(default_factory=list)
    # other answers the judge accepts (a step ahead): properties are read
    # against whichever of them the answer is closest to
    also_right: tuple = ()
    # earlier exercises this one calls: [(name, exercise id, kit's version)]
    uses: list = field(default_factory=list)
    method: str = None  # for a class: the method the learner writes
    # {symptom: rung} where a rung of `hints` fits a symptom the machinery
    # tells apart ("crash", "shape", ...); advice's symptom hints otherwise
    symptoms: dict = field(default_factory=dict)
    # the kit's code that answers it, "module:Qualified.name" each: what
    # show() hides in a learner's copy until the learner's answer passes
    kit_code: tuple = ()
    words: dict = None  # see exercise()
    passed: bool = False  # in this kernel, at least once
    # where the hint ladder stands (advice.py): unnamed failures with no
    # symptom so far, and (rung or None, text) of the last failure's help
    failures: int = 0
    last_help: tuple = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def hints(self):
        """The hint ladder, gentlest first."""
        return list(said(self.words["hints"]))

    @property
    def stub(self):
        """What "not attempted" asks the learner to do."""
        if "stub" in self.words:
            return said(self.words["stub"])
        return text(MESSAGES, "stub")

    def seen(self, answer):
        """Observations of a kit answer (the reference or a mistake)."""
        key = id(answer)
        if key not in self._cache:
            with standing_in_for(self, answer) as answer:
                self._cache[key] = self.observe(answer)
        return self._cache[key]


EXERCISES = {}


def exercise(id, stars, notebook, answer, *, words, mistakes=(),
             properties=(), also_right=(), solution=None, uses=(),
             method=None, judge=None, symptoms=None, kit_code=()):
    """Register the decorated `observe` function of exercise `id`.

    `words`: what its checker says, each entry `{"en": ..., "ja": ...}`:
    "hints" (the ladder, gentlest first), "stub" (optional), one
    (title, why, hint) per mistake id, one (title, why) per property under
    "property:<id>", and the lines its judge prints.
    """
    lacking = [key for key in ["hints"] + [m.id for m in mistakes]
               + [p.key for p in properties] if key not in words]
    if lacking:  # said when the checker module loads, not at a learner
        raise ValueError(f"exercise {id!r}: its words have no entry for "
                         f"{', '.join(lacking)}; add one beside the others")

    def register(observe):
        number = 1 + sum(e.notebook == notebook for e in EXERCISES.values())
        for mistake in mistakes:
            mistake.words = words[mistake.id]
        for property in properties:
            property.words = words[property.key]
        EXERCISES[id] = Exercise(
            id, stars, notebook, number, observe, judge or default_judge,
            answer, answer if solution is None else solution,
            list(mistakes), list(properties), tuple(also_right), list(uses),
            method, dict(symptoms or {}), tuple(kit_code), words)
        return observe
    return register


class Result:
    """What check() returns: truthy when the answer passed."""

    def __init__(self, exercise, status, message, mistake=None,
                 symptom=None, factor=None):
        self.exercise, self.status, self.message = exercise, status, message
        # the id of a named mistake, "property:<id>" of a named property,
        # or None
        self.mistake = mistake
        self.symptom, self.factor = symptom, factor  # where help starts
        self.advise = True  # False: no hint fits (the answer's kind, a bug)
        self.measured = None  # beside a named mistake: what numbers say

    def __bool__(self):
        return self.status == "passed"

    def __repr__(self):
        name = self.exercise.id if self.exercise else None
        return f"Result({name!r}, {self.status!r})"

    def _ipython_display_(self):
        pass  # check() has printed the verdict already: show nothing more

    def record(self):
        """The grade record: one JSON line of $KIT_GRADE_FILE, which
        `kit grade` (kit.grading.verdicts) reads back."""
        return {"id": self.exercise.id, "status": self.status,
                "mistake": self.mistake, "message": self.message}


def heading(exercise):
    """How the notebook's heading names `exercise`: ★★ Exercise 1 `id`
    (a learner finds it with the browser's search)."""
    return text(MESSAGES, "needs.heading", stars="★" * exercise.stars,
                number=exercise.number, id=exercise.id)


def _lookup(exercise_id):
    """The exercise, or None after one line saying which ids there are."""
    try:
        return EXERCISES[exercise_id]
    except (KeyError, TypeError):  # TypeError: an unhashable "id"
        print(text(MESSAGES, "refused.unknown id", id=exercise_id,
                   known=", ".join(sorted(EXERCISES))))
        return None


# ------------------------------------------------------------- checking

def check(exercise_id, candidate, timeout=20):
    """Grade `candidate` for exercise `exercise_id`; print, return a Result.

    `timeout` (seconds) bounds the learner's code: past it the answer fails
    and the notebook goes on.
    """
    exercise = _lookup(exercise_id)
    if exercise is None:
        return _refused("refused.unknown id.why", id=exercise_id)
    if (isinstance(timeout, bool) or not isinstance(timeout, numbers.Real)
            or not timeout > 0):
        print(text(MESSAGES, "refused.timeout", id=exercise_id,
                   timeout=timeout))
        return _refused("refused.timeout.why", exercise, timeout=timeout)
    wrong_kind = what_check_expects(exercise, candidate)
    if wrong_kind:
        result = Result(exercise, "failed", wrong_kind)
        result.advise = False
        report.report(result)
        return result
    notes = []
    # no limit of its own: the kit's handler holds the alarm throughout, so
    # an outer alarm's exception is marked as not the learner's everywhere
    with time_limit(math.inf), torch_defaults(notes), standing_in_for(
            exercise, candidate, notes) as candidate:
        result = evaluate(exercise, candidate, timeout)
    if result.status == "not attempted":
        notes = []
    exercise.passed = exercise.passed or bool(result)
    report.report(result, notes)
    return result


def _refused(key, exercise=None, **fields):
    """A check() call that could not grade anything: not a verdict. `key`
    names its reason's line in MESSAGES."""
    why = text(MESSAGES, key, **fields)
    if os.environ.get("KIT_STRICT") == "1":
        raise AssertionError(text(MESSAGES, "refused.strict", why=why))
    return Result(exercise, "failed", text(MESSAGES, "not checked", why=why))


def evaluate(exercise, candidate, timeout=20):
    """Grade without printing: a Result."""
    seen = symptom = raised = None
    ours = []  # the limit this call set: only its expiry is ours to report
    try:
        with time_limit(timeout) as limit:
            ours.append(limit)
            seen = exercise.observe(candidate)
            with paused():
                expected = exercise.seen(exercise.answer)
            note = exercise.judge(candidate, seen, expected)
        return Result(exercise, "passed", note or text(MESSAGES, "matches"))
    except NotImplementedError as error:
        if not raised_in_a_library(error):
            return Result(exercise, "not attempted", text(
                MESSAGES, "still the stub", stub=exercise.stub,
                heading=heading(exercise)))
        # torch's "not implemented for 'Long'": the learner's code crashed
        raised, symptom = error, "crash"
        message = text(MESSAGES, "raised", error=describe_error(error))
    except TimeLimit as expired:
        if not ours or expired.limit is not ours[0]:
            raise  # an outer limit's: not this check's to report
        # a class's method is named: it may run deep in a real training
        where = getattr(expired, "where", None) or (
            isinstance(candidate, type) and learners_method(expired))
        return Result(exercise, "failed", text(
            MESSAGES, "time limit in" if where else "time limit",
            timeout=timeout, where=where), symptom="timeout")
    except Mismatch as wrong:
        message, symptom = str(wrong), wrong.symptom
    except Exception as error:
        if not is_the_learners(error):
            raise
        if not written_by_the_learner(error):
            result = Result(exercise, "failed", text(
                MESSAGES, "checker failed", error=describe_error(error)))
            result.advise = False
            return result
        message = text(MESSAGES, "raised", error=describe_error(error))
        symptom, raised = "crash", error
    mistake = (name_mistake(exercise, seen, candidate)
               if seen is not None else None)
    if mistake is not None:
        result = Result(exercise, "failed", text(
            MESSAGES, "mistake", title=mistake.title, why=mistake.why),
            mistake.id)
        # what the numbers say, for the hints after the mistake's own rung
        found = _relation(exercise, seen, raised, symptom, message)
        result.measured = found[1] if found else None
        return result
    broken = name_property(exercise, seen) if seen is not None else None
    if broken is not None:
        # a fact's own problem line says it with the numbers seen
        why = message if "problem" in seen else broken.why
        return Result(exercise, "failed", text(
            MESSAGES, "mistake", title=broken.title, why=why), broken.key)
    factor = None
    if symptom is None and seen is not None:
        factor = scale_factor(seen, exercise.seen(exercise.answer))
        symptom = "scaled" if factor is not None else None
    found = _relation(exercise, seen, raised, symptom, message)
    if found is not None:  # what the numbers say, or the kind of crash
        relation, line = found
        if message not in line:  # a crash's line holds it already
            line = text(MESSAGES, "relation.line", line=line, detail=message)
        return Result(exercise, "failed", line, "property:" + relation,
                      symptom=symptom, factor=factor)
    return Result(exercise, "failed", message, symptom=symptom,
                  factor=factor)


def _relation(exercise, seen, raised, symptom, message):
    """relations.name() on this answer's observations and the
    reference's, or on the error its code raised (`message` says it)."""
    if isinstance(seen, Raised):  # a fact-based check's whole run
        raised = seen.error
    if raised is not None or not isinstance(seen, dict):
        return (relations.crashed(raised, message) if raised is not None
                else None)
    if "problem" in seen:  # a fact's own line says it, but for a crash
        raised = next((value.error for value in seen.values()
                       if isinstance(value, Raised)), None)
        return raised and relations.crashed(raised, message)
    expected = _opened(_behaviour(exercise.seen(exercise.answer)))
    return relations.name(_opened(seen), expected, symptom=symptom,
                          said=message)


def name_mistake(exercise, seen, candidate=None):
    """The catalogued mistake that behaves exactly like `seen`, or None:
    the first whose remedy the learner's code (`candidate`) does not
    already have — with it there, the same numbers have another cause."""
    tree = remedies.source_tree(candidate) if candidate is not None else None
    for mistake in exercise.mistakes:
        if remedies.remedied(mistake, tree):
            continue
        try:
            if same(_behaviour(seen),
                    _behaviour(exercise.seen(mistake.code))):
                return mistake
        except Exception as error:  # a mistake that cannot even run
            if not is_the_learners(error):
                raise
            continue
    return None


def name_property(exercise, seen):
    """The property of the inputs that separates `seen` from the reference,
    or None: the first of the exercise's properties (most specific first)
    that fits, against the reference or an answer `also_right`.

    A property fits when every observation that differs was made on inputs
    that have it, and some observation without it agrees: right while
    GA = 1, wrong with GA = 2. An observation that stopped at its first
    problem (nb04's facts) is read up to there: what broke is the property
    that first failing observation has.
    """
    if not isinstance(seen, dict):
        return None
    stopped = "problem" in seen
    seen = _opened(_behaviour(seen))
    for property in exercise.properties:
        for reference in (exercise.answer,) + exercise.also_right:
            expected = _opened(_behaviour(exercise.seen(reference)))
            if stopped:  # what came after the first problem was not seen
                expected = {name: value for name, value in expected.items()
                            if name in seen}
            differs = {name for name, value in expected.items()
                       if not same(seen.get(name), value)}
            if property.fits(seen, expected, differs, stopped):
                return property
    return None


def _opened(seen):
    """An observation that is itself a dict, as one observation per entry:
    "beta=0.1: chosen_rewards". The right losses beside wrong rewards then
    show which part is wrong."""
    opened = {}
    for name, value in seen.items():
        if isinstance(value, dict):
            opened.update({f"{name}: {part}": each
                           for part, each in value.items()})
        else:
            opened[name] = value
    return opened


def _behaviour(seen):
    """What an answer did, without the words about it: a fact-based
    observation's "problem" is a sentence in the language of the moment,
    and a mistake's observation may have been made in the other one."""
    if isinstance(seen, dict) and "problem" in seen:
        return {key: value for key, value in seen.items() if key != "problem"}
    return seen


# ------------------------------------------------- exercises stand alone

@contextmanager
def torch_defaults(notes):
    """Within: torch's own defaults, float32 on the CPU, where the kit's
    references run. A kernel's torch.set_default_dtype(torch.bfloat16) or
    set_default_device("meta") made right answers fail or look like the
    stub; they are set back afterwards, and said in `notes`."""
    dtype, device = torch.get_default_dtype(), torch.get_default_device()
    changed = ([f"torch.set_default_dtype({dtype})"]
               if dtype != torch.float32 else [])
    if device.type != "cpu":
        changed.append(f'torch.set_default_device("{device}")')
    if changed:
        notes.append(text(MESSAGES, "defaults reset",
                          what=", ".join(changed)))
        torch.set_default_dtype(torch.float32)
        torch.set_default_device("cpu")
    try:
        yield
    finally:
        if changed:
            torch.set_default_dtype(dtype)
            torch.set_default_device(device)


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
                # judged in the class that wrote it (the notebook's earlier
                # answer): a later class's own bug, a broken __init__, is
                # not exercise 1's, and its check says so itself
                owner = next(c for c in candidate.__mro__ if name in vars(c))
                verdict = getattr(candidate, name) is kit_version or evaluate(
                    earlier, owner)
                if verdict:
                    continue
                candidate = type(candidate.__name__, (candidate,),
                                 {name: kit_version})
            if notes is not None:  # a wrong answer is not an unwritten one
                state = ("uses.not done" if getattr(
                    verdict, "status", None) == "not attempted"
                    else "uses.not passing")
                notes.append(text(MESSAGES, state, number=earlier.number,
                                  name=name))
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
        print(text(MESSAGES, "refused.hint level", id=exercise_id,
                   levels=levels, level=level))
        return
    print(text(MESSAGES, "hint.line", level=level, count=len(hints),
               text=hints[level - 1]))


def solution(exercise_id):
    """Print code that solves the exercise when pasted into its cell."""
    exercise = _lookup(exercise_id)
    if exercise is None:
        return
    shown = exercise.solution  # code as text, a function or class, a value
    # a comment, so the printed answer still pastes as it is
    print(text(MESSAGES, "solution.header", id=exercise_id))
    print(inspect.getsource(shown) if callable(shown) else shown)

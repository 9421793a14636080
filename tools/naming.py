"""How often check() names what a wrong answer misses, and whether the
hint it gives first is the one that teaches it (issue 48).

Replays every catalogued mistake, then the wrong answers of
tools/wrong_answers/ (written as learners write them, none a copy of a
catalogue entry), then the right answers there, which must all pass.
"Named": the verdict carries a catalogued mistake or a property of the
inputs (Result.mistake), or what the numbers say (kit.checks.relations).
"Hint 1 fits": the rung hint(id, 1) starts at right after is the rung the
wrong answer was labelled with (counted where the exercise's own
catalogue or property named it: a relation's hint is its symptom's).

    python tools/naming.py               # every exercise
    python tools/naming.py grpo_loss     # some of them
"""

import contextlib
import io
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.pop("KIT_STRICT", None)

from kit.checks import EXERCISES, check, relations  # noqa: E402
from tools.wrong_answers import RIGHT, WRONG  # noqa: E402
from tools.wrong_answers import losses, trainers  # noqa: E402, F401


def graded(exercise_id, answer):
    """(Result, the rung hint 1 starts at now or None), printing nothing."""
    exercise = EXERCISES[exercise_id]
    exercise.failures, exercise.last_help = 0, None  # a fresh kernel's
    with contextlib.redirect_stdout(io.StringIO()):
        result = check(exercise_id, answer)
    rung = exercise.last_help[0] if exercise.last_help else None
    return result, rung


def replay(only=()):
    """Rows (source, exercise id, answer name, named, fits) and the right
    answers rejected."""
    rows, rejected = [], []
    wanted = (lambda e: e in only) if only else (lambda e: True)
    for exercise in EXERCISES.values():
        if not wanted(exercise.id):
            continue
        for mistake in exercise.mistakes:
            result, rung = graded(exercise.id, mistake.code)
            rows.append(("catalogue", exercise.id, mistake.id,
                         result.mistake, rung == mistake.rung))
    for exercise_id, wanted_rung, answer in WRONG:
        if wanted(exercise_id):
            result, rung = graded(exercise_id, answer)
            if result:
                rejected.append((exercise_id, answer.__name__,
                                 "a wrong answer passed"))
            rows.append(("new", exercise_id, answer.__name__,
                         result.mistake, rung == wanted_rung))
    for exercise_id, answer in RIGHT:
        if wanted(exercise_id):
            result, _ = graded(exercise_id, answer)
            if not result:
                rejected.append((exercise_id, answer.__name__,
                                 result.message))
    return rows, rejected


def by_the_numbers(row):
    """Whether the row's name is a relation of kit.checks.relations (what
    the numbers say), not the exercise's own mistake or property: such a
    name has no rung of its own, hint 1 is its symptom's or the next."""
    own = {p.key for p in EXERCISES[row[1]].properties} | {
        m.id for m in EXERCISES[row[1]].mistakes}
    return bool(row[3]) and row[3] not in own and (
        row[3].removeprefix("property:") in relations.IDS)


def shares(rows):
    """(rows, named, hint 1 fits, named by the numbers); hint 1 is
    counted on the names the exercise's own catalogue and properties
    give."""
    named = [row for row in rows if row[3]]
    numbers = [row for row in named if by_the_numbers(row)]
    fits = [row for row in named if row[4] and not by_the_numbers(row)]
    return len(rows), len(named), len(fits), len(numbers)


def main(only):
    rows, rejected = replay(only)
    for source, exercise_id, name, mistake, fits in rows:
        if source == "new":
            print(f"{exercise_id:22} {name:34} {mistake or '-':42} "
                  f"{'hint 1 fits' if fits else 'hint 1 misses'}")
    for source in ("catalogue", "new"):
        total, named, fits, numbers = shares(
            [r for r in rows if r[0] == source])
        print(f"{source}: {named}/{total} named ({100 * named / total:.0f} "
              f"%), {numbers} of them by what the numbers say; hint 1 fits "
              f"{fits}/{named - numbers} of the others "
              f"({100 * fits / max(named - numbers, 1):.0f} %)")
    kinds = Counter("numbers" if by_the_numbers(r) else "property"
                    if r[3].startswith("property:") else "mistake"
                    for r in rows if r[0] == "new" and r[3])
    print(f"new answers named by a property: {kinds['property']}, by a "
          f"catalogued mistake: {kinds['mistake']}, by what the numbers "
          f"say: {kinds['numbers']}")
    for exercise_id, name, why in rejected:
        print(f"REJECTED right answer {exercise_id} {name}: {why}")
    tried = sum(1 for exercise_id, _ in RIGHT
                if not only or exercise_id in only)
    print(f"right answers rejected: {len(rejected)} of {tried}")
    return 1 if rejected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Help that fits what check() saw: the hint ladders and where they start.

After a failure, `hint(id, 1)` starts from what was seen: a named mistake's
rung (`Mistake.rung`), a named property's (`Property.rung`), or the
symptom the machinery told apart (a detached result, a wrong shape or
dtype, an input changed in place, a constant factor, a crash) — at the
exercise's rung for it (`Exercise.symptoms`) or with the symptom's own
hint (SYMPTOMS says its line). The rest of the ladder follows in order. With nothing told apart, each failure gives the
next rung in turn. Where a ladder stands is kept on its exercise.
"""

from kit.checks.messages import MESSAGES
from kit.i18n import text

# what the machinery can tell apart -> its own hint in messages.MESSAGES
SYMPTOMS = {"detached": "symptom.detached", "shape": "symptom.shape",
            "in_place": "symptom.in_place", "scaled": "symptom.scaled",
            "timeout": "symptom.timeout", "crash": "symptom.crash",
            "backward": "symptom.backward"}


def symptom_hint(symptom, factor=None):
    """The symptom's own hint; {factor} is filled in for "scaled"."""
    return text(MESSAGES, SYMPTOMS[symptom], factor=factor or 0)


def help_after(exercise, result):
    """Remember what the failure showed; return the line check() prints."""
    exercise.last_help = None
    if result.status != "failed":
        return None
    hints = exercise.hints
    named = [m for m in exercise.mistakes if m.id == result.mistake]
    if named:
        mistake = named[0]
        if mistake.rung:
            exercise.last_help = (mistake.rung, hints[mistake.rung - 1],
                                  *after_mistake(mistake, result))
        return text(MESSAGES, "hint.named", text=mistake.hint)
    broken = [p for p in exercise.properties if p.key == result.mistake]
    if broken:  # the rung that teaches the idea the answer misses
        rung = broken[0].rung
        exercise.last_help = (rung, hints[rung - 1])
        return text(MESSAGES, "hint.line", level=rung, count=len(hints),
                    text=hints[rung - 1])
    symptom = result.symptom
    if symptom in exercise.symptoms:
        rung = exercise.symptoms[symptom]
        exercise.last_help = (rung, hints[rung - 1])
        return text(MESSAGES, "hint.line", level=rung, count=len(hints),
                    text=hints[rung - 1])
    if symptom in SYMPTOMS:
        line = symptom_hint(symptom, result.factor)
        exercise.last_help = (None, line)
        return text(MESSAGES, "hint.named", text=line)
    if not hints:
        return None
    exercise.failures += 1
    level = min(exercise.failures, len(hints))
    return text(MESSAGES, "hint.line", level=level, count=len(hints),
                text=hints[level - 1])


def after_mistake(mistake, result):
    """The hint after a named mistake's rung: what broke, as measured, and
    the mistake's own fix — not the ladder's next rung, which is about
    another idea (shift, reshape) than the one this answer missed."""
    if not result.measured:
        return (mistake.hint,)
    return (text(MESSAGES, "hint.measured", line=result.measured,
                 fix=mistake.hint),)


def ladder(exercise):
    """The hints hint() serves now: from what the last failure showed,
    then the rest of the ladder. As many levels as the ladder has (the
    notebook says "levels 1 to 4"): what broke takes the place of the last
    rung, an idea the answer that was named got right (a named mistake
    matched its loss and gradient too)."""
    if exercise.last_help is None:
        return exercise.hints
    rung, first, *follow = exercise.last_help
    rest = [h for i, h in enumerate(exercise.hints, 1) if i != rung]
    return ([first, *follow] + rest)[:len(exercise.hints)]


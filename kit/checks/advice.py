"""Help that fits what check() saw: the hint ladders and where they start.

After a failure, `hint(id, 1)` starts from what was seen: a named mistake's
rung (`Mistake.rung`), or the symptom the machinery told apart (a detached
result, a wrong shape or dtype, an input changed in place, a constant
factor, a crash) — at the exercise's rung for it (`Exercise.symptoms`) or
with the symptom's own hint below. The rest of the ladder follows in order.
With nothing told apart, each failure gives the next rung in turn.
"""

# what the machinery can tell apart, and the hint for each where the
# exercise names no rung of its own; {factor} is filled in for "scaled"
SYMPTOM_HINTS = {
    "detached": "the result carries no gradient: build it from the inputs "
                "with torch operations, with no .detach(), .item(), "
                "torch.tensor(...) or torch.no_grad() on the way (the "
                "Trainer calls .backward() on it)",
    "shape": "return what the docstring's `Shape:` line says: print "
             "x.shape and x.dtype on the way to see where they change",
    "in_place": "leave the inputs as they came: build new tensors (x = "
                "x.masked_fill(m, 0), x = x * m) instead of editing them "
                "(x[...] = ..., x.mul_(...)); the caller uses them again",
    "scaled": "yours is {factor:.4g}× the reference wherever it differs: "
              "the rest is right, so look for a constant factor (what you "
              "divide by, a sum where a mean belongs, an extra multiplier)",
    "timeout": "a loop whose condition never changes, or one over far more "
               "items than the inputs hold: print inside it on small inputs "
               "to see which",
    "crash": "read the error's last line, then run your code by hand on "
             "small inputs and print the shapes just before the line that "
             "raised",
}

_failures = {}  # exercise id -> unnamed failures with no symptom so far
_seen = {}  # exercise id -> (rung or None, hint text) of the last failure


def help_after(exercise, result):
    """Remember what the failure showed; return the line check() prints."""
    _seen.pop(exercise.id, None)
    if result.status != "failed":
        return None
    named = [m for m in exercise.mistakes if m.id == result.mistake]
    if named:
        mistake = named[0]
        if mistake.rung:
            _seen[exercise.id] = (mistake.rung, exercise.hints[
                mistake.rung - 1])
        return f"hint: {mistake.hint}"
    symptom = result.symptom
    if symptom in exercise.symptoms:
        rung = exercise.symptoms[symptom]
        _seen[exercise.id] = (rung, exercise.hints[rung - 1])
        return f"hint {rung}/{len(exercise.hints)}: {_seen[exercise.id][1]}"
    if symptom in SYMPTOM_HINTS:
        text = SYMPTOM_HINTS[symptom].format(factor=result.factor or 0)
        _seen[exercise.id] = (None, text)
        return f"hint: {text}"
    if not exercise.hints:
        return None
    level = _failures[exercise.id] = _failures.get(exercise.id, 0) + 1
    level = min(level, len(exercise.hints))
    return f"hint {level}/{len(exercise.hints)}: {exercise.hints[level - 1]}"


def ladder(exercise):
    """The hints hint() serves now: from what the last failure showed."""
    if exercise.id not in _seen:
        return list(exercise.hints)
    rung, text = _seen[exercise.id]
    return [text] + [h for i, h in enumerate(exercise.hints, 1)
                     if i != rung]


def forget():
    """Start every ladder afresh (a test, a new learner)."""
    _failures.clear()
    _seen.clear()

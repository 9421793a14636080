"""tools/mutants.py makes its wrong answers mechanically: enough of them,
over every exercise, each one change away from the solved cell and still
Python. (Grading them all is the tool's job, not the suite's.)"""

import ast

from kit.checks import EXERCISES
from tools import mutants


def all_mutants():
    out = {}
    for name in sorted({e.notebook for e in EXERCISES.values()}):
        for exercise_id, code, _, lines in mutants.exercise_cells(name):
            out[exercise_id] = (code, mutants.mutants(code, lines))
    return out


def test_every_exercise_gets_mutants_and_300_in_all():
    made = all_mutants()
    assert set(made) == set(EXERCISES)
    assert all(found for _, found in made.values())
    assert sum(len(found) for _, found in made.values()) >= 300


def test_a_mutant_is_one_change_on_a_solution_line():
    code, found = all_mutants()["causal_lm_loss"]
    original = ast.unparse(ast.parse(code)).splitlines()
    for line, label, text in found:
        ast.parse(text)
        changed = [a for a, b in zip(original, text.splitlines()) if a != b]
        assert len(changed) <= 2, label  # a statement may span lines
    labels = {label for _, label, _ in found}
    # the shift bugs: a slice bound dropped, off by one
    assert "slice bound -1 dropped" in labels
    assert "slice bound 1 off by one" in labels

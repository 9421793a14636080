"""Notebook 07's ★★ checkers accept the solution, reject and name each
known mistake, and call the stub "not attempted"."""

import pytest

from conftest import status
from kit import checks, losses
from kit.checks import EXERCISES

pytestmark = pytest.mark.usefixtures("lenient")

IDS = ("dapo_loss", "dr_grpo_loss")


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_kit_and_the_printed_solution_pass(exercise_id):
    exercise = EXERCISES[exercise_id]
    assert status(exercise_id, getattr(losses, exercise_id)) == "passed"
    assert status(exercise_id, exercise.solution) == "passed"


@pytest.mark.parametrize("exercise_id, mistake", [
    (e, m.id) for e in IDS for m in EXERCISES[e].mistakes])
def test_each_mistake_is_rejected_and_named(exercise_id, mistake):
    code = {m.id: m.code for m in EXERCISES[exercise_id].mistakes}[mistake]
    result = checks.check(exercise_id, code)
    assert result.status == "failed"
    assert result.mistake == mistake


def stub(per_token_logps, old_per_token_logps, advantages, completion_mask,
         epsilon=0.2, beta=0.0, ref_per_token_logps=None, **normaliser):
    raise NotImplementedError


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_stub_is_not_attempted(exercise_id):
    assert status(exercise_id, stub) == "not attempted"


def test_the_exercises_come_in_the_notebook_order():
    numbers = [EXERCISES[e].number for e in IDS]
    assert numbers == [1, 2]
    assert {EXERCISES[e].notebook for e in IDS} == {"07_loss_types"}

"""Notebook 07's ★★ GSPO checker: it accepts the kit's sequence-level
grpo_loss and the printed solution, rejects and names each known mistake
(the four of issue 53 among them), and calls the stub "not attempted"."""

import inspect
import re

import pytest
import torch

from conftest import status
from kit import checks, losses
from kit.builder import paths
from kit.checks import EXERCISES
from kit.checks import nb07_sequence_ratio as gspo

pytestmark = pytest.mark.usefixtures("lenient")

EXERCISE = EXERCISES["gspo_loss"]


def test_the_kit_and_the_printed_solution_pass():
    assert status("gspo_loss", gspo.kit_gspo_loss) == "passed"
    assert status("gspo_loss", EXERCISE.solution) == "passed"


@pytest.mark.parametrize("epsilon", [0.05, 0.2, 0.3])
def test_the_printed_solution_is_the_kits_sequence_level_grpo_loss(epsilon):
    # TRL 1.16's too: tests/test_loss_types.py holds the kit's to it
    g = torch.Generator().manual_seed(7)
    old = -torch.rand(5, 7, generator=g) * 3
    logps = (old + torch.randn(5, 7, generator=g) * 0.3).requires_grad_()
    mask = (torch.arange(7) < torch.tensor([[1], [7], [4], [2], [6]]))
    advantages = torch.randn(5, generator=g)
    mine = gspo.gspo_loss(logps, old, advantages, mask, epsilon)
    kit = losses.grpo_loss(logps, old, advantages, mask, epsilon,
                           importance_sampling_level="sequence")
    assert torch.allclose(mine, kit, atol=1e-7)
    mine_grad, = torch.autograd.grad(mine, logps)
    kit_grad, = torch.autograd.grad(kit, logps)
    assert mine_grad.abs().sum() > 0  # the padding's log-probs get none
    assert torch.allclose(mine_grad, kit_grad, atol=1e-7)
    assert not mine_grad[~mask].any()


def test_the_notebook_prints_the_checkers_solution():
    source = (paths.SOURCES / "07_loss_types.py").read_text()
    region = re.search(r"def gspo_loss\(.*?### BEGIN SOLUTION\n(.*?)\n"
                       r"    ### END SOLUTION", source, re.S).group(1)
    printed = inspect.getsource(EXERCISE.solution)
    assert region in printed


def test_the_issues_four_mistakes_are_catalogued():
    ids = {m.id for m in EXERCISE.mistakes}
    assert {"token_ratios_averaged", "no_length_normalisation",
            "clipped_per_token", "mask_forgotten"} <= ids


@pytest.mark.parametrize("mistake", [m.id for m in EXERCISE.mistakes])
def test_each_mistake_is_rejected_and_named(mistake):
    code = {m.id: m.code for m in EXERCISE.mistakes}[mistake]
    result = checks.check("gspo_loss", code)
    assert result.status == "failed"
    assert result.mistake == mistake


def test_dividing_by_the_padded_width_is_named_by_padding():
    def by_width(per_token_logps, old_per_token_logps, advantages,
                 completion_mask, epsilon=0.2):
        log_ratio = (per_token_logps - old_per_token_logps) * completion_mask
        ratio = torch.exp(log_ratio.sum(1) / completion_mask.shape[1])
        clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
        return -torch.min(ratio * advantages, clipped * advantages).mean()

    assert checks.check("gspo_loss", by_width).mistake == "property:padding"


def stub(per_token_logps, old_per_token_logps, advantages, completion_mask,
         epsilon=0.2):
    raise NotImplementedError


def test_the_stub_is_not_attempted():
    assert status("gspo_loss", stub) == "not attempted"


def test_it_is_notebook_07s_fourth_exercise():
    assert (EXERCISE.notebook, EXERCISE.number, EXERCISE.stars) == (
        "07_loss_types", 4, 2)

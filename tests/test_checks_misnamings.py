"""Wrong answers that got a name that did not explain their fault (issue
62, step 4): each now gets a name that fits, or none, and never a wrong
one. A name fits when it explains the whole difference: every observation
that differs is one it predicts."""

import importlib
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("lenient")


def _tool(name):
    """A module of tools/, imported as tools/naming.py imports its own."""
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module(f"tools.{name}")


def graded(exercise_id, answer):
    """(Result, the rung hint 1 starts at), as tools/naming.py grades."""
    return _tool("naming").graded(exercise_id, answer)


# ------------------------------------------------------------ dpo_loss

def _logratios(pc, pr, rc, rr):
    return pc - rc, pr - rr


def beta_times_the_loss(pc, pr, rc, rr, beta=0.1):
    chosen, rejected = _logratios(pc, pr, rc, rr)
    losses = -F.logsigmoid(chosen - rejected) * beta
    return losses, beta * chosen.detach(), beta * rejected.detach()


def beta_times_softplus(pc, pr, rc, rr, beta=0.1):
    chosen, rejected = _logratios(pc, pr, rc, rr)
    losses = beta * F.softplus(rejected - chosen)
    return losses, (beta * chosen).detach(), (beta * rejected).detach()


def pi_minus_ref_logratios(pc, pr, rc, rr, beta=0.1):
    # eric-mitchell's two lines, fed the per-side log-ratios
    pi_logratios = (pc - rc) - (pr - rr)
    ref_logratios = rc - rr
    losses = -F.logsigmoid(beta * (pi_logratios - ref_logratios))
    return losses, beta * (pc - rc).detach(), beta * (pr - rr).detach()


def beta_squared(pc, pr, rc, rr, beta=0.1):
    chosen, rejected = _logratios(pc, pr, rc, rr)
    losses = -F.logsigmoid(beta * beta * (chosen - rejected))
    return losses, beta * chosen.detach(), beta * rejected.detach()


@pytest.mark.parametrize("answer", ["beta_outside_the_logsigmoid",
                                    beta_times_the_loss, beta_times_softplus])
def test_beta_outside_the_logsigmoid_is_catalogued(answer):
    if isinstance(answer, str):
        answer = getattr(_tool("wrong_answers.losses"), answer)
    result, rung = graded("dpo_loss", answer)
    assert result.mistake == "beta_outside_logsigmoid"
    assert rung == 4  # the loss is −logsigmoid(β · margin)


@pytest.mark.parametrize("answer", ["reference_subtracted_again",
                                    pi_minus_ref_logratios, beta_squared])
def test_wrong_losses_beside_right_rewards_are_the_losses(answer):
    # not "the rejected side": the rejected rewards are right
    if isinstance(answer, str):
        answer = getattr(_tool("wrong_answers.losses"), answer)
    result, rung = graded("dpo_loss", answer)
    assert result.mistake == "property:losses"
    assert rung == 2  # the margin, from the two log-ratios


def test_a_side_is_named_only_when_its_rewards_differ_too():
    losses = _tool("wrong_answers.losses")
    result, _ = graded("dpo_loss", losses.reference_subtracted_twice)
    assert result.mistake == "property:rejected_side"


# ---------------------------------------------------- dpo_compute_loss

def _split_by_slicing(trainers):
    class SlicedAtTheBatchSize(trainers._DPO):
        def compute_loss(self, model, inputs, return_outputs=False,
                         num_items_in_batch=None):
            B = self.args.per_device_train_batch_size
            logps, ref_logps = self.logps(model, inputs), self.ref_logps(
                inputs)
            losses, chosen_rewards, rejected_rewards = trainers.dpo_loss(
                logps[:B], logps[B:], ref_logps[:B], ref_logps[B:],
                beta=self.args.beta)
            self._remember(chosen_rewards, rejected_rewards, logps[:B],
                           logps[B:])
            loss = self.divided(losses, num_items_in_batch)
            return (loss, {"chosen_logps": logps[:B]}) if return_outputs \
                else loss
    return SlicedAtTheBatchSize


@pytest.mark.parametrize("split", ["torch.split", "slicing"])
def test_a_split_that_crashes_shows_its_own_error(split):
    trainers = _tool("wrong_answers.trainers")
    answer = (trainers.SplitByTheBatchSize if split == "torch.split"
              else _split_by_slicing(trainers))
    result, _ = graded("dpo_compute_loss", answer)
    assert result.status == "failed"
    # a crash on 4 pairs is no division by the wrong count, nor any other
    # property of the inputs this checker knows (what the error says, or
    # no name, is what fits)
    properties = _tool("naming").EXERCISES["dpo_compute_loss"].properties
    assert result.mistake not in {p.key for p in properties}
    assert "RuntimeError" in result.message
    assert "must match the size of tensor" in result.message


# ----------------------------------------------------------- grpo_loss

def _kl(logps, ref):
    return torch.exp(ref - logps) - (ref - logps) - 1


def min_ratio_column(per_token_logps, old_per_token_logps, advantages,
                     completion_mask, epsilon=0.2, beta=0.0,
                     ref_per_token_logps=None):
    ratio = (per_token_logps - old_per_token_logps).exp()
    clipped_ratio = ratio.clamp(1 - epsilon, 1 + epsilon)
    per_token = -(torch.min(ratio, clipped_ratio) * advantages[:, None])
    if beta:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    mask = completion_mask.float()
    return ((per_token * mask).sum(-1) / mask.sum(-1)).mean()


def min_ratio_by_where(per_token_logps, old_per_token_logps, advantages,
                       completion_mask, epsilon=0.2, beta=0.0,
                       ref_per_token_logps=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    smaller = torch.where(ratio > 1 + epsilon, 1 + epsilon, ratio)
    per_token = -smaller * advantages.unsqueeze(1)  # min(ratio, clipped)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    mask = completion_mask.float()
    return ((per_token * mask).sum(1) / mask.sum(1)).mean()


@pytest.mark.parametrize("answer", ["min_of_the_ratios", min_ratio_column,
                                    min_ratio_by_where])
def test_the_min_of_the_ratios_is_catalogued(answer):
    if isinstance(answer, str):
        answer = getattr(_tool("wrong_answers.losses"), answer)
    result, rung = graded("grpo_loss", answer)
    assert result.mistake == "min_of_the_ratios"
    assert rung == 2  # −min(ratio·A, clipped·A)


def clamp_min_only(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2, beta=0.0,
                   ref_per_token_logps=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = ratio.clamp_min(1 - epsilon)  # "the ratio must not collapse"
    a = advantages.unsqueeze(1)
    per_token = -torch.min(ratio * a, clipped * a)
    if beta > 0:
        per_token = per_token + beta * _kl(per_token_logps,
                                           ref_per_token_logps)
    mask = completion_mask.float()
    return ((per_token * mask).sum(1) / mask.sum(1)).mean()


@pytest.mark.parametrize("answer", ["clipped_from_below_only",
                                    clamp_min_only])
def test_a_clip_from_below_only_is_catalogued(answer):
    # not only "ratios beyond the clip", whose hint is the min: the min is
    # right, the clip has one bound
    if isinstance(answer, str):
        answer = getattr(_tool("wrong_answers.losses"), answer)
    result, rung = graded("grpo_loss", answer)
    assert result.mistake == "clipped_below_only"
    assert rung == 3  # clamp(ratio, 1 - epsilon, 1 + epsilon)

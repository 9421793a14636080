"""Notebook 03's checkers accept the reference and reject known mistakes."""

import pytest
import torch
import torch.nn.functional as F

from conftest import status
from kit import checks, losses
from kit.checks.nb03_dpo_losses import fixed_snippet, published_snippet
from kit.trainers import DPOTrainer

pytestmark = pytest.mark.usefixtures("lenient")


# ------------------------------------------------------------ sequence_logps

def logps_unshifted(logits, input_ids, completion_mask):
    logprobs = logits.log_softmax(-1)
    token = logprobs.gather(-1, input_ids.unsqueeze(-1)).squeeze(-1)
    return (token * completion_mask).sum(-1)


def logps_unmasked(logits, input_ids, completion_mask):
    logprobs = logits[:, :-1].log_softmax(-1)
    return logprobs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1).sum(-1)


def logps_mean(logits, input_ids, completion_mask):
    total = losses.sequence_logps(logits, input_ids, completion_mask)
    return total / completion_mask[:, 1:].sum(-1)


def logps_of_probabilities(logits, input_ids, completion_mask):
    probs = logits[:, :-1].softmax(-1)
    token = probs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (token * completion_mask[:, 1:]).sum(-1)


def test_sequence_logps_accepts_the_reference():
    assert status("sequence_logps", losses.sequence_logps) == "passed"


@pytest.mark.parametrize("wrong", [logps_unshifted, logps_unmasked, logps_mean,
                                   logps_of_probabilities])
def test_sequence_logps_rejects_known_mistakes(wrong):
    assert status("sequence_logps", wrong) == "failed"


# ------------------------------------------------------------------ dpo_loss

def as_published(pc, pr, rc, rr, beta=0.1):
    """The snippet's formula: beta on the chosen side only."""
    losses_ = published_snippet(pc - rc, pr - rr, beta)
    return losses_, (beta * (pc - rc)).detach(), (beta * (pr - rr)).detach()


def sign_flipped(pc, pr, rc, rr, beta=0.1):
    losses_, chosen, rejected = losses.dpo_loss(pc, pr, rc, rr, beta)
    return -losses_, chosen, rejected


def averaged(pc, pr, rc, rr, beta=0.1):
    losses_, chosen, rejected = losses.dpo_loss(pc, pr, rc, rr, beta)
    return losses_.mean(), chosen, rejected


def rewards_without_beta(pc, pr, rc, rr, beta=0.1):
    losses_, _, _ = losses.dpo_loss(pc, pr, rc, rr, beta)
    return losses_, (pc - rc).detach(), (pr - rr).detach()


def rewards_attached(pc, pr, rc, rr, beta=0.1):
    losses_ = -F.logsigmoid(beta * ((pc - rc) - (pr - rr)))
    return losses_, beta * (pc - rc), beta * (pr - rr)


def no_reference(pc, pr, rc, rr, beta=0.1):
    return losses.dpo_loss(pc, pr, torch.zeros_like(rc), torch.zeros_like(rr),
                           beta)


def test_dpo_loss_accepts_the_reference():
    assert status("dpo_loss", losses.dpo_loss) == "passed"


@pytest.mark.parametrize("wrong", [as_published, sign_flipped, averaged,
                                   rewards_without_beta, rewards_attached,
                                   no_reference])
def test_dpo_loss_rejects_known_mistakes(wrong):
    assert status("dpo_loss", wrong) == "failed"


# --------------------------------------------------------------- dpo_snippet

def beta_on_rejected(chosen, rejected, beta):
    return -F.logsigmoid(chosen - beta * rejected)


def no_minus(chosen, rejected, beta):
    return F.logsigmoid(beta * (chosen - rejected))


def test_dpo_snippet_accepts_the_fix_and_rejects_the_original():
    assert status("dpo_snippet", fixed_snippet) == "passed"
    assert status("dpo_snippet", published_snippet) == "failed"
    assert status("dpo_snippet", beta_on_rejected) == "failed"
    assert status("dpo_snippet", no_minus) == "failed"


# ---------------------------------------------------------- dpo_compute_loss

class PolicyAsReference(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        logps = losses.sequence_logps(model(input_ids=ids, attention_mask=mask
                                            ).logits, ids,
                                      inputs["completion_mask"])
        chosen, rejected = logps.chunk(2)
        out = losses.dpo_loss(chosen, rejected, chosen.detach(),
                              rejected.detach(), beta=self.args.beta)
        loss = out[0].sum() / (num_items_in_batch or len(out[0]))
        return (loss, {}) if return_outputs else loss


class Swapped(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        swapped = {k: torch.cat(v.chunk(2)[::-1]) for k, v in inputs.items()}
        return super().compute_loss(model, swapped, return_outputs,
                                    num_items_in_batch)


class MeanOnly(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        return super().compute_loss(model, inputs, return_outputs, None)


class NoBeta(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        self.args.beta = 1.0
        return super().compute_loss(model, inputs, return_outputs,
                                    num_items_in_batch)


class Stub(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        raise NotImplementedError


def test_dpo_compute_loss_accepts_the_reference():
    assert status("dpo_compute_loss", DPOTrainer) == "passed"


@pytest.mark.parametrize("wrong", [PolicyAsReference, Swapped, MeanOnly,
                                   NoBeta])
def test_dpo_compute_loss_rejects_known_mistakes(wrong):
    assert status("dpo_compute_loss", wrong) == "failed"


def test_dpo_compute_loss_stub_is_not_attempted():
    assert status("dpo_compute_loss", Stub) == "not attempted"


# ------------------------------------- the false pass, and standing alone

DPO_CELLS = """
import torch
from kit.losses import dpo_loss
from kit.trainers import DPOTrainer

def sequence_logps(logits, input_ids, completion_mask):
    {logps}

class MyDPOTrainer(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        logps = sequence_logps(logits, ids, inputs[{mask_key!r}])
        with torch.no_grad():
            ref_logits = self.ref_model(input_ids=ids,
                                        attention_mask=mask).logits
            ref_logps = sequence_logps(ref_logits, ids, inputs[{mask_key!r}])
        chosen, rejected = logps.chunk(2)
        ref_chosen, ref_rejected = ref_logps.chunk(2)
        losses, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.args.beta)
        loss = losses.sum() / (num_items_in_batch or len(losses))
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (loss, {{"chosen_logps": chosen}}) if return_outputs else loss
"""
RIGHT_LOGPS = ("logprobs = logits[:, :-1].log_softmax(-1)\n"
               "    token = logprobs.gather(-1, input_ids[:, 1:, None])"
               "[..., 0]\n"
               "    return (token * completion_mask[:, 1:]).sum(-1)")


def learners_trainer(logps=RIGHT_LOGPS, mask_key="completion_mask"):
    scope = {}
    exec(DPO_CELLS.format(logps=logps, mask_key=mask_key), scope)
    return scope


def test_attention_mask_as_completion_mask_no_longer_passes(capsys):
    scope = learners_trainer(mask_key="attention_mask")
    result = checks.check("dpo_compute_loss", scope["MyDPOTrainer"])
    assert result.status == "failed"
    assert result.mistake == "attention_mask_as_completion_mask"
    assert "logged log-probs and rewards" in capsys.readouterr().out


def test_the_learners_notebook_answer_passes(capsys):
    scope = learners_trainer()
    assert status("dpo_compute_loss", scope["MyDPOTrainer"]) == "passed"
    assert "not done yet" not in capsys.readouterr().out


def test_dpo_compute_loss_stands_alone_when_exercise_1_is_not_done(capsys):
    scope = learners_trainer(logps="raise NotImplementedError")
    learners = scope["sequence_logps"]
    assert status("dpo_compute_loss", scope["MyDPOTrainer"]) == "passed"
    assert ("exercise 1 is not done yet: using the kit's `sequence_logps` "
            "to check this one") in capsys.readouterr().out
    assert scope["sequence_logps"] is learners


# ------------------------- issue 17: wrong answers that are now named

def named(exercise_id, candidate):
    result = checks.check(exercise_id, candidate)
    assert result.status == "failed"
    return result.mistake


def logps_via_product(logits, input_ids, completion_mask):
    probs = torch.softmax(logits, dim=-1)[:, :-1]
    token = torch.gather(probs, 2, input_ids[:, 1:, None])[..., 0]
    token = token ** completion_mask[:, 1:]  # 1 where masked out
    return torch.log(torch.prod(token, dim=1))


def test_a_log_of_a_product_underflows_and_is_named(capsys):
    # it agrees on short completions: only long ones expose the underflow
    assert named("sequence_logps", logps_via_product) == "log_of_product"
    assert "-inf" in capsys.readouterr().out


def swapped_margin(pc, pr, rc, rr, beta=0.1):
    margin = (pr - rr) - (pc - rc)
    return (-F.logsigmoid(beta * margin), beta * (pc - rc).detach(),
            beta * (pr - rr).detach())


def with_sigmoid(pc, pr, rc, rr, beta=0.1):
    margin = (pc - rc) - (pr - rr)
    return (-torch.sigmoid(beta * margin), beta * (pc - rc).detach(),
            beta * (pr - rr).detach())


@pytest.mark.parametrize("wrong, mistake", [
    (swapped_margin, "chosen_rejected_swapped"),
    (with_sigmoid, "sigmoid_not_logsigmoid"),
    (sign_flipped, "no_minus"),
])
def test_dpo_loss_names_these_mistakes(wrong, mistake):
    assert named("dpo_loss", wrong) == mistake


@pytest.mark.parametrize("wrong, mistake", [
    (published_snippet, "published_snippet"),
    (beta_on_rejected, "beta_on_rejected"), (no_minus, "no_minus")])
def test_dpo_snippet_names_these_mistakes(wrong, mistake):
    assert named("dpo_snippet", wrong) == mistake


class ChunksInTheWrongOrder(DPOTrainer):
    """As a learner writes it: their own cell, rejected taken first."""

    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        cm = inputs["completion_mask"]
        logps = losses.sequence_logps(
            model(input_ids=ids, attention_mask=mask).logits, ids, cm)
        with torch.no_grad():
            ref = losses.sequence_logps(self.ref_model(
                input_ids=ids, attention_mask=mask).logits, ids, cm)
        rejected, chosen = logps.chunk(2)
        ref_rejected, ref_chosen = ref.chunk(2)
        out = losses.dpo_loss(chosen, rejected, ref_chosen, ref_rejected,
                              beta=self.args.beta)
        loss = out[0].sum() / (num_items_in_batch or len(out[0]))
        self._remember(out[1], out[2], chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss


class DetachedAtTheEnd(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, False, num_items_in_batch)
        return (loss.detach(), {}) if return_outputs else loss.detach()


class PerPair(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        cm = inputs["completion_mask"]
        logps = losses.sequence_logps(
            model(input_ids=ids, attention_mask=mask).logits, ids, cm)
        with torch.no_grad():
            ref = losses.sequence_logps(self.ref_model(
                input_ids=ids, attention_mask=mask).logits, ids, cm)
        out = losses.dpo_loss(*logps.chunk(2), *ref.chunk(2),
                              beta=self.args.beta)
        self._remember(out[1], out[2], *logps.chunk(2))
        return (out[0], {}) if return_outputs else out[0]


class OverGA(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs,
                                    num_items_in_batch)
        ga = self.args.gradient_accumulation_steps
        if return_outputs:
            return loss[0] / ga, loss[1]
        return loss / ga


@pytest.mark.parametrize("wrong, mistake", [
    (Swapped, "chunks_swapped"), (ChunksInTheWrongOrder, "chunks_swapped"),
    (DetachedAtTheEnd, "detached_loss"), (PerPair, "per_pair_losses"),
    (OverGA, "divides_by_ga"), (MeanOnly, "mean_over_micro_batch")])
def test_dpo_compute_loss_names_these_mistakes(wrong, mistake):
    assert named("dpo_compute_loss", wrong) == mistake


class PerPairUnnamed(PerPair):
    """Per-pair losses, and an extra slip: no catalogued mistake fits."""

    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        return 2 * super().compute_loss(model, inputs, False,
                                        num_items_in_batch)


def test_per_pair_losses_are_told_what_was_expected_not_a_checker_error(
        capsys):
    result = checks.check("dpo_compute_loss", PerPairUnnamed)
    assert result.status == "failed" and result.mistake is None
    out = capsys.readouterr().out
    assert "RuntimeError" not in out and "raised" not in out
    assert "should return one number (a 0-d tensor)" in out
    assert "got shape (6,)" in out


def test_the_checker_leaves_the_notebooks_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    checks.check("dpo_compute_loss", DPOTrainer)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("exercise_id", ["sequence_logps", "dpo_loss",
                                         "dpo_snippet", "dpo_compute_loss"])
def test_each_mistake_has_its_rung_on_the_hint_ladder(exercise_id):
    exercise = checks.EXERCISES[exercise_id]
    for mistake in exercise.mistakes:
        assert mistake.rung in range(1, len(exercise.hints) + 1), mistake.id


def logps_without_a_graph(logits, input_ids, completion_mask):
    return losses.sequence_logps(logits.detach(), input_ids, completion_mask)


def dpo_loss_detached(pc, pr, rc, rr, beta=0.1):
    losses_, chosen, rejected = losses.dpo_loss(pc, pr, rc, rr, beta)
    return losses_.detach(), chosen, rejected


def test_detached_answers_fail_with_their_own_name():
    # right values, no gradient: DPO could not train with either
    assert named("sequence_logps", logps_without_a_graph) == "detached"
    assert named("dpo_loss", dpo_loss_detached) == "losses_detached"

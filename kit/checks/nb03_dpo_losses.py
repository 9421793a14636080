"""Checkers for notebook 03's functions; `dpo_trainer.py` has the override."""

import itertools

import torch
import torch.nn.functional as F

from kit import losses
from kit.checks.compare import (Mismatch, Raised, attempt, call, compare,
                                describe_error, same)
from kit.checks.core import Mistake, exercise
from kit.checks.messages import MESSAGES
from kit.i18n import text
from kit.losses import published_snippet

NOTEBOOK = "03_dpo_compute_loss"


# --------------------------------------------------------- sequence_logps

def sequence_logps(logits, input_ids, completion_mask):
    """Summed log-probs of the completion tokens. Shape: (B,)."""
    logprobs = logits[:, :-1, :].log_softmax(-1)  # (B, T-1, V)
    targets = input_ids[:, 1:]  # (B, T-1)
    token_logps = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (token_logps * completion_mask[:, 1:]).sum(-1)  # (B,)


def logps_not_shifted(logits, input_ids, completion_mask):
    logprobs = logits.log_softmax(-1)
    token = logprobs.gather(-1, input_ids.unsqueeze(-1)).squeeze(-1)
    return (token * completion_mask).sum(-1)


def logps_prompt_included(logits, input_ids, completion_mask):
    logprobs = logits[:, :-1].log_softmax(-1)
    token = logprobs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return token.sum(-1)  # every position: prompt and padding too


def logps_mean(logits, input_ids, completion_mask):
    logprobs = logits[:, :-1].log_softmax(-1)
    token = logprobs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = completion_mask[:, 1:]
    return (token * mask).sum(-1) / mask.sum(-1)


def logps_mask_not_shifted(logits, input_ids, completion_mask):
    logprobs = logits[:, :-1].log_softmax(-1)
    token = logprobs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return (token * completion_mask[:, :-1]).sum(-1)


def logps_log_of_product(logits, input_ids, completion_mask):
    probs = logits[:, :-1].softmax(-1)
    token = probs.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    mask = completion_mask[:, 1:]
    return torch.log(torch.where(mask.bool(), token, 1.0).prod(-1))


def logps_detached(logits, input_ids, completion_mask):
    with torch.no_grad():
        return losses.sequence_logps(logits, input_ids, completion_mask)


def _logps_case(seed, sizes=(2, 5, 3, 4), length=9, vocab=13, prompt=4):
    """Random logits over a prompt of `prompt` tokens, completions of
    `sizes` tokens, padding after them."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(len(sizes), length, vocab, generator=g)
    input_ids = torch.randint(0, vocab, (len(sizes), length), generator=g)
    completion_mask = torch.zeros(len(sizes), length, dtype=torch.long)
    for row, size in enumerate(sizes):
        completion_mask[row, prompt:prompt + size] = 1
    return logits, input_ids, completion_mask


# Short completions, and long ones: 60 tokens of probability ~0.05 multiply
# to ~1e-78, which float32 rounds to 0 (log: -inf). Sums of logs do not.
# Completions from position 0 (an empty prompt): no position predicts the
# first token, and a shift by torch.roll wraps it around to the end.
LOGPS_CASES = {"case 0": dict(seed=0), "case 1": dict(seed=1),
               "long completions": dict(seed=2, sizes=(90, 60, 75, 40),
                                        length=100),
               "completions from position 0": dict(seed=3, prompt=0)}


@exercise("sequence_logps", stars=1, notebook=NOTEBOOK,
          kit_code=("kit.losses:sequence_logps",),
          answer=losses.sequence_logps, solution=sequence_logps, mistakes=[
              Mistake("not_shifted", logps_not_shifted, rung=1),
              Mistake("prompt_included", logps_prompt_included, rung=3),
              Mistake("mean_not_sum", logps_mean, rung=3),
              Mistake("mask_not_shifted", logps_mask_not_shifted, rung=1),
              Mistake("log_of_product", logps_log_of_product, rung=2),
              Mistake("detached", logps_detached, rung=4),
          ])
def observe_sequence_logps(candidate):
    seen = {}
    for name, case in LOGPS_CASES.items():
        logits, input_ids, completion_mask = _logps_case(**case)
        seen[f"sequence log-probs ({name})"] = out = attempt(
            call, candidate, dict(logits=logits.requires_grad_(),
                                  input_ids=input_ids,
                                  completion_mask=completion_mask))
    # DPO trains through these log-probs: the gradient must reach the logits
    seen["a gradient back to the logits (no .detach(), no no_grad)"] = (
        isinstance(out, torch.Tensor) and out.requires_grad)
    return seen


# --------------------------------------------------------------- dpo_loss

def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
             ref_rejected_logps, beta=0.1):
    """Eq. 7 of Rafailov et al.: one loss per pair and the two rewards."""
    chosen_logratios = policy_chosen_logps - ref_chosen_logps  # (B,)
    rejected_logratios = policy_rejected_logps - ref_rejected_logps  # (B,)
    logits = chosen_logratios - rejected_logratios  # (B,)
    losses = -F.logsigmoid(beta * logits)  # (B,)
    chosen_rewards = beta * chosen_logratios.detach()
    rejected_rewards = beta * rejected_logratios.detach()
    return losses, chosen_rewards, rejected_rewards


def fixed_snippet(chosen_scores, rejected_scores, beta):
    """The published snippet, corrected: β scales the whole difference."""
    return -F.logsigmoid(beta * (chosen_scores - rejected_scores))


def dpo_as_published(policy_chosen_logps, policy_rejected_logps,
                     ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (published_snippet(chosen, rejected, beta),
            beta * chosen.detach(), beta * rejected.detach())


def dpo_mean(*logps, beta=0.1):
    losses_, chosen, rejected = dpo_loss(*logps, beta=beta)
    return losses_.mean(), chosen, rejected


def dpo_rewards_attached(policy_chosen_logps, policy_rejected_logps,
                         ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (-F.logsigmoid(beta * (chosen - rejected)), beta * chosen,
            beta * rejected)


def dpo_no_reference(policy_chosen_logps, policy_rejected_logps,
                     ref_chosen_logps, ref_rejected_logps, beta=0.1):
    zero = torch.zeros_like(policy_chosen_logps)  # the reference left out
    return dpo_loss(policy_chosen_logps, policy_rejected_logps, zero, zero,
                    beta=beta)


def dpo_losses_detached(*logps, beta=0.1):
    losses_, chosen, rejected = dpo_loss(*logps, beta=beta)
    return losses_.detach(), chosen, rejected


def dpo_swapped(policy_chosen_logps, policy_rejected_logps,
                ref_chosen_logps, ref_rejected_logps, beta=0.1):
    # the wrong way round: rejected − chosen in the loss (rewards right)
    losses_, rejected, chosen = dpo_loss(
        policy_rejected_logps, policy_chosen_logps, ref_rejected_logps,
        ref_chosen_logps, beta=beta)
    return losses_, chosen, rejected


def dpo_sigmoid(policy_chosen_logps, policy_rejected_logps,
                ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (-torch.sigmoid(beta * (chosen - rejected)),
            beta * chosen.detach(), beta * rejected.detach())


def dpo_no_minus(policy_chosen_logps, policy_rejected_logps,
                 ref_chosen_logps, ref_rejected_logps, beta=0.1):
    chosen = policy_chosen_logps - ref_chosen_logps
    rejected = policy_rejected_logps - ref_rejected_logps
    return (F.logsigmoid(beta * (chosen - rejected)),
            beta * chosen.detach(), beta * rejected.detach())


def snippet_beta_on_rejected(chosen_scores, rejected_scores, beta):
    return -F.logsigmoid(chosen_scores - beta * rejected_scores)


def snippet_no_minus(chosen_scores, rejected_scores, beta):
    return F.logsigmoid(beta * (chosen_scores - rejected_scores))


def _pairs(seed, batch=5):
    g = torch.Generator().manual_seed(seed)
    return [-torch.rand(batch, generator=g) * 8 for _ in range(4)]


NAMES = ("policy_chosen_logps", "policy_rejected_logps", "ref_chosen_logps",
         "ref_rejected_logps")


def _run_pair_loss(candidate, beta):
    logps = {name: t.requires_grad_() for name, t in zip(
        NAMES, _pairs(int(beta * 10)))}
    out = call(candidate, logps, beta=beta)
    if not (isinstance(out, tuple) and len(out) == 3):
        return text(MESSAGES, "dpo_loss.judge.not three",
                    kind=type(out).__name__)
    return {"losses": out[0], "chosen_rewards": out[1],
            "rejected_rewards": out[2],
            "losses keep their gradient": isinstance(
                out[0], torch.Tensor) and out[0].requires_grad,
            "rewards detached": not any(
                isinstance(r, torch.Tensor) and r.requires_grad
                for r in out[1:])}


def _reordered(out, wanted):
    """The three right tensors, returned in another order."""
    names = ("losses", "chosen_rewards", "rejected_rewards")
    return any(all(same(out[name], wanted[other])
                   for name, other in zip(names, order))
               for order in itertools.permutations(names)
               if order != names)


def _judge_pair_loss(candidate, seen, expected):
    for beta, wanted in expected.items():
        out = seen[beta]
        if isinstance(out, Raised):
            raise Mismatch(text(MESSAGES, "raised",
                                error=describe_error(out.error)))
        if not isinstance(out, dict):
            raise Mismatch(text(MESSAGES, "dpo_loss.judge.three", out=out))
        if _reordered(out, wanted):
            raise Mismatch(text(MESSAGES, "dpo_loss.judge.order"))
        for name in ("losses", "chosen_rewards", "rejected_rewards"):
            verdict = compare(f"{name} ({beta})", out[name], wanted[name])
        if not out["losses keep their gradient"]:
            raise Mismatch(text(MESSAGES, "dpo_loss.judge.no gradient"))
        if not out["rewards detached"]:
            raise Mismatch(text(MESSAGES, "dpo_loss.judge.rewards"))
    return text(MESSAGES, "dpo_loss.judge.passed", verdict=verdict)


@exercise("dpo_loss", stars=2, notebook=NOTEBOOK, answer=losses.dpo_loss,
          kit_code=("kit.losses:dpo_loss",),
          solution=dpo_loss, judge=_judge_pair_loss, mistakes=[
              Mistake("published_snippet", dpo_as_published, rung=3),
              Mistake("mean_not_per_pair", dpo_mean, rung=5),
              Mistake("rewards_not_detached", dpo_rewards_attached, rung=6),
              Mistake("losses_detached", dpo_losses_detached, rung=5),
              Mistake("no_reference", dpo_no_reference, rung=1),
              Mistake("chosen_rejected_swapped", dpo_swapped, rung=2),
              Mistake("sigmoid_not_logsigmoid", dpo_sigmoid, rung=4),
              Mistake("no_minus", dpo_no_minus, rung=4),
          ])
def observe_dpo_loss(candidate):
    return {f"beta={beta}": attempt(_run_pair_loss, candidate, beta)
            for beta in (0.1, 0.5)}


# ------------------------------------------------------------ dpo_snippet

@exercise("dpo_snippet", stars=2, notebook=NOTEBOOK, answer=fixed_snippet,
          mistakes=[
              Mistake("published_snippet", published_snippet, rung=1),
              Mistake("beta_on_rejected", snippet_beta_on_rejected, rung=2),
              Mistake("no_minus", snippet_no_minus, rung=3),
          ])
def observe_dpo_snippet(candidate):
    chosen, rejected = _pairs(3)[:2]
    return {f"losses (beta={beta})": attempt(
        call, candidate, dict(chosen_scores=chosen, rejected_scores=rejected),
        beta=beta) for beta in (0.1, 1.0, 2.5)}

"""Checkers for notebook 07: the "dapo" and "dr_grpo" normalisers.

Both exercises are checked as properties over several inputs: uneven
completion lengths, several epsilon and beta (0 with no reference at all),
two batch sizes, and the gradient, which must reach the log-probs.
"""

import torch

from kit import losses
from kit.checks.compare import Raised, attempt, call, graph_leaves
from kit.checks.core import Mistake, exercise
from kit.checks.nb05_grpo_loss import judge_loss
from kit.losses import per_token_kl

NOTEBOOK = "07_loss_types"


def _token_losses(per_token_logps, old_per_token_logps, advantages,
                  epsilon, beta, ref_per_token_logps):
    return losses.clipped_token_losses(
        per_token_logps, old_per_token_logps, advantages, epsilon, beta,
        ref_per_token_logps)  # (N, T)


# --------------------------------------------- mistakes shared by the two

def bnpo(per_token_logps, old_per_token_logps, advantages, completion_mask,
         epsilon=0.2, beta=0.0, ref_per_token_logps=None, **normaliser):
    return losses.bnpo_loss(per_token_logps, old_per_token_logps, advantages,
                            completion_mask, epsilon, beta,
                            ref_per_token_logps)


def per_sequence_mean(per_token_logps, old_per_token_logps, advantages,
                      completion_mask, epsilon=0.2, beta=0.0,
                      ref_per_token_logps=None, **normaliser):
    return losses.grpo_loss(per_token_logps, old_per_token_logps, advantages,
                            completion_mask, epsilon, beta,
                            ref_per_token_logps)


def _detached(answer):
    def detached_loss(per_token_logps, *args, **kwargs):
        return answer(per_token_logps.detach(), *args, **kwargs)
    return detached_loss


def _kl_when_beta_0(normalise):
    def kl_when_beta_0(per_token_logps, old_per_token_logps, advantages,
                       completion_mask, epsilon=0.2, beta=0.0,
                       ref_per_token_logps=None, **normaliser):
        per_token = _token_losses(per_token_logps, old_per_token_logps,
                                  advantages, epsilon, 0.0, None)
        per_token = per_token + beta * losses.per_token_kl(
            per_token_logps, ref_per_token_logps)  # no `if beta > 0`
        total = (per_token * completion_mask.float()).sum()
        return total / normalise(per_token, completion_mask, **normaliser)
    return kl_when_beta_0


def _step_count(per_token, completion_mask, num_items_in_batch):
    return num_items_in_batch


def _config_count(per_token, completion_mask, max_completion_length):
    return per_token.shape[0] * max_completion_length


# ----------------------------------------------------------- dapo_loss

def tokens_before_masking(per_token_logps, old_per_token_logps, advantages,
                          completion_mask, epsilon=0.2, beta=0.0,
                          ref_per_token_logps=None, num_items_in_batch=None):
    per_token = _token_losses(per_token_logps, old_per_token_logps,
                              advantages, epsilon, beta, ref_per_token_logps)
    return per_token.sum() / num_items_in_batch  # padding summed in


# -------------------------------------------------------- dr_grpo_loss

def longest_in_data(per_token_logps, old_per_token_logps, advantages,
                    completion_mask, epsilon=0.2, beta=0.0,
                    ref_per_token_logps=None, max_completion_length=None):
    longest = int(completion_mask.sum(1).max())  # the data's, not the config's
    return losses.dr_grpo_loss(per_token_logps, old_per_token_logps,
                               advantages, completion_mask, epsilon, beta,
                               ref_per_token_logps, longest)


def mask_width(per_token_logps, old_per_token_logps, advantages,
               completion_mask, epsilon=0.2, beta=0.0,
               ref_per_token_logps=None, max_completion_length=None):
    width = completion_mask.shape[1]  # the padded batch's width
    return losses.dr_grpo_loss(per_token_logps, old_per_token_logps,
                               advantages, completion_mask, epsilon, beta,
                               ref_per_token_logps, width)


# ------------------------------------------------- the printed solutions
# Self-contained, as the notebook's cells are: kit.losses' versions call
# helpers the notebook does not import.

def dapo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None, num_items_in_batch=None):
    """A scalar: the step's token sum over the step's token count."""
    ratio = torch.exp(per_token_logps - old_per_token_logps)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    advantages = advantages.unsqueeze(1)  # (B, 1)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta > 0:
        per_token = per_token + beta * per_token_kl(per_token_logps,
                                                    ref_per_token_logps)
    total = (per_token * completion_mask.float()).sum()
    return total / num_items_in_batch


def dr_grpo_loss(per_token_logps, old_per_token_logps, advantages,
                 completion_mask, epsilon=0.2, beta=0.0,
                 ref_per_token_logps=None, max_completion_length=None):
    """A scalar: the token sum over B x the config's max length."""
    ratio = torch.exp(per_token_logps - old_per_token_logps)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    advantages = advantages.unsqueeze(1)  # (B, 1)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta > 0:
        per_token = per_token + beta * per_token_kl(per_token_logps,
                                                    ref_per_token_logps)
    total = (per_token * completion_mask.float()).sum()
    return total / (per_token.shape[0] * max_completion_length)


# -------------------------------------------------------------- cases

def _case(seed, N):
    """N completions of uneven lengths (1 token up to T), some ratios past
    the clip, padding whose losses are not zero."""
    T = 6
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(N, T, generator=g) * 3
    logps = old + torch.randn(N, T, generator=g) * 0.4
    # B=4: the longest (5) is shorter than the padded width (6)
    lengths = torch.tensor([1, T - 1, 3, 2] if N == 4
                           else [1, T, 3, 2, T - 1, 4][:N])
    mask = (torch.arange(T) < lengths.unsqueeze(1)).long()  # (N, T)
    advantages = torch.randn(N, generator=g)
    ref = old - 0.3 * torch.rand(N, T, generator=g)
    return logps, old, advantages, mask, ref


# (seed, N, epsilon, beta, max_completion_length): beta = 0 comes with no
# reference at all; two betas and three lengths (each longer than every
# completion), so that no constant written into an answer matches them all
CASES = ((0, 4, 0.2, 0.0, 8), (1, 6, 0.1, 0.0, 12), (2, 4, 0.3, 0.04, 10),
         (3, 6, 0.2, 0.1, 16))


def _normaliser_of(exercise_id, mask, seed, max_completion_length):
    if exercise_id == "dapo_loss":
        # the step's count: this micro-batch's tokens and another's
        return {"num_items_in_batch": int(mask.sum()) + 5 + seed}
    return {"max_completion_length": max_completion_length}


def _loss_and_gradient(exercise_id, candidate, seed, N, epsilon, beta,
                       max_completion_length):
    logps, old, advantages, mask, ref = _case(seed, N)
    logps = logps.clone().requires_grad_()
    loss = call(candidate, dict(
        per_token_logps=logps, old_per_token_logps=old,
        advantages=advantages, completion_mask=mask), epsilon=epsilon,
        beta=beta, ref_per_token_logps=ref if beta > 0 else None,
        **_normaliser_of(exercise_id, mask, seed, max_completion_length))
    if not (isinstance(loss, torch.Tensor) and loss.requires_grad
            and loss.dim() == 0):
        return loss, None
    leaves = graph_leaves(loss)  # call() handed the learner a copy
    gradient = torch.autograd.grad(loss, leaves)[0] if leaves else None
    return loss.detach(), gradient


def _observe(exercise_id, candidate):
    seen = {}
    for seed, N, epsilon, beta, length in CASES:
        out = attempt(_loss_and_gradient, exercise_id, candidate, seed, N,
                      epsilon, beta, length)
        loss, gradient = (out, None) if isinstance(out, Raised) else out
        case = f"B={N}, epsilon={epsilon}, beta={beta}"
        if exercise_id == "dr_grpo_loss":
            case += f", max_completion_length={length}"
        seen[f"loss ({case})"] = loss
        seen[f"gradient ({case})"] = gradient
    return seen


def _judge(seen, expected):
    return judge_loss(seen, expected, passed="loss_types.judge.passed")


@exercise("dapo_loss", stars=2, notebook=NOTEBOOK, answer=losses.dapo_loss,
          kit_code=("kit.losses:dapo_loss",),
          solution=dapo_loss,
          judge=lambda candidate, seen, expected: _judge(seen, expected),
          mistakes=[
              Mistake("per_micro_batch", bnpo, rung=1),
              Mistake("per_sequence_mean", per_sequence_mean, rung=1),
              Mistake("tokens_before_masking", tokens_before_masking,
                      rung=2),
              Mistake("kl_when_beta_0", _kl_when_beta_0(_step_count),
                      rung=3),
              Mistake("detached_loss", _detached(losses.dapo_loss), rung=3),
          ])
def observe_dapo_loss(candidate):
    return _observe("dapo_loss", candidate)


@exercise("dr_grpo_loss", stars=2, notebook=NOTEBOOK,
          kit_code=("kit.losses:dr_grpo_loss",),
          answer=losses.dr_grpo_loss, solution=dr_grpo_loss,
          judge=lambda candidate, seen, expected: _judge(seen, expected),
          mistakes=[
              Mistake("longest_in_data", longest_in_data, rung=2),
              Mistake("mask_width", mask_width, rung=2),
              Mistake("per_micro_batch", bnpo, rung=1),
              Mistake("per_sequence_mean", per_sequence_mean, rung=1),
              Mistake("kl_when_beta_0", _kl_when_beta_0(_config_count),
                      rung=3),
              Mistake("detached_loss", _detached(losses.dr_grpo_loss),
                      rung=3),
          ])
def observe_dr_grpo_loss(candidate):
    return _observe("dr_grpo_loss", candidate)

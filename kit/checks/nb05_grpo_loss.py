"""Checkers for notebook 05: group advantages and GRPO's clipped loss."""

import re
from dataclasses import dataclass

import torch

from kit import losses
from kit.losses import per_token_kl
from kit.checks.compare import (Mismatch, Raised, agreement, attempt, call,
                                compare, describe_error, loss_and_gradient)
from kit.checks.core import Mistake, Property, exercise
from kit.checks.messages import MESSAGES
from kit.checks.nb05_words import GROUP_ADVANTAGES_WORDS, GRPO_LOSS_WORDS
from kit.i18n import said, text

NOTEBOOK = "05_grpo_end_to_end"


# ------------------------------------------------------- group_advantages

def whole_batch(rewards, num_generations):
    return (rewards - rewards.mean()) / (rewards.std() + 1e-4)


def population_std(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)  # (B, G)
    mean = grouped.mean(dim=1, keepdim=True)
    std = grouped.std(dim=1, keepdim=True, unbiased=False)
    return ((grouped - mean) / (std + 1e-4)).view(-1)


def view_G_rows(rewards, num_generations):
    grouped = rewards.view(num_generations, -1)  # (G, B): not the groups
    mean = grouped.mean(dim=1, keepdim=True)
    std = grouped.std(dim=1, keepdim=True)
    return ((grouped - mean) / (std + 1e-4)).view(-1)


def mean_only(rewards, num_generations):
    grouped = rewards.view(-1, num_generations)  # (B, G)
    return (grouped - grouped.mean(dim=1, keepdim=True)).view(-1)


# The printed solution, the notebook's to the letter (a test holds
# it): kit.losses' version says more than an exercise cell does.
def group_advantages(rewards, num_generations):
    """Shape: (B·G,) -> (B·G,)."""
    grouped = rewards.view(-1, num_generations)  # (B, G)
    mean = grouped.mean(dim=1, keepdim=True)  # (B, 1)
    std = grouped.std(dim=1, keepdim=True)  # (B, 1)
    return ((grouped - mean) / (std + 1e-4)).view(-1)


# ------------------------------------ properties read from the numbers
# (issue 62) An answer wrong everywhere differs on every input, so no
# input's property separates it from the reference. What its numbers say
# beside the reference's still can: an invariant every right answer keeps,
# broken; or the one idea a family of wrong answers misses, with the rest
# right. Each reading below claims only what it checks.

@dataclass
class Reading(Property):
    """A property read from the answer's numbers beside the reference's:
    `reads(seen, expected)` says whether they show it."""
    reads: object = None

    def fits(self, seen, expected, differs, stopped=False):
        return (bool(differs) and not stopped
                and bool(self.reads(seen, expected)))


def _finite_pairs(seen, expected, prefix):
    """[(name, yours, reference)] in float64, for the observations whose
    name starts with `prefix`; None unless each of yours is a finite float
    tensor of the reference's shape."""
    pairs = []
    for name, wanted in expected.items():
        if not name.startswith(prefix):
            continue
        yours = seen.get(name)
        if not (isinstance(yours, torch.Tensor)
                and isinstance(wanted, torch.Tensor)
                and yours.shape == wanted.shape
                and yours.dtype.is_floating_point
                and torch.isfinite(yours).all()):
            return None
        pairs.append((name, yours.detach().double(),
                      wanted.detach().double()))
    return pairs


def _signs(values):
    """-1, 0 or 1 each, 0 within rounding of 0."""
    zero = 1e-6 * (1 + values.abs().max())
    return torch.where(values.abs() <= zero, 0.0, values.sign())


def scaled_otherwise(seen, expected):
    """Each advantage has the reference's sign, 0 where it is 0, and some
    differ in size: the mean subtracted is right, the division is not."""
    pairs = _finite_pairs(seen, expected, "advantages")
    return bool(pairs) and all(torch.equal(_signs(yours), _signs(wanted))
                               for _, yours, wanted in pairs)


def groups_off_centre(seen, expected):
    """Some group of G consecutive advantages does not sum to 0, as each
    of the reference's does: the mean subtracted is not that group's."""
    pairs = _finite_pairs(seen, expected, "advantages")
    for name, yours, _ in pairs or ():
        grouped = yours.view(-1, int(re.search(r"G=(\d+)", name)[1]))
        if (grouped.sum(1).abs() > 1e-4 * (1 + grouped.abs().sum(1))).any():
            return True
    return False


@exercise("group_advantages", words=GROUP_ADVANTAGES_WORDS,
          solution=group_advantages,
          stars=2, notebook=NOTEBOOK,
          kit_code=("kit.losses:group_advantages",),
          answer=losses.group_advantages, properties=[
              Property("equal_rewards", "(G=2)", rung=2),
              Property("rewards_close_together",
                       lambda name: "(G=3)" not in name, rung=2),
              Property("num_generations_written_in", varies=r"G=(\d+)",
                       rung=1),
              Reading("scaled_otherwise", rung=2, reads=scaled_otherwise),
              Reading("groups_off_centre", rung=1, reads=groups_off_centre),
          ], mistakes=[
              Mistake("whole_batch", whole_batch, rung=1),
              Mistake("population_std", population_std, rung=3),
              Mistake("view_G_minus_1", view_G_rows, rung=1),
              Mistake("no_std", mean_only, rung=2),
          ])
def observe_group_advantages(candidate):
    g = torch.Generator().manual_seed(0)
    # the last: rewards hundreds apart, where the + 1e-4 makes no
    # difference; in the one before, a group of equal rewards (std 0)
    cases = [(torch.rand(12, generator=g), 4),
             (torch.randint(0, 2, (16,), generator=g).float(), 8),
             (torch.tensor([1.0, 1.0, 0.0, 2.0]), 2),
             (torch.tensor([0.0, 500.0, 1000.0, 300.0, 900.0, 0.0]), 3)]
    return {f"advantages (G={G})": attempt(call, candidate, dict(
        rewards=rewards), num_generations=G) for rewards, G in cases}


# --------------------------------------------------------------- grpo_loss

def _surrogate(logps, old, advantages, epsilon):
    ratio = torch.exp(logps - old)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return ratio * advantages.unsqueeze(1), clipped * advantages.unsqueeze(1)


def _finish(per_token, logps, mask, beta, ref, kl_sign=1):
    """The reference's tail: + β·KL when β > 0, then the mean per sequence
    and over sequences. Its arguments are where a mistake differs."""
    if beta > 0:
        per_token = per_token + kl_sign * beta * losses.per_token_kl(
            logps, ref)
    mask = mask.float()
    return ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()


def no_min(per_token_logps, old_per_token_logps, advantages,
           completion_mask, epsilon=0.2, beta=0.0, ref_per_token_logps=None):
    _, clipped = _surrogate(per_token_logps, old_per_token_logps, advantages,
                            epsilon)
    return _finish(-clipped, per_token_logps, completion_mask, beta,
                   ref_per_token_logps)


def max_not_min(per_token_logps, old_per_token_logps, advantages,
                completion_mask, epsilon=0.2, beta=0.0,
                ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    return _finish(-torch.max(plain, clipped), per_token_logps,
                   completion_mask, beta, ref_per_token_logps)


def min_of_ratios(per_token_logps, old_per_token_logps, advantages,
                  completion_mask, epsilon=0.2, beta=0.0,
                  ref_per_token_logps=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    per_token = -torch.min(ratio, clipped) * advantages.unsqueeze(1)
    return _finish(per_token, per_token_logps, completion_mask, beta,
                   ref_per_token_logps)


def clipped_below_only(per_token_logps, old_per_token_logps, advantages,
                       completion_mask, epsilon=0.2, beta=0.0,
                       ref_per_token_logps=None):
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    clipped = torch.clamp(ratio, min=1 - epsilon)  # no upper bound
    a = advantages.unsqueeze(1)
    return _finish(-torch.min(ratio * a, clipped * a), per_token_logps,
                   completion_mask, beta, ref_per_token_logps)


def token_level_mean(per_token_logps, old_per_token_logps, advantages,
                     completion_mask, epsilon=0.2, beta=0.0,
                     ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    per_token = -torch.min(plain, clipped)
    if beta > 0:
        per_token = per_token + beta * losses.per_token_kl(
            per_token_logps, ref_per_token_logps)
    mask = completion_mask.float()
    return (per_token * mask).sum() / mask.sum()


def no_mask(per_token_logps, old_per_token_logps, advantages,
            completion_mask, epsilon=0.2, beta=0.0, ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    return _finish(-torch.min(plain, clipped), per_token_logps,
                   torch.ones_like(completion_mask), beta,
                   ref_per_token_logps)


def detached_logps(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2, beta=0.0,
                   ref_per_token_logps=None):
    return losses.grpo_loss(per_token_logps.detach(), old_per_token_logps,
                            advantages, completion_mask, epsilon, beta,
                            ref_per_token_logps)


def _clip_plain(per_token_logps, old_per_token_logps, advantages):
    """-min(ratio·A, clip(ratio, 0.8, 1.2)·A): ε fixed at 0.2."""
    ratio = torch.exp(per_token_logps - old_per_token_logps)
    a = advantages.unsqueeze(1)
    return -torch.min(ratio * a, torch.clamp(ratio, 0.8, 1.2) * a)


def kl_when_beta_0(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2, beta=0.0,
                   ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    per_token = -torch.min(plain, clipped) + beta * losses.per_token_kl(
        per_token_logps, ref_per_token_logps)  # no `if beta > 0`
    return _finish(per_token, per_token_logps, completion_mask, 0.0, None)


def clip_hard_coded(per_token_logps, old_per_token_logps, advantages,
                    completion_mask, epsilon=0.2, beta=0.0,
                    ref_per_token_logps=None):
    return _finish(_clip_plain(per_token_logps, old_per_token_logps,
                               advantages), per_token_logps, completion_mask,
                   beta, ref_per_token_logps)


def kl_sign_reversed(per_token_logps, old_per_token_logps, advantages,
                     completion_mask, epsilon=0.2, beta=0.0,
                     ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    # a reward for moving away from the reference
    return _finish(-torch.min(plain, clipped), per_token_logps,
                   completion_mask, beta, ref_per_token_logps, kl_sign=-1)


def kl_arguments_swapped(per_token_logps, old_per_token_logps, advantages,
                         completion_mask, epsilon=0.2, beta=0.0,
                         ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    # KL(ref‖π) for KL(π‖ref): the reference first
    return _finish(-torch.min(plain, clipped), ref_per_token_logps,
                   completion_mask, beta, per_token_logps)


def kl_weight_written_in(per_token_logps, old_per_token_logps, advantages,
                         completion_mask, epsilon=0.2, beta=0.0,
                         ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    weight = 0.04 if ref_per_token_logps is not None else 0.0  # TRL's old
    return _finish(-torch.min(plain, clipped), per_token_logps,
                   completion_mask, weight, ref_per_token_logps)


def ratio_inverted(per_token_logps, old_per_token_logps, advantages,
                   completion_mask, epsilon=0.2, beta=0.0,
                   ref_per_token_logps=None):
    plain, clipped = _surrogate(old_per_token_logps, per_token_logps,
                                advantages, epsilon)  # exp(old − new)
    return _finish(-torch.min(plain, clipped), per_token_logps,
                   completion_mask, beta, ref_per_token_logps)


def no_minus(per_token_logps, old_per_token_logps, advantages,
             completion_mask, epsilon=0.2, beta=0.0,
             ref_per_token_logps=None):
    plain, clipped = _surrogate(per_token_logps, old_per_token_logps,
                                advantages, epsilon)
    return _finish(torch.min(plain, clipped), per_token_logps,
                   completion_mask, beta, ref_per_token_logps)


def _loss_case(seed, kind="", B=4, T=5):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g) * 3
    # some ratios fall beyond the clip; "within the clip": none does;
    # "on-policy": the policy has not moved, every ratio is 1
    spread = {"within the clip": 0.01, "on-policy": 0.0}.get(kind, 0.4)
    logps = old + torch.randn(B, T, generator=g) * spread
    mask = torch.ones(B, T, dtype=torch.long)
    if kind != "nothing masked":
        mask[0, 3:] = 0
        mask[2, 1:] = 0
    advantages = torch.tensor([1.0, -1.5, 0.5, -0.2])[:B]
    ref = old - 0.3 * torch.rand(B, T, generator=g)
    return logps, old, advantages, mask, ref


# (seed, epsilon, beta, kind): several clips, and beta = 0 with no reference
# at all (ref_per_token_logps=None), as notebook 05's trainer passes it.
# The last three each take one idea away, so that an answer right there
# alone shows which idea it misses: the clip, the ratio, the mask.
LOSS_CASES = ((0, 0.2, 0.0, ""), (1, 0.1, 0.0, ""), (2, 0.3, 0.1, ""),
              (3, 0.25, 0.04, ""), (4, 0.2, 0.0, "within the clip"),
              (5, 0.2, 0.0, "on-policy"), (6, 0.2, 0.0, "nothing masked"))


def with_kl(name):
    """Whether an observation's inputs have beta > 0 (notebook 07's too)."""
    return not re.search(r"beta=0\.0\b", name)


def _loss_and_gradient(candidate, seed, epsilon, beta, kind=""):
    logps, old, advantages, mask, ref = _loss_case(seed, kind)
    logps = logps.clone().requires_grad_()
    loss = call(candidate, dict(
        per_token_logps=logps, old_per_token_logps=old,
        advantages=advantages, completion_mask=mask), epsilon=epsilon,
        beta=beta, ref_per_token_logps=ref if beta > 0 else None)
    return loss_and_gradient(loss)


def _case_name(seed, epsilon, beta, kind):
    return f"epsilon={epsilon}, beta={beta}, case {seed}" + (
        f": {kind}" if kind else "")


def _loss_inputs(name):
    """The keyword arguments observation `name` was made with."""
    for seed, epsilon, beta, kind in LOSS_CASES:
        if name.endswith(f"({_case_name(seed, epsilon, beta, kind)})"):
            logps, old, advantages, mask, ref = _loss_case(seed, kind)
            return dict(per_token_logps=logps, old_per_token_logps=old,
                        advantages=advantages, completion_mask=mask,
                        epsilon=epsilon, beta=beta,
                        ref_per_token_logps=ref if beta > 0 else None)
    raise KeyError(name)


# ------------- what a clipped surrogate's gradient says, token by token
# Per token the surrogate's gradient is −A·ratio (× the normalisation,
# + the KL's) where the min picks the unclipped term, and none (the KL's
# alone) where it picks the clipped one: the reference's stops where
# A > 0 and ratio > 1 + ε, or A < 0 and ratio < 1 − ε. On-policy every
# ratio is 1, so every token of a completion gets the same gradient.

def _gradient(answer, inputs, **change):
    """The gradient of `answer` (the kit's) at `inputs`, some changed."""
    inputs = dict(inputs, **change)
    logps = inputs["per_token_logps"].clone().requires_grad_()
    loss = answer(**dict(inputs, per_token_logps=logps))
    return torch.autograd.grad(loss, logps)[0].double()


def ratio_moves_on_policy(seen, expected):
    """On-policy, some completion's tokens get gradients that are not one
    multiple of the reference's: a ratio that is not 1 there, or not a
    function of new − old alone."""
    pairs = _finite_pairs(seen, expected, "gradient")
    for name, yours, wanted in pairs or ():
        if "on-policy" not in name:
            continue
        for a, e in zip(yours, wanted):
            live = e.abs() > 1e-9  # unmasked, A ≠ 0
            if live.sum() > 1:
                c = a[live] / e[live]
                if (c - c[0]).abs().max() > 1e-3 * (1 + c.abs().max()):
                    return True
    return False


def clip_elsewhere(answer, inputs_of):
    """A reading for a clipped loss whose kit version is `answer`, its
    observations made at `inputs_of(name)`: each token's gradient is the
    reference's, either the full one or the one the clip stops, and the
    stopped tokens are those past some bounds, other than 1 ± ε."""
    def reads(seen, expected):
        pairs = _finite_pairs(seen, expected, "gradient")
        differs = clipped = False
        for name, yours, wanted in pairs or ():
            if torch.allclose(yours, wanted, atol=1e-5, rtol=1e-4):
                continue
            differs = True
            inputs = inputs_of(name)
            full = _gradient(answer, inputs, epsilon=1e9)  # never clipped
            cut = _gradient(answer, inputs, advantages=torch.zeros_like(
                inputs["advantages"]))  # every token clipped
            is_full = torch.isclose(yours, full, atol=1e-5, rtol=1e-4)
            is_cut = torch.isclose(yours, cut, atol=1e-5, rtol=1e-4)
            if not (is_full | is_cut).all():
                return False
            moves = ~torch.isclose(full, cut, atol=1e-5, rtol=1e-4)
            stops = is_cut & ~is_full & moves
            if not (moves & ~stops).any():
                return False  # no surrogate left at all: not a clip
            clipped = clipped or bool(stops.any())
            ratio = torch.exp(inputs["per_token_logps"]
                              - inputs["old_per_token_logps"])
            a = inputs["advantages"].unsqueeze(1).expand_as(ratio)
            # A > 0: stopped above some ratio; A < 0: below some ratio
            for side in (1, -1):
                these = moves & (a * side > 0)
                stopped = (side * ratio)[these & stops]
                kept = (side * ratio)[these & ~stops]
                if len(stopped) and len(kept) and (
                        stopped.min() <= kept.max()):
                    return False
        return differs and clipped  # never clipped: not bounds, no clip
    return reads


# The printed solution, the notebook's to the letter (a test holds
# it): kit.losses' version says more than an exercise cell does.
def grpo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None):
    """A scalar: the mean over completions of their mean token loss."""
    ratio = torch.exp(per_token_logps - old_per_token_logps)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    advantages = advantages.unsqueeze(1)  # (B, 1)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta > 0:
        per_token = per_token + beta * per_token_kl(per_token_logps,
                                                    ref_per_token_logps)
    mask = completion_mask.float()
    per_sequence = (per_token * mask).sum(1) / mask.sum(1).clamp(min=1)
    return per_sequence.mean()


@exercise("grpo_loss", words=GRPO_LOSS_WORDS, properties=[
              Property("epsilon_written_in", varies=r"epsilon=([\d.]+)",
                       rung=3),
              Property("kl_term", with_kl, rung=5),
              Property("beta_written_in", varies=r"beta=([\d.]+)", rung=5),
              Property("masked_tokens",
                       lambda name: "nothing masked" not in name, rung=4),
              Reading("ratio_moves_on_policy", rung=1,
                      reads=ratio_moves_on_policy),
              Reading("clip_elsewhere", rung=3, reads=clip_elsewhere(
                  losses.grpo_loss, _loss_inputs)),
              Property("ratio_beyond_the_clip", lambda name: not any(
                  kind in name for kind in ("within the clip", "on-policy")),
                       rung=2),
              Property("off_policy", lambda name: "on-policy" not in name,
                       rung=1),
          ],
          solution=grpo_loss,
          stars=3, notebook=NOTEBOOK, answer=losses.grpo_loss,
          kit_code=("kit.losses:grpo_loss",
                    "kit.losses:clipped_token_losses"),
          judge=lambda candidate, seen, expected: judge_loss(seen, expected),
          mistakes=[
              Mistake("no_min", no_min, rung=2),
              Mistake("max_not_min", max_not_min, rung=2),
              Mistake("min_of_the_ratios", min_of_ratios, rung=2),
              Mistake("token_level_mean", token_level_mean, rung=4),
              Mistake("no_mask", no_mask, rung=4),
              Mistake("detached_logps", detached_logps, rung=6),
              Mistake("kl_when_beta_0", kl_when_beta_0, rung=5),
              Mistake("clip_hard_coded", clip_hard_coded, rung=3),
              Mistake("clipped_below_only", clipped_below_only, rung=3),
              Mistake("kl_sign_reversed", kl_sign_reversed, rung=5),
              Mistake("kl_arguments_swapped", kl_arguments_swapped, rung=5),
              Mistake("kl_weight_written_in", kl_weight_written_in, rung=5),
              Mistake("ratio_inverted", ratio_inverted, rung=1),
              Mistake("no_minus", no_minus, rung=2),
          ])
def observe_grpo_loss(candidate):
    seen = {}
    for seed, epsilon, beta, kind in LOSS_CASES:
        out = attempt(_loss_and_gradient, candidate, seed, epsilon, beta,
                      kind)
        loss, gradient = (out, None) if isinstance(out, Raised) else out
        case = _case_name(seed, epsilon, beta, kind)
        seen[f"loss ({case})"] = loss
        seen[f"gradient ({case})"] = gradient
    return seen


def judge_loss(seen, expected, passed=GRPO_LOSS_WORDS["judge.passed"]):
    """Each "loss ..." a scalar that matches, each "gradient ..." there and
    matching (notebook 07's losses too): `passed` is the verdict's line."""
    verdict = "exact"
    for name, wanted in expected.items():
        actual = seen[name]
        if name.startswith("loss"):
            if isinstance(actual, Raised):
                raise Mismatch(text(MESSAGES, "raised",
                                    error=describe_error(actual.error)))
            if isinstance(actual, torch.Tensor) and actual.dim() > 0:
                raise Mismatch(said(GRPO_LOSS_WORDS["judge.shape"],
                                    shape=tuple(actual.shape)))
            verdict = compare(name, actual, wanted)
        elif actual is None:
            raise Mismatch(said(GRPO_LOSS_WORDS["judge.no gradient"]))
        else:
            compare(name, actual, wanted)
    return said(passed, verdict=agreement(verdict))

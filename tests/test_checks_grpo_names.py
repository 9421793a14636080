"""Wrong answers to notebook 05's and 07's losses named from what their
numbers say (issue 62): an invariant every right answer keeps, broken, or
the one idea a family of wrong answers misses.

Each name is tried on a family of answers, at several G, epsilon and beta,
both through check() on the checker's own inputs and, reading by reading,
on inputs the checker never uses: a name is a property, not an example.
"""

import pytest
import torch

from kit import checks, losses
from kit.checks import EXERCISES
from kit.checks.nb05_grpo_loss import (clip_elsewhere, groups_off_centre,
                                       ratio_moves_on_policy,
                                       scaled_otherwise)

pytestmark = pytest.mark.usefixtures("lenient")

LOSSES = ("grpo_loss", "dapo_loss", "dr_grpo_loss")


def named(exercise_id, answer):
    result = checks.check(exercise_id, answer)
    assert result.status == "failed"
    return result.mistake


# ----------------------------------------------------- group_advantages

def _centred(rewards, G):
    grouped = rewards.view(-1, G)
    return grouped, grouped - grouped.mean(1, keepdim=True)


# the mean subtracted is each group's; the division is another spread
SCALES = {
    "the batch's std": lambda grouped, rewards: rewards.std() + 1e-4,
    "the variance": lambda grouped, rewards: grouped.var(
        1, keepdim=True) + 1e-4,
    "std over dim 0": lambda grouped, rewards: grouped.std(
        0, keepdim=True) + 1e-4,
    "std + 1": lambda grouped, rewards: grouped.std(1, keepdim=True) + 1,
    "times the std": lambda grouped, rewards: 1 / (
        grouped.std(1, keepdim=True) + 1e-4),
}

# the mean subtracted is not each group's
CENTRES = {
    "mean over dim 0": lambda grouped: grouped.mean(0, keepdim=True),
    "the group's sum": lambda grouped: grouped.sum(1, keepdim=True),
    "the group's median": lambda grouped: grouped.median(
        1, keepdim=True).values,
}


def scaled_by(scale):
    def group_advantages(rewards, num_generations):
        grouped, centred = _centred(rewards, num_generations)
        return (centred / scale(grouped, rewards)).view(-1)
    return group_advantages


def centred_on(centre):
    def group_advantages(rewards, num_generations):
        grouped = rewards.view(-1, num_generations)
        std = grouped.std(1, keepdim=True)
        return ((grouped - centre(grouped)) / (std + 1e-4)).view(-1)
    return group_advantages


def strided(rewards, num_generations):
    grouped = rewards.view(num_generations, -1)  # a group is a column
    centred = grouped - grouped.mean(0, keepdim=True)
    return (centred / (grouped.std(0, keepdim=True) + 1e-4)).reshape(-1)


@pytest.mark.parametrize("scale", SCALES)
def test_advantages_divided_by_another_spread_are_named(scale):
    assert named("group_advantages", scaled_by(SCALES[scale])) == (
        "property:scaled_otherwise")


@pytest.mark.parametrize("centre", CENTRES)
def test_advantages_centred_elsewhere_are_named(centre):
    answer = centred_on(CENTRES[centre])
    assert named("group_advantages", answer) == (
        "property:groups_off_centre")


def test_strided_groups_are_named_off_centre():
    assert named("group_advantages", strided) == (
        "property:groups_off_centre")


def _advantages(answer, seed, G, prompts=3):
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randint(0, 5, (prompts * G,), generator=g).float()
    rewards[:G] = 2.0  # a group of equal rewards: its advantages are 0
    return {f"advantages (G={G})": answer(rewards, G)}


@pytest.mark.parametrize("G", [2, 3, 5, 8])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_group_readings_hold_at_any_G(G, seed):
    expected = _advantages(losses.group_advantages, seed, G)
    for scale in SCALES.values():
        seen = _advantages(scaled_by(scale), seed, G)
        assert scaled_otherwise(seen, expected)
    for answer in [strided] + [centred_on(c) for c in CENTRES.values()]:
        seen = _advantages(answer, seed, G)
        assert groups_off_centre(seen, expected)
        assert not scaled_otherwise(seen, expected)
    for scale in ("the batch's std", "the variance", "std + 1"):
        seen = _advantages(scaled_by(SCALES[scale]), seed, G)
        assert not groups_off_centre(seen, expected)


# ------------------------------------------- the clipped surrogate losses

def _normalised(exercise_id, per_token, completion_mask, normaliser):
    mask = completion_mask.float()
    if exercise_id == "grpo_loss":
        return ((per_token * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()
    total = (per_token * mask).sum()
    if exercise_id == "dapo_loss":
        return total / normaliser["num_items_in_batch"]
    return total / (len(per_token) * normaliser["max_completion_length"])


def clipped_loss(exercise_id, ratio_of=None, bounds=None):
    """The exercise's loss, its ratio `ratio_of(new, old)` or its clip
    `bounds(epsilon)` (low, high) changed, all else right."""
    def loss(per_token_logps, old_per_token_logps, advantages,
             completion_mask, epsilon=0.2, beta=0.0,
             ref_per_token_logps=None, **normaliser):
        ratio = (ratio_of or (lambda new, old: torch.exp(new - old)))(
            per_token_logps, old_per_token_logps)
        low, high = (bounds or (lambda e: (1 - e, 1 + e)))(epsilon)
        clipped = torch.clamp(ratio, low, high)
        a = advantages.unsqueeze(1)
        per_token = -torch.min(ratio * a, clipped * a)
        if beta > 0:
            per_token = per_token + beta * losses.per_token_kl(
                per_token_logps, ref_per_token_logps)
        return _normalised(exercise_id, per_token, completion_mask,
                           normaliser)
    return loss


RATIOS = {
    "exp(new + old)": lambda new, old: torch.exp(new + old),
    "the new probability": lambda new, old: new.exp(),
    "new / old": lambda new, old: new / old,
    "1 / exp(old)": lambda new, old: torch.exp(new) / old.neg(),
}

BOUNDS = {
    "swapped": lambda e: (1 + e, 1 - e),
    "up to 1": lambda e: (1 - e, 1.0),
    "from 1": lambda e: (1.0, 1 + e),
    "below only, twice": lambda e: (1 - 2 * e, 1 + e),
    "half": lambda e: (1 - e / 2, 1 + e / 2),
    "from epsilon": lambda e: (e, 1 + e),
}


@pytest.mark.parametrize("exercise_id", LOSSES)
@pytest.mark.parametrize("ratio", RATIOS)
def test_a_ratio_that_is_not_1_on_policy_is_named(exercise_id, ratio):
    answer = clipped_loss(exercise_id, ratio_of=RATIOS[ratio])
    assert named(exercise_id, answer) == "property:ratio_moves_on_policy"


@pytest.mark.parametrize("exercise_id", LOSSES)
@pytest.mark.parametrize("bounds", BOUNDS)
def test_clip_bounds_elsewhere_are_named(exercise_id, bounds):
    answer = clipped_loss(exercise_id, bounds=BOUNDS[bounds])
    assert named(exercise_id, answer) == "property:clip_elsewhere"


def _loss_inputs(exercise_id, seed, epsilon, beta, on_policy=False):
    g = torch.Generator().manual_seed(seed)
    B, T = 5, 7
    old = -torch.rand(B, T, generator=g) * 3
    spread = 0.0 if on_policy else 0.5
    logps = old + torch.randn(B, T, generator=g) * spread
    lengths = torch.tensor([T, 1, 4, T - 2, 3])
    mask = (torch.arange(T) < lengths.unsqueeze(1)).long()
    normaliser = ({"num_items_in_batch": int(mask.sum()) + 3}
                  if exercise_id == "dapo_loss" else
                  {"max_completion_length": T + 3}
                  if exercise_id == "dr_grpo_loss" else {})
    return dict(per_token_logps=logps, old_per_token_logps=old,
                advantages=torch.randn(B, generator=g),
                completion_mask=mask, epsilon=epsilon, beta=beta,
                ref_per_token_logps=(old - 0.2 * torch.rand(
                    B, T, generator=g)) if beta > 0 else None,
                **normaliser)


def _loss_seen(answer, cases):
    """{name: gradient} of `answer` at each case's inputs."""
    seen = {}
    for name, inputs in cases.items():
        logps = inputs["per_token_logps"].clone().requires_grad_()
        loss = answer(**dict(inputs, per_token_logps=logps))
        seen[name] = torch.autograd.grad(loss, logps)[0]
    return seen


def _cases(exercise_id, seed):
    """Inputs the checker never uses: other sizes, epsilon, beta."""
    cases = {}
    for i, (epsilon, beta) in enumerate(
            [(0.1, 0.0), (0.25, 0.0), (0.3, 0.05), (0.15, 0.2)]):
        cases[f"gradient ({epsilon}, {beta})"] = _loss_inputs(
            exercise_id, seed + i, epsilon, beta)
    cases["gradient (on-policy)"] = _loss_inputs(
        exercise_id, seed + 9, 0.2, 0.0, on_policy=True)
    return cases


@pytest.mark.parametrize("exercise_id", LOSSES)
@pytest.mark.parametrize("seed", [0, 10])
def test_the_clip_readings_hold_at_any_epsilon_and_beta(exercise_id, seed):
    answer = getattr(losses, exercise_id)
    cases = _cases(exercise_id, seed)
    expected = _loss_seen(answer, cases)
    reads = clip_elsewhere(answer, cases.__getitem__)
    for bounds in BOUNDS.values():
        seen = _loss_seen(clipped_loss(exercise_id, bounds=bounds), cases)
        assert reads(seen, expected)
        assert not ratio_moves_on_policy(seen, expected)
    for ratio in RATIOS.values():
        seen = _loss_seen(clipped_loss(exercise_id, ratio_of=ratio), cases)
        assert ratio_moves_on_policy(seen, expected)
        assert not reads(seen, expected)


def _halved(answer):
    def loss(*args, **kwargs):
        return answer(*args, **kwargs) / 2  # a division too many
    return loss


def _kl_only_when_beta(exercise_id):
    def loss(per_token_logps, old_per_token_logps, advantages,
             completion_mask, epsilon=0.2, beta=0.0,
             ref_per_token_logps=None, **normaliser):
        if beta == 0:
            return getattr(losses, exercise_id)(
                per_token_logps, old_per_token_logps, advantages,
                completion_mask, epsilon, beta, None, **normaliser)
        per_token = beta * losses.per_token_kl(per_token_logps,
                                               ref_per_token_logps)
        return _normalised(exercise_id, per_token, completion_mask,
                           normaliser)  # the surrogate dropped
    return loss


@pytest.mark.parametrize("exercise_id", LOSSES)
def test_the_clip_readings_say_nothing_of_other_slips(exercise_id):
    answer = getattr(losses, exercise_id)
    cases = _cases(exercise_id, 3)
    expected = _loss_seen(answer, cases)
    reads = clip_elsewhere(answer, cases.__getitem__)
    for wrong in (_halved(answer), _kl_only_when_beta(exercise_id),
                  clipped_loss(exercise_id, bounds=lambda e: (0.0, 1e9))):
        seen = _loss_seen(wrong, cases)
        assert not reads(seen, expected)
        assert not ratio_moves_on_policy(seen, expected)


# the per-token slips of notebook 05, made in notebook 07's losses
def optimistic(exercise_id):
    def loss(per_token_logps, old_per_token_logps, advantages,
             completion_mask, epsilon=0.2, beta=0.0,
             ref_per_token_logps=None, **normaliser):
        ratio = torch.exp(per_token_logps - old_per_token_logps)
        clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
        a = advantages.unsqueeze(1)
        per_token = -torch.max(ratio * a, clipped * a)
        if beta > 0:
            per_token = per_token + beta * losses.per_token_kl(
                per_token_logps, ref_per_token_logps)
        return _normalised(exercise_id, per_token, completion_mask,
                           normaliser)
    return loss


@pytest.mark.parametrize("exercise_id", ["dapo_loss", "dr_grpo_loss"])
def test_notebook_05s_slips_are_named_in_notebook_07(exercise_id):
    assert named(exercise_id, optimistic(exercise_id)) == "max_not_min"


def test_the_new_readings_name_the_wrong_answers_of_the_collection():
    from tools.wrong_answers import losses as collection
    for exercise_id, answer, name in [
            ("group_advantages", collection.mean_over_the_groups,
             "property:groups_off_centre"),
            ("group_advantages", collection.std_of_every_reward,
             "property:scaled_otherwise"),
            ("grpo_loss", collection.ratio_of_log_probs,
             "property:ratio_moves_on_policy"),
            ("grpo_loss", collection.clamp_bounds_swapped,
             "property:clip_elsewhere"),
            ("grpo_loss", collection.clipped_at_one,
             "property:clip_elsewhere"),
            ("dapo_loss", collection.dapo_ratio_of_log_probs,
             "property:ratio_moves_on_policy"),
            ("dr_grpo_loss", collection.dr_grpo_bounds_swapped,
             "property:clip_elsewhere"),
            ("dr_grpo_loss", collection.dr_grpo_objective_not_loss,
             "no_minus")]:
        assert named(exercise_id, answer) == name, answer.__name__


@pytest.mark.parametrize("exercise_id", LOSSES + ("group_advantages",))
def test_right_answers_still_pass(exercise_id):
    exercise = EXERCISES[exercise_id]
    assert checks.check(exercise_id, exercise.answer).status == "passed"
    assert checks.check(exercise_id, exercise.solution).status == "passed"

"""Several reward functions, weighed: TRL 1.16's reward_weights and
multi_objective_aggregation, as pure tensor functions (kit.losses
holds the one-reward advantages they call)."""

import torch

from kit.losses import SCALE_REWARDS

# TRL 1.16's reward_weights and multi_objective_aggregation. A reward
# function may return None for a completion it has nothing to say about
# (TRL's convention); it arrives here as nan, and every statistic below
# skips it, as TRL's nansum, nanmean and nanstd do. A completion that no
# function scored gets advantage 0. Without a nan, sum_then_normalize calls
# the course's functions above as they are: the default run is unchanged.


def nanstd(values, dim=None, keepdim=False):
    """torch.std (unbiased) of the values that are not nan; nan where
    fewer than two are (the formula of TRL's nanstd)."""
    dims = () if dim is None else dim  # () reduces every dimension
    count = (~values.isnan()).sum(dim=dims, keepdim=True)
    mean = values.nanmean(dim=dim, keepdim=True)
    variance = ((values - mean) ** 2).nanmean(dim=dim, keepdim=True)
    variance = variance * count / (count - 1)
    std = variance.where(count > 1, torch.nan).sqrt()
    return std if keepdim else std.squeeze(dim) if dim is not None \
        else std.squeeze()


def weighted_reward_sum(rewards_per_func, reward_weights):
    """Σ_f w_f·r_f per completion, skipping the functions that returned None
    (nan); nan where every function did.

    Shape: (B,) from rewards_per_func (B, F) and reward_weights (F,).
    """
    total = (rewards_per_func * reward_weights).nansum(dim=1)  # (B,)
    unscored = rewards_per_func.isnan().all(dim=1)  # (B,)
    return total.masked_fill(unscored, torch.nan)


def sum_then_normalize(rewards_per_func, reward_weights, num_generations,
                       scale_rewards):
    """TRL's default: weigh and sum each completion's rewards, then compare
    it with its group as scale_rewards says (SCALE_REWARDS).

    Shape: (B·G,) from rewards_per_func (B·G, F) and reward_weights (F,).
    """
    rewards = weighted_reward_sum(rewards_per_func, reward_weights)
    if not rewards.isnan().any():  # the course's function, as it is
        return SCALE_REWARDS[scale_rewards](rewards, num_generations)
    grouped = rewards.view(-1, num_generations)  # (B, G)
    centred = grouped - grouped.nanmean(dim=1, keepdim=True)  # (B, G)
    spread = NAN_SPREADS[scale_rewards](grouped)  # (B, 1), () or 1
    return (centred / spread).nan_to_num(nan=0.0).view(-1)  # (B·G,)


# scale_rewards's divisor when some rewards are nan: TRL's nanstd + 1e-4
# (the group's, the batch's), or none at all
NAN_SPREADS = {
    "group": lambda grouped: nanstd(grouped, dim=1, keepdim=True) + 1e-4,
    "batch": lambda grouped: nanstd(grouped) + 1e-4,
    "none": lambda grouped: 1.0,
}


def normalize_then_sum(rewards_per_func, reward_weights, num_generations,
                       scale_rewards="group"):
    """GDPO (group reward-decoupled normalisation), TRL's
    "normalize_then_sum": each function's rewards normalised within their
    group first, so a function with a wide range cannot drown the others;
    the weighted sum then normalised over the whole batch.

    scale_rewards is not read: TRL divides by the group's spread, then the
    batch's, whatever it says (GRPOConfig refuses another value).
    Shape: (B·G,) from rewards_per_func (B·G, F) and reward_weights (F,).
    """
    F = rewards_per_func.shape[1]
    grouped = rewards_per_func.view(-1, num_generations, F)  # (B, G, F)
    mean = grouped.nanmean(dim=1, keepdim=True)  # (B, 1, F)
    std = nanstd(grouped, dim=1, keepdim=True)  # (B, 1, F)
    normalised = ((grouped - mean) / (std + 1e-4)).view(-1, F)  # (B·G, F)
    rewards = (normalised * reward_weights).nansum(dim=1)  # (B·G,)
    # unscored: by the rewards as returned, not as normalised (TRL's rule)
    rewards[rewards_per_func.isnan().all(dim=1)] = torch.nan
    advantages = (rewards - rewards.nanmean()) / (nanstd(rewards) + 1e-4)
    return advantages.nan_to_num(nan=0.0)  # (B·G,)


# GRPOConfig.multi_objective_aggregation: TRL 1.16's names
MULTI_OBJECTIVE = {"sum_then_normalize": sum_then_normalize,
                   "normalize_then_sum": normalize_then_sum}

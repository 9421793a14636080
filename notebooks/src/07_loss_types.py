# %% [markdown]
# # 07 · GRPO's loss types: what divides the token losses
#
# **You will:** see how "grpo"'s per-sequence mean weighs a short
# completion's tokens more; write the "dapo" (★★) and "dr_grpo" (★★)
# normalisers; count one optimizer step's tokens exactly in
# `get_batch_samples` (★★★); write GSPO's one ratio a completion (★★);
# and train "grpo" against "dapo" on the same budget, watching completion
# length and reward.
#
# **Time:** 30–40 minutes; the cells run in about a minute on two CPU
# cores.

# %%
import torch

from kit import losses, recipes
from kit.checks import check, hint, solution
from kit.course import setup_notebook
from kit.live import LivePlotCallback
from kit.losses import per_token_kl
from kit.trainers import GRPOTrainer

setup_notebook()

# %% [markdown]
# ## One surrogate, four divisions
#
# Every loss type of TRL 1.16's `GRPOConfig.loss_type` computes the same
# clipped loss per token (notebook 05) and sums it over the completion
# tokens. They differ only in what the sum is divided by:
#
# | loss_type | divides by | source |
# |---|---|---|
# | `grpo` | each completion's own length, then the number of completions | Shao et al., 2024 |
# | `bnpo` | the micro-batch's active tokens | TRL |
# | `dr_grpo` | B × `max_completion_length` (a constant) | Liu et al., 2025 |
# | `dapo` | the active tokens of the whole optimizer step | Yu et al., 2025 |
#
# Under `grpo`, a completion's tokens share one completion's weight: a
# 2-token completion's tokens weigh 4 times as much as an 8-token one's.
# With a negative advantage, rambling on dilutes the penalty per token:
# the length bias Dr. GRPO names. Two completions, the same advantage,
# lengths 2 and 8: the weight of each token is minus the gradient on its
# log-prob.

# %%
lengths = torch.tensor([2, 8])
mask = (torch.arange(8) < lengths.unsqueeze(1)).float()  # (2, 8)
for name in ("grpo", "bnpo"):
    logps = torch.zeros(2, 8, requires_grad=True)
    loss = losses.GRPO_LOSSES[name].fn(logps, logps.detach(),
                                       torch.ones(2), mask)
    loss.backward()
    weights = ", ".join(f"{w:.3f}" for w in (-logps.grad[:, 0]).tolist())
    print(f"{name:5s} token weight, lengths 2 / 8: {weights}")

# %% [markdown]
# ## ★★ Exercise 1: `dapo_loss`
#
# DAPO (Yu et al., 2025, section 3.3) divides the sum of the masked token
# losses by a token count the caller passes in, `num_items_in_batch`. The
# caller decides what it counts; the kit passes the active tokens of the
# whole optimizer step, so every token of the step weighs the same. The
# arguments are `grpo_loss`'s (notebook 05) plus that count; add
# `beta * per_token_kl(...)` only when `beta > 0`. Stuck?
# `hint("dapo_loss", 1)` (levels 1 to 3).

# %%
def dapo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2, beta=0.0,
              ref_per_token_logps=None, num_items_in_batch=None):
    """A scalar: the masked token sum / num_items_in_batch."""
    ### BEGIN SOLUTION
    ratio = torch.exp(per_token_logps - old_per_token_logps)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    advantages = advantages.unsqueeze(1)  # (B, 1)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta > 0:
        per_token = per_token + beta * per_token_kl(per_token_logps,
                                                    ref_per_token_logps)
    total = (per_token * completion_mask.float()).sum()
    return total / num_items_in_batch
    ### END SOLUTION


check("dapo_loss", dapo_loss)

# %% [markdown]
# ## ★★ Exercise 2: `dr_grpo_loss`
#
# Dr. GRPO (Liu et al., 2025, section 3.1) divides by a constant:
# B × `max_completion_length`, the config's value — not the longest
# completion in this batch, which changes from batch to batch. A constant
# normaliser has no length bias. Stuck? `hint("dr_grpo_loss", 1)`.

# %%
def dr_grpo_loss(per_token_logps, old_per_token_logps, advantages,
                 completion_mask, epsilon=0.2, beta=0.0,
                 ref_per_token_logps=None, max_completion_length=None):
    """A scalar: the masked token sum / (B x max_completion_length)."""
    ### BEGIN SOLUTION
    ratio = torch.exp(per_token_logps - old_per_token_logps)  # (B, T)
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    advantages = advantages.unsqueeze(1)  # (B, 1)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta > 0:
        per_token = per_token + beta * per_token_kl(per_token_logps,
                                                    ref_per_token_logps)
    total = (per_token * completion_mask.float()).sum()
    return total / (per_token.shape[0] * max_completion_length)
    ### END SOLUTION


check("dr_grpo_loss", dr_grpo_loss)

# %% [markdown]
# ## Explore: each token's weight in a step
#
# Eight completions of one optimizer step, 2 to 28 tokens, split into GA
# micro-batches, each through the kit's loss of that type. Left, each
# token's weight in the step; right, each completion's total weight. Under
# "grpo" every completion weighs the same, so its tokens weigh less the
# longer it is; under "dapo" and "dr_grpo" every token weighs the same.
# "bnpo" is a token mean per micro-batch only: move GA and its weights
# split apart, while "dapo"'s stay where they are. The dotted line is TRL
# 1.16's "dapo", which divides by its generation's tokens × GA / k: move
# k (`steps_per_generation`) and it leaves the kit's "dapo" unless k = GA
# (past this step, the figure's generation holds shorter completions).

# %% tags=["plot"]
from kit.explore import explore_normalisers

explore_normalisers()

# %% [markdown]
# ## ★★★ Exercise 3: count the step's tokens, `get_batch_samples`
#
# "dapo" is one token mean over the step only if `num_items_in_batch`
# counts the tokens of exactly the step's micro-batches, on every process.
# TRL 1.16 does not count them: it takes the generation batch's token
# count and rescales it by GA / `steps_per_generation`. That is right on
# average, and exact only when the tokens spread evenly over the slices;
# with `steps_per_generation` ≠ GA the factor itself was wrong (TRL issue
# 5619, fixed by TRL PR 6024). The kit counts instead.
#
# The Trainer calls `get_batch_samples(epoch_iterator, num_batches,
# device)` once per optimizer step, with the step's GA micro-batches,
# before any of them runs. Override it: take the parent's batches (prompt
# rows), prepare each one now with `self._prepare_inputs` (the kit's
# buffer, your notebook 04's; the training step passes a prepared batch
# through it unchanged), sum their `completion_mask`, and gather the count
# over processes (`self.accelerator.gather(tokens).sum()`). Return
# `(batches, count)`. The check splits steps with GA above, below and
# equal to `steps_per_generation`, on two processes.

# %%
class MyTrainer(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        ### BEGIN SOLUTION
        batches, _ = super().get_batch_samples(epoch_iterator, num_batches,
                                               device)
        batches = [self._prepare_inputs(batch) for batch in batches]
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, self.accelerator.gather(tokens).sum()
        ### END SOLUTION


check("get_batch_samples", MyTrainer)

# %% [markdown]
# ## ★★ Exercise 4: one ratio a completion, `gspo_loss`
#
# The loss types above change what divides the token losses. GSPO (Zheng
# et al., 2025), which the Qwen team trained Qwen3 with, changes the
# ratio: TRL's `importance_sampling_level="sequence"` gives each
# completion one importance ratio, the geometric mean of its token
# ratios, and clips it once, so a completion is kept or cut whole.
#
# Write GSPO's loss without the KL term. For each completion, average the
# log-ratios `per_token_logps - old_per_token_logps` over its own
# completion tokens; the exp of that mean is its ratio, shape (B,). Clip
# the ratio to [1 − ε, 1 + ε] and average −min(ratio·A, clipped·A) over
# the completions. Stuck? `hint("gspo_loss", 1)`.

# %%
def gspo_loss(per_token_logps, old_per_token_logps, advantages,
              completion_mask, epsilon=0.2):
    """A scalar: the mean over completions of the clipped loss of each
    completion's one ratio."""
    ### BEGIN SOLUTION
    mask = completion_mask.float()
    log_ratio = (per_token_logps - old_per_token_logps) * mask  # (B, T)
    lengths = mask.sum(1).clamp(min=1)  # (B,)
    ratio = torch.exp(log_ratio.sum(1) / lengths)  # (B,): one a completion
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return -torch.min(ratio * advantages, clipped * advantages).mean()
    ### END SOLUTION


check("gspo_loss", gspo_loss)

# %% [markdown]
# Two more loss types of TRL 1.16 change the clip; the kit has both
# (`GRPOConfig(loss_type=...)`). CISPO (MiniMax-M1, 2025) clips the
# importance weight instead of the ratio in the surrogate: the weight
# min(ρ, `epsilon_high`) is detached and multiplies A·log π, so a token
# past the clip keeps its gradient. SAPO (2025) replaces the hard clip
# with a soft gate, a sigmoid of the ratio whose slope is 1 at ρ = 1 and
# fades smoothly as ρ moves away, a little faster for negative
# advantages.

# %% [markdown]
# ## "grpo" against "dapo" on the toy world
#
# The course's GRPO recipe twice, changing only `loss_type`: same seed,
# data, steps, learning rate and sampling. At the course's temperature 1
# the starting policy stops right after the digits on nearly every sum,
# so no length can drift: measured, the two arms' mean lengths agreed to
# 0.003 token. `recipes.loss_type_comparison` samples hot instead
# (`temperature=3.0`), where the policy rambles, with room to ramble
# (`max_completion_length=16`), and trains 100 steps at
# `learning_rate=1e-3`. The plots show the reward and
# `completions/mean_length`.

# %% tags=["train"]
curves = {}
for loss_type in ("grpo", "dapo"):
    plot = LivePlotCallback(("reward", "completions/mean_length"),
                            title=f'loss_type="{loss_type}"')
    trainer = recipes.loss_type_comparison(loss_type, callbacks=[plot])
    recipes.quiet(trainer)
    trainer.train()
    curves[loss_type] = [row["completions/mean_length"]
                         for row in trainer.state.log_history
                         if "completions/mean_length" in row]
    late = curves[loss_type][len(curves[loss_type]) // 2:]
    print(f"{loss_type}: completions/mean_length, last half:"
          f" {sum(late) / len(late):.2f}")

# %% [markdown]
# Every ramble is a wrong answer, so both arms prune them: the mean length
# falls from about 4.4 toward the answers' 3.5. "grpo" prunes more
# slowly. A long wrong completion shares one completion's penalty among
# all its tokens, so each of them is pushed down less than under "dapo",
# where every token weighs the same. On CPU, seeds 0 to 4, the last half
# of the run averaged 4.18 tokens under "grpo" against 3.92 under "dapo"
# (medians), "grpo" the longer on every seed by 0.11 to 0.32, at the same
# reward (about 0.07: hot samples are rarely right). The gap is small,
# and its size moves with the seed (and may with the CPU): read its
# direction, not its figure. `tools/lengthbias.py` in the kit's repository measures it
# over seeds.
#
# The figure has no GSPO arm: on this toy world it shows no difference
# one run could show. Measured the same way (`--set
# importance_sampling_level=sequence`), the last half averaged 4.25
# tokens under "grpo" and 4.10 under "dapo" at the sequence level against
# 4.18 and 3.92 at the token level (medians, seeds 0 to 4): longer on 4
# seeds of 5 (by up to 0.40) and shorter on one, about as much as one
# seed differs from another. GSPO was
# made for long completions, whose many token ratios it averages; these
# are 3 to 5 tokens long.
#
# ## What you learned
#
# - The loss types share GRPO's per-token loss; they differ in what
#   divides its sum, and so in how much each token weighs.
# - "grpo"'s per-sequence mean favours short completions' tokens; "dapo"
#   and "dr_grpo" weigh every token the same.
# - "dapo" is exact only with the step's own token count: the kit counts
#   it in `get_batch_samples`, before the step's micro-batches run.
# - GSPO changes the ratio instead: one a completion, the exp of the mean
#   of its tokens' log-ratios, clipped once.

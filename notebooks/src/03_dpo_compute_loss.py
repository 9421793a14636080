# %% [markdown]
# # 03 · DPO by overriding `compute_loss`
#
# **You will:** see why preference data has no labels; compute a sequence's
# log-probability (★); write the DPO loss (★★); find the bug in a published
# snippet (★★); and write DPO's whole `compute_loss` (★★★) — then watch it
# make the starting policy prefer right sums to near misses.
#
# **Time:** 30–40 minutes; the cells run in about a minute on two CPU
# cores.

# %%
import torch
import torch.nn.functional as F

from kit import recipes, tasks
from kit.checks import check, hint, solution
from kit.course import setup_notebook, show
from kit.live import LivePlotCallback
from kit.losses import dpo_loss, sequence_logps
from kit.models import greedy_accuracy, load_policy
from kit.trainers import DPOConfig, DPOTrainer

setup_notebook()

# %% [markdown]
# ## Preferences, not labels
#
# Each row says which of two answers is better. There is no single target
# sequence, so there are no `labels` — and nothing for the model's own loss
# to work with. We must write `compute_loss` ourselves.

# %%
pairs = tasks.preference_dataset("train", n=4)
print(pairs[:])

# %% [markdown]
# `DPOTrainer` tokenises each row and its collator stacks **[all chosen;
# all rejected]** into one batch, so the policy sees both halves in one
# forward pass. `completion_mask` marks the answer tokens (and `<eos>`): only
# they count.

# %%
from kit.models import run_path  # runs/ at the repository's root

policy, tokenizer = load_policy()
args = DPOConfig(run_path("runs/03_peek"), per_device_train_batch_size=4,
                 report_to="none")
peek = DPOTrainer(model=policy, args=args, train_dataset=pairs,
                  processing_class=tokenizer)
batch = next(iter(peek.get_train_dataloader()))
for ids, completion in zip(batch["input_ids"], batch["completion_mask"]):
    print(f"{tokenizer.decode(ids, skip_special_tokens=True):<12}",
          completion.tolist())

# %% [markdown]
# ## ★ Exercise 1: `sequence_logps(logits, input_ids, completion_mask)`
#
# The log-probability the model gives a whole completion: the **sum** of
# its tokens' log-probs. The shift is the one from notebook 01 — logits at
# position *t* score token *t+1* — and the mask shifts with the tokens.
# Stuck? `hint("sequence_logps", 1)` (levels 1 to 4); `solution(...)` with
# an exercise's id prints an answer you can paste into its cell.

# %%
def sequence_logps(logits, input_ids, completion_mask):
    """Summed log-probs of the completion tokens. Shape: (B,)."""
    ### BEGIN SOLUTION
    logprobs = logits[:, :-1, :].log_softmax(-1)  # (B, T-1, V)
    targets = input_ids[:, 1:]  # (B, T-1)
    token_logps = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return (token_logps * completion_mask[:, 1:]).sum(-1)  # (B,)
    ### END SOLUTION


check("sequence_logps", sequence_logps)

# %% [markdown]
# ## ★★ Exercise 2: `dpo_loss`
#
# DPO (Rafailov et al., 2023, eq. 7) compares the policy π with a frozen
# reference: how much more does π prefer chosen over rejected than the
# reference does?
#
# $$\mathcal{L} = -\log\sigma\Big(\beta\big[(\pi_c - \mathrm{ref}_c) -
# (\pi_r - \mathrm{ref}_r)\big]\Big)$$
#
# Return one loss per pair and the implicit rewards β·(π − ref) of chosen
# and rejected, detached (they are for logging).

# %%
def dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
             ref_rejected_logps, beta=0.1):
    ### BEGIN SOLUTION
    chosen_logratios = policy_chosen_logps - ref_chosen_logps  # (B,)
    rejected_logratios = policy_rejected_logps - ref_rejected_logps  # (B,)
    losses = -F.logsigmoid(beta * (chosen_logratios - rejected_logratios))
    chosen_rewards = beta * chosen_logratios.detach()
    rejected_rewards = beta * rejected_logratios.detach()
    return losses, chosen_rewards, rejected_rewards
    ### END SOLUTION


check("dpo_loss", dpo_loss)

# %% [markdown]
# ## ★★ Exercise 3: the published snippet
#
# This line circulated in a well-known DPO write-up, with
# `chosen_scores = π_c − ref_c` and `rejected_scores = π_r − ref_r`:
#
# ```python
# loss = -F.logsigmoid(self.beta * chosen_scores - rejected_scores)
# ```
#
# It trains, and it is wrong. Compare it with the equation above, then
# write the corrected line. (The `dpo_loss` checker rejects the snippet's
# formula too.)

# %%
def fixed_snippet(chosen_scores, rejected_scores, beta):
    ### BEGIN SOLUTION
    return -F.logsigmoid(beta * (chosen_scores - rejected_scores))
    ### END SOLUTION


check("dpo_snippet", fixed_snippet)

# %% [markdown]
# With β = 0.1, the snippet weighs the rejected side ten times more than
# the chosen one. What that does to training, you will see below, after
# your own DPO has trained.

# %% [markdown]
# ## Explore: β, the loss, and the snippet
#
# One pair with margin h = (π_c − ref_c) − (π_r − ref_r). Left, its loss;
# right, how hard the gradient pushes the chosen log-prob up and the
# rejected one down. The kit's DPO pushes both equally, β·σ(−βh); the
# snippet pushes rejected 1/β times harder than chosen. Move β, try
# `ipo` and `hinge`.

# %% tags=["plot"]
from kit.explore import explore_dpo

explore_dpo()

# %% [markdown]
# ## ★★★ Exercise 4: DPO's `compute_loss`
#
# Put it together in a subclass of `DPOTrainer` (which supplies the
# tokenising, the collator, `self.ref_model` and the logging):
#
# 1. one forward pass of `model` over `inputs["input_ids"]` (with its
#    `attention_mask`), then `sequence_logps` → `(2B,)`;
# 2. the same for `self.ref_model` under `torch.no_grad()`;
# 3. `.chunk(2)` splits chosen from rejected; `dpo_loss(..., beta=
#    self.args.beta)`;
# 4. return `losses.sum() / (num_items_in_batch or len(losses))`: the
#    trainer counts the pairs of a whole accumulated step, so gradient
#    accumulation stays exact (notebook 01's lesson);
# 5. for the live plot, `self._remember(chosen_rewards, rejected_rewards,
#    chosen_logps, rejected_logps)`.

# %%
class MyDPOTrainer(DPOTrainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ### BEGIN SOLUTION
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        completion_mask = inputs["completion_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        logps = sequence_logps(logits, ids, completion_mask)  # (2B,)
        with torch.no_grad():
            ref_logits = self.ref_model(input_ids=ids,
                                        attention_mask=mask).logits
            ref_logps = sequence_logps(ref_logits, ids, completion_mask)
        chosen, rejected = logps.chunk(2)
        ref_chosen, ref_rejected = ref_logps.chunk(2)
        losses, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.args.beta)
        loss = losses.sum() / (num_items_in_batch or len(losses))
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss
        ### END SOLUTION


check("dpo_compute_loss", MyDPOTrainer)

# %% [markdown]
# ## Train it
#
# From the starting policy, each training sum against every one of its
# near misses (β = 1, the learning rate decaying to 0), for 150 steps
# to stay near a minute: `python -m kit train dpo` runs the same
# configuration for 700 (`recipes.DPO_NOTEBOOK` is the difference). The
# right-hand panel shows `rewards/margins` climbing and `rewards/accuracies` —
# how often the policy now prefers the right answer more than the reference
# did — on the training batches (line) and on held-out sums (dots).

# %% tags=["train"]
held_out = tasks.prompt_dataset("test")
accuracy_before = greedy_accuracy(policy, tokenizer, held_out)
print(f"greedy {accuracy_before=:.3f} (held-out)")

# %% tags=["train", "uses-exercise"]
trainer = recipes.dpo_trainer(
    "cpu", output_dir="runs/03_dpo", trainer_class=MyDPOTrainer,
    **recipes.DPO_NOTEBOOK,
    callbacks=[LivePlotCallback(("rewards/margins", "rewards/accuracies"),
                                title="MyDPOTrainer")])
recipes.quiet(trainer)
result = trainer.train()
print(f"global_step={result.global_step}, "
      f"train_runtime={result.metrics['train_runtime']:.0f} s")

# %% tags=["train", "uses-exercise"]
final = trainer.evaluate()
print(f"eval_rewards/accuracies: {final['eval_rewards/accuracies']:.2f}")
accuracy_after = greedy_accuracy(trainer.model, tokenizer, held_out)
print(f"greedy {accuracy_before=:.3f} -> {accuracy_after=:.3f} (held-out)")

# What this run should show on any CPU. Once your exercises pass, a line
# below says so if it does not.
from kit.course import expect
history = trainer.state.log_history
losses = [row["loss"] for row in history if "loss" in row]
evals = [row["step"] for row in history if "eval_rewards/margins" in row]
expect("losses[-1] < losses[0] / 2", losses[-1] < losses[0] / 2,
       f"{losses[0]:.3f} -> {losses[-1]:.3f}")
expect("evals[0] == 0 and evals[-1] == max_steps",
       evals[0] == 0 and evals[-1] == recipes.DPO_NOTEBOOK["max_steps"],
       f"steps {evals}")
expect("eval_rewards/margins > 1",
       final["eval_rewards/margins"] > 1.0,
       f"{final['eval_rewards/margins']:.2f}")
expect("eval_rewards/accuracies >= 0.75",
       final["eval_rewards/accuracies"] >= 0.75,
       f"{final['eval_rewards/accuracies']:.2f}")
expect("accuracy_after >= accuracy_before",
       accuracy_after >= accuracy_before,
       f"{accuracy_before:.3f} -> {accuracy_after:.3f}")

# %% [markdown]
# DPO never generated a token, yet greedy answers improved: pushing the
# near misses down and the right sums up moved probability where it
# belongs. (On real data DPO can also push *both* down — watch
# `logps/chosen` in the logs.)
#
# ## The published snippet, trained
#
# The snippet "trains, and it is wrong". See for yourself: the same trainer,
# data, β = 0.5 and budget twice — 60 steps from the starting policy —
# once with the paper's loss, once with the snippet's. Only `loss_fn`, the
# function `DPOTrainer.compute_loss` calls, differs. (β = 0.5, not the
# recipe's 1: at β = 1 the misplaced bracket changes nothing. These runs
# use the kit's trainer, so they work even if exercise 4 is not done.)

# %% tags=["train"]
from kit import losses


def snippet_loss(policy_chosen_logps, policy_rejected_logps,
                 ref_chosen_logps, ref_rejected_logps, beta=0.1):
    """DPO as the published snippet computes it: β on the chosen side."""
    chosen = policy_chosen_logps - ref_chosen_logps  # (B,)
    rejected = policy_rejected_logps - ref_rejected_logps  # (B,)
    snippet = -F.logsigmoid(beta * chosen - rejected)  # the bug
    return snippet, beta * chosen.detach(), beta * rejected.detach()


BUDGET = 60  # steps, for both
runs = {}
for name, loss_fn in (("paper", losses.dpo_loss), ("snippet", snippet_loss)):
    side = recipes.dpo_trainer(
        "cpu", output_dir=f"runs/03_{name}", max_steps=BUDGET, beta=0.5,
        eval_steps=BUDGET // 2, callbacks=[LivePlotCallback(
            ("rewards/margins", "rewards/accuracies"), title=name)])
    side.loss_fn = loss_fn
    recipes.quiet(side).train()
    runs[name] = side

# %% [markdown]
# The numbers behind the plots: training loss, the held-out margin
# β·((π_c − ref_c) − (π_r − ref_r)) — positive when the policy prefers the
# right sum more than the reference did — and greedy accuracy on held-out
# sums.

# %% tags=["train"]
verdicts = {}
for name, side in runs.items():
    history = side.state.log_history
    loss = [row["loss"] for row in history if "loss" in row]
    margin = [row["eval_rewards/margins"] for row in history
              if "eval_rewards/margins" in row]
    accuracy = greedy_accuracy(side.model, tokenizer, held_out)
    verdicts[name] = (loss[-1] < loss[0], margin[-1] < margin[0],
                      accuracy < accuracy_before)
    print(f"{name:<8} loss {loss[0]:.3f} → {loss[-1]:.3f}   held-out margin "
          f"{margin[0]:+.2f} → {margin[-1]:+.2f}   greedy accuracy "
          f"{accuracy_before:.3f} → {accuracy:.3f}")
for name, (loss_fell, margin_fell, accuracy_fell) in verdicts.items():
    arrows = ["↓" if fell else "↑"
              for fell in (loss_fell, margin_fell, accuracy_fell)]
    print(f"{name}: loss {arrows[0]}, margin {arrows[1]}, "
          f"accuracy {arrows[2]}")

# %% [markdown]
# **Your turn to think.** Both losses go down. Why does the snippet's
# policy get *worse* — margins down, fewer right answers — while its loss
# falls? Look at what β multiplies in `β·chosen − rejected`, and ask what
# happens to it when the policy lowers the log-probs of *both* answers by
# the same amount d.
#
# *Answer:* β·(−d) − (−d) = (1 − β)·d > 0: with β < 1, pushing both answers
# down lowers the snippet's loss. A near miss and the right sum share most
# of their tokens, so the cheapest way down is to make every answer less
# likely — the right ones too. In the paper's β·(chosen − rejected) a
# shared shift cancels: only the *difference* pays.
#
# ## The kit's trainer, whole
#
# Your `compute_loss` is the heart of `kit.trainers.DPOTrainer`. The rest:
# `get_batch_samples` counts pairs for gradient accumulation,
# `prediction_step` computes the loss although batches have no labels (the
# stock one would skip it), and `log` adds TRL's metric names.

# %%
show(DPOTrainer)

# %% [markdown]
# ## Your trainer beside TRL's
#
# The kit's tests check its DPO against TRL's; this cell checks yours. The
# same 8 pairs, a policy moved a little off its reference, β = 0.5: your
# `MyDPOTrainer.compute_loss`, then TRL's `DPOTrainer` (the sigmoid loss),
# each on its own trainer's batch — both losses and their difference.
# (Without TRL, one line says how to install it.)

# %%
from kit.beside_trl import dpo_beside_trl

comparison = dpo_beside_trl(MyDPOTrainer)

# %% [markdown]
# ## What you learned
#
# - Preference batches carry no labels: `compute_loss` must build the loss,
#   and `prediction_step` must be told to evaluate it.
# - One forward pass over [chosen; rejected]; a frozen reference under
#   `no_grad`; completion-only log-probs.
# - β multiplies the *difference* of log-ratios — a misplaced bracket
#   changes the algorithm.

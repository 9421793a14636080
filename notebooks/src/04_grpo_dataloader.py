# %% [markdown]
# # 04 · GRPO's dataloader: generate once, train for several steps
#
# **You will:** measure why generation is the dear part of RL; override
# `get_train_dataloader` so that one batch serves `steps_per_generation`
# steps (★★); write the generation buffer in `_prepare_inputs` (★★★); and
# watch the cost of `generate()` fall on the live plot, k = 1 against k = 8.
#
# **Time:** 30–40 minutes; the cells run in about 20 seconds on two CPU
# cores.

# %%
import time

import torch

from kit import recipes, tasks
from kit.checks import check, hint, solution
from kit.course import setup_notebook, show
from kit.live import LivePlotCallback, compare_generation_cost
from kit.models import load_policy
from kit.trainers import GRPOConfig, GRPOTrainer

setup_notebook()

# %% [markdown]
# ## Generation is autoregressive, and dear
#
# A training step runs the model once, forward and backward, over every
# token *in parallel*. `generate()` runs it once *per new token*, one after
# the other. Time both on the same 32 sequences, for longer and longer
# completions:

# %% tags=["train"]
policy, tokenizer = load_policy()
prompts = tokenizer(["12+34="] * 32, return_tensors="pt")
optimizer = torch.optim.AdamW(policy.parameters())


def median_ms(work, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return 1000 * sorted(times)[repeats // 2]


timings = {}  # new tokens -> (generate ms, training step ms)
for new_tokens in (4, 16, 48):
    with torch.no_grad():
        sequences = policy.generate(
            **prompts, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
            do_sample=True, top_k=0, pad_token_id=tokenizer.pad_token_id)

    def generate():
        with torch.no_grad():
            policy.generate(**prompts, max_new_tokens=new_tokens,
                            min_new_tokens=new_tokens, do_sample=True,
                            top_k=0, pad_token_id=tokenizer.pad_token_id)

    def train_step():
        policy(input_ids=sequences, labels=sequences).loss.backward()
        optimizer.zero_grad()

    timings[new_tokens] = median_ms(generate), median_ms(train_step)
    print(f"{new_tokens:>2} new tokens: generate {timings[new_tokens][0]:6.1f}"
          f" ms   training step {timings[new_tokens][1]:6.1f} ms")

generation_grew = timings[48][0] / timings[4][0]
training_grew = timings[48][1] / timings[4][1]
print(f"4 → 48 new tokens: generate ×{generation_grew:.1f}, "
      f"training step ×{training_grew:.1f}")

# %% [markdown]
# Both grow — the training step's sequences get longer too — and the last
# line gives both factors: generation's should be the larger. It runs
# the model once per new token, one after the other, while the training
# step handles every token of a sequence in one parallel pass. On a GPU the
# gap is wider still: the training step is a few big parallel kernels,
# generation many small ones.
# And RL needs fresh samples all the time: GRPO samples G completions of
# every prompt.
#
# The fix TRL uses: **generate for several steps at once**. With
# `steps_per_generation = k`, one `generate()` call makes the completions
# of k optimizer micro-steps, and they are served one slice per step.
#
# ## ★★ Exercise 1: `get_train_dataloader`
#
# The Trainer's loop takes one dataloader batch per micro-step. Keep that
# shape, but make each batch **k times bigger**: the stock method with
# `batch_size = self._train_batch_size * self.args.steps_per_generation`.
# Keep `sampler_fn=self._get_train_sampler`: GRPO's sampler repeats each
# prompt G times in a row and serves each big batch k times, so the loop
# still gets one batch per step — the same one, k times over.
# Stuck? `hint("get_train_dataloader", 1)` (levels 1 to 4), and
# `solution("get_train_dataloader")` prints an answer.

# %%
show(GRPOTrainer._get_train_sampler)


# %%
class MyGRPOTrainer(GRPOTrainer):
    def get_train_dataloader(self):
        ### BEGIN SOLUTION
        return self._get_dataloader(
            self.train_dataset, "Training",
            sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)
        ### END SOLUTION


check("get_train_dataloader", MyGRPOTrainer)

# %% [markdown]
# The example from the Trainer docs, made real: a train batch of 4 with
# `steps_per_generation=8` gives one dataloader batch of 32 — and 8 times
# fewer `generate()` calls.

# %% tags=["train", "uses-exercise"]
from kit.models import run_path  # runs/ at the repository's root

args = GRPOConfig(run_path("runs/04_docs"), per_device_train_batch_size=4,
                  num_generations=4, steps_per_generation=8, report_to="none")
docs_example = MyGRPOTrainer(
    policy, [tasks.correctness_reward], args=args,
    train_dataset=tasks.prompt_dataset("train", n=64),
    processing_class=tokenizer)
batches = iter(docs_example.get_train_dataloader())
first = [next(batches) for _ in range(8)]
print("len(first[0]):", len(first[0]))
print("all equal:", all(b == first[0] for b in first))
print("prompts:", sorted({row["prompt"] for row in first[0]}))

# %% [markdown]
# ## Explore: the sampler, slice by slice
#
# Each row is one micro-step's dataloader batch, drawn from the trainer's
# own `RepeatSampler` (colour: the prompt; each prompt G times in a row).
# The same big batch comes k times; `generate()` runs on the first and the
# box marks the slice each micro-step trains on (the buffer shuffles the
# rows first). Move the batch size, G, k and GA: the title counts the
# `generate()` calls for N = 8 optimizer steps, N·GA/k.

# %% tags=["plot"]
from kit.explore import explore_sampler

explore_sampler()

# %% [markdown]
# ## ★★★ Exercise 2: the buffer in `_prepare_inputs`
#
# `_prepare_inputs` runs at the start of every micro-step. Make it:
#
# - in evaluation (`not self.model.training`): return
#   `self._generate_and_score(generation_batch, greedy=True)`;
# - in training, when `self._step % k == 0` (or `self._buffer is None`):
#   generate for the whole big batch with
#   `self._generate_and_score(generation_batch)` — a dict of tensors with
#   one row per completion — and cut it into k slices in `self._buffer`.
#   Shuffle the rows first, as TRL does (`shuffle_sequence_dict`), so each
#   slice mixes groups: the advantages are already computed, groups need
#   not stay together. One order for every key, so that row i of each key
#   is still the same completion;
# - serve `self._buffer[self._step % k]`, then count the step.
#
# Some values in the dict are `None` (e.g. `old_per_token_logps` while
# on-policy): keep them `None` in every slice.

# %%
class MyBufferedTrainer(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        ### BEGIN SOLUTION
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = [{key: None if value is None else value[rows]
                             for key, value in batch.items()}
                            for rows in order.chunk(k)]
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs
        ### END SOLUTION


check("prepare_inputs", MyBufferedTrainer)

# %% [markdown]
# ## Watch the cost fall: k = 1 against k = 8
#
# The same run twice from the starting policy — 2 prompts × 8 completions
# a step, 48 steps, a log every step — once generating every step, once
# every 8 steps. The right-hand panel shows the seconds spent in
# `generate()` so far (the per-step cost is the light line), on the same
# scales for both runs.

# %% tags=["train", "uses-exercise"]
histories, plots = {}, []
for k in (1, 8):
    plot = LivePlotCallback("reward", title=f"k = {k}", share_y=plots)
    plots.append(plot)
    trainer = recipes.grpo_trainer(
        "cpu", output_dir=f"runs/04_k{k}", trainer_class=MyBufferedTrainer,
        max_steps=48, steps_per_generation=k, per_device_train_batch_size=16,
        logging_steps=1, eval_strategy="no", eval_on_start=False,
        callbacks=[plot])
    recipes.quiet(trainer)
    trainer.train()
    histories[f"k = {k}"] = trainer.state.log_history

# %% tags=["train", "uses-exercise"]
compare_generation_cost(histories)

# %% tags=["train", "uses-exercise"]
for label, history in histories.items():
    last = [row for row in history if "generation/calls" in row][-1]
    print(f"{label}: {last['generation/calls']} generate() calls, "
          f"{last['generation/seconds']:.2f} s generating, "
          f"{last['generation/tokens']} tokens")

# %% [markdown]
# 8 times fewer calls. The seconds fall too, usually by less than 8 times:
# one call over 8 times more sequences costs more than one small call.
# What batching saves is the fixed cost of each call and of each token
# step, which on a CPU with a tiny model is most of the cost.
# `python -m kit bench` measures this properly, with medians over repeats.
#
# The price: with k > gradient accumulation steps, the later slices were
# sampled by a policy that has since taken optimizer steps. They are
# *off-policy*, so the trainer keeps the log-probs they were sampled with
# (`old_per_token_logps`) and the loss corrects with a ratio — clipped, as
# notebook 05 explains.
#
# ## The kit's trainer
#
# Your two overrides are the first two methods of `GRPOTrainer`:

# %%
show(GRPOTrainer.get_train_dataloader)
show(GRPOTrainer._prepare_inputs)

# %% [markdown]
# ## What you learned
#
# - Generation costs a forward pass per token; training one per batch.
# - `get_train_dataloader` with a k-times bigger batch and a repeating
#   sampler keeps the Trainer's loop unchanged.
# - `_prepare_inputs` generates once per k micro-steps and serves slices:
#   `generation/calls` after N steps is N·GA/k.

# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # 00 · Setup: the toy world and the map of the Trainer
#
# **You will:** check your machine, meet the toy world the whole course trains
# on (a character tokenizer, two-digit sums, tiny Llama models), and trace a
# real `Trainer.train()` to see where it calls the methods you will override.
#
# **Time:** about 5 minutes to read; the cells run in about 10 seconds on two
# CPU cores. No exercises yet.

# %%
from kit.course import setup_notebook, show

setup_notebook()

# %% [markdown]
# ## Is this machine ready?
#
# `python -m kit doctor` prints the same report in a terminal. It tells you
# the device (`cuda`, `mps` or `cpu`) and the **preset**: `"cpu"` (tiny
# models, seconds per run) or `"gpu"` (larger ones, when you have a GPU).

# %%
from kit import doctor

problems = doctor.report()
print("ready" if not problems else problems)

# %% [markdown]
# ## The toy world
#
# Real language models take hours to show anything. Our world is small enough
# to learn in seconds: **two-digit addition**. A character tokenizer turns
# every character into one token, and puts `<bos>` in front, like Llama's.

# %%
from kit import tasks

tokenizer = tasks.make_tokenizer()
ids = tokenizer("07+35=42")["input_ids"]
print(ids)
print(tokenizer.convert_ids_to_tokens(ids))
print("vocabulary:", len(tokenizer), "tokens")

# %% [markdown]
# The datasets come in the formats TRL users know: `prompt`/`completion` for
# supervised fine-tuning, `prompt`/`chosen`/`rejected` for preferences (DPO),
# `prompt`/`answer` for reinforcement learning (GRPO). Every one has a
# `"test"` split of 1000 held-out sums that no training split ever contains:
# that is where we measure learning.

# %%
print(tasks.sft_dataset("train", n=3)[:])
print(tasks.preference_dataset("train", n=3)[:])
print(tasks.prompt_dataset("test", n=3)[:])

# %% [markdown]
# Reward functions have TRL's signature `reward(prompts, completions,
# **columns) -> list[float]`: the dataset's other columns (here `answer`)
# arrive as keyword arguments.

# %%
prompts, completions = ["07+35=", "07+35=", "07+35="], ["42", "43", "4+2"]
print(tasks.correctness_reward(prompts, completions, answer=["42"] * 3))
print(tasks.format_reward(prompts, completions))

# %% [markdown]
# ## The tiny model and the starting policy
#
# `tiny_model(preset)` is a Llama with random weights. `load_policy()` loads
# the course's **starting policy**: the same model fine-tuned with the stock
# `Trainer` just long enough to get about half of the held-out sums right —
# room for DPO and GRPO to improve it later.

# %%
from kit import models

fresh = models.tiny_model("cpu")
config = fresh.config
print(f"{fresh.num_parameters():,} parameters, num_hidden_layers="
      f"{config.num_hidden_layers}, hidden_size={config.hidden_size}")

policy, tokenizer = models.load_policy()
held_out = tasks.prompt_dataset("test")
accuracy = models.greedy_accuracy(policy, tokenizer, held_out)
print(f"greedy {accuracy=:.3f} (held-out)")
print(models.complete(policy, tokenizer, held_out["prompt"][:8]),
      "should be", held_out["answer"][:8])

# %% [markdown]
# ## Where does `Trainer.train()` call what?
#
# Every lesson overrides one `Trainer` method. Rather than draw the loop from
# memory, we *trace* a real run: `trace_calls` wraps a few methods of one
# trainer and records every callback event. Two optimizer steps with
# gradient accumulation 2, one log per step, one evaluation at the end.

# %%
from kit import recipes
from kit.trace import format_calls, trace_calls

trainer = recipes.sft_trainer(
    "cpu", output_dir="runs/00_trace", max_steps=2, logging_steps=1,
    per_device_train_batch_size=4, gradient_accumulation_steps=2,
    eval_strategy="steps", eval_steps=2, per_device_eval_batch_size=100)
calls = trace_calls(trainer)
trainer.train()
print(format_calls(calls))

# %% [markdown]
# Read it from the top:
#
# - `get_train_dataloader()` runs **once**, before the loop: it decides what
#   every batch looks like. GRPO overrides it (notebook 04).
# - each micro-batch goes through `training_step()`, which calls
#   `_prepare_inputs()` (move to the device — GRPO generates here) and
#   `compute_loss()` (the lesson of notebooks 01, 03 and 05);
# - after `gradient_accumulation_steps` micro-batches the optimizer steps,
#   and the callbacks hear about it (`on_step_end`, `on_log`): notebook 02;
# - `evaluate()` calls `prediction_step()`, which calls `compute_loss()` too.
#
# The method that the next notebook opens:

# %%
from transformers import Trainer

show(Trainer.training_step)

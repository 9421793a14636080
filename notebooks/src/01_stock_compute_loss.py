# %% [markdown]
# # 01 · The stock `compute_loss`
#
# **You will:** see what `Trainer.compute_loss` does, write the
# language-model loss yourself (★), put it in a `compute_loss` override and train with it
# (★★), then fall into the gradient-accumulation trap — with numbers — and
# climb out with `num_items_in_batch` and `loss_is_scaled_for_ga`.
#
# **Time:** 20–30 minutes; the cells run in about 20 seconds on two CPU
# cores.

# %%
import torch
import torch.nn.functional as F
from transformers import DataCollatorForSeq2Seq, Trainer

from kit import losses, recipes, tasks
from kit.checks import check, hint, solution
from kit.course import setup_notebook, show
from kit.live import LivePlotCallback
from kit.models import load_policy

setup_notebook()

# %% [markdown]
# ## What the stock method does
#
# Stripped of its special cases (label smoothing, a custom
# `compute_loss_func`, sequence parallelism), `Trainer.compute_loss` is
# `outputs = model(**inputs)` and `loss = outputs["loss"]`: the *model*
# computes its loss when `inputs` holds `labels`. Here is the real thing:

# %%
show(Trainer.compute_loss)

# %% [markdown]
# Look at one batch. `labels` are the `input_ids` with the prompt and the
# padding replaced by `-100`: only the answer (and `<eos>`) is learned.

# %%
model, tokenizer = load_policy()
rows = tasks.sft_dataset("train", n=4).map(
    recipes.sft_features(tokenizer), remove_columns=["prompt", "completion"])
batch = DataCollatorForSeq2Seq(tokenizer, padding=True)(list(rows))
print(batch["input_ids"])
print(batch["labels"])

outputs = model(**batch)
print("logits:", tuple(outputs.logits.shape),
      f" outputs.loss: {outputs.loss.item():.4f}")

# %% [markdown]
# ## ★ Exercise 1: `causal_lm_loss(logits, labels)`
#
# Write the loss the model computed. Two things to get right:
#
# 1. **The shift.** The logits at position *t* predict token *t+1*, so
#    compare `logits[:, :-1]` with `labels[:, 1:]`.
# 2. **The mask.** Labels of `-100` count for nothing: the mean is over the
#    labelled tokens only.
#
# `F.cross_entropy` does the rest; keep the loss attached to the logits
# (no `.detach()`, no `torch.no_grad()`): the Trainer backpropagates it.
# Stuck? `hint("causal_lm_loss", 1)`: right after a failed `check` it starts
# from what went wrong, then climbs (levels 1 to 4). And
# `solution("causal_lm_loss")` prints an answer you can paste into the cell.

# %%
def causal_lm_loss(logits, labels):
    """Mean next-token cross-entropy over labelled tokens. Shape: ()."""
    ### BEGIN SOLUTION
    logits = logits[:, :-1, :]  # (B, T-1, V): position t predicts t+1
    labels = labels[:, 1:]  # (B, T-1)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           labels.reshape(-1), ignore_index=-100)
    ### END SOLUTION


check("causal_lm_loss", causal_lm_loss)

# %% tags=["uses-exercise"]
yours = causal_lm_loss(outputs.logits, batch["labels"]).item()
print(f"yours: {yours:.4f}  the model's: {outputs.loss.item():.4f}")

# %% [markdown]
# ## ★★ Exercise 2: a `compute_loss` override
#
# Subclass `Trainer` and compute the loss yourself: take `labels` out of
# `inputs` (so the model does not compute a loss of its own), run the model,
# apply your `causal_lm_loss`. Return `(loss, outputs)` when
# `return_outputs=True` — `evaluate()` asks for both.
#
# The checker calls it as training does, also with
# `gradient_accumulation_steps=2` over two uneven micro-batches (1 and 3
# rows), where the Trainer passes `num_items_in_batch`, the token count of
# both. A mean that ignores it passes here (the trap comes below), and so
# does a sum divided by it; dividing by anything more does not. Stuck?
# `hint("compute_loss", 1)` (levels 1 to 4).

# %%
class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        ### BEGIN SOLUTION
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = causal_lm_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss
        ### END SOLUTION


check("compute_loss", MyTrainer)

# %% [markdown]
# Now train a fresh tiny model with it, and watch. `LivePlotCallback` redraws
# one figure as the Trainer logs, with the step, the time elapsed and the
# time left above it; a panel for generation joins in notebook 04.
#
# A falling loss proves little on its own: *your* `compute_loss` computes
# it, and a wrong loss can fall faster than the right one (an unshifted one
# reaches 0 by copying its input). So we also measure, with the kit's own
# code, how often the model's top guess for the next answer token is right
# on held-out sums.

# %%
def next_token_accuracy(model, dataset, collator):
    """Share of labelled tokens whose next-token guess is right."""
    batch = collator(list(dataset)).to(model.device)
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"],
                       attention_mask=batch["attention_mask"]).logits
    guesses = logits[:, :-1].argmax(-1)  # (B, T-1): position t guesses t+1
    labels = batch["labels"][:, 1:]
    scored = labels != -100
    return (guesses[scored] == labels[scored]).float().mean().item()


# %% tags=["train", "uses-exercise"]
trainer = recipes.sft_trainer(
    "cpu", output_dir="runs/01_mytrainer", trainer_class=MyTrainer,
    max_steps=150, logging_steps=10, eval_strategy="steps", eval_steps=50,
    callbacks=[LivePlotCallback(title="MyTrainer")])
recipes.quiet(trainer)
result = trainer.train()
print(f"global_step={result.global_step}, "
      f"train_runtime={result.metrics['train_runtime']:.0f} s")
accuracy = next_token_accuracy(trainer.model, trainer.eval_dataset,
                               trainer.data_collator)
print(f"eval_loss={trainer.evaluate()['eval_loss']:.3f}, "
      f"next-token {accuracy=:.3f}")

# %% [markdown]
# ## The gradient-accumulation trap
#
# With `gradient_accumulation_steps=2` the Trainer backpropagates two
# micro-batches and then steps once. That step should equal one step on the
# two micro-batches joined into one batch. Does it with your trainer?
#
# `accumulated_gradient` runs `training_step` over micro-batches exactly as
# `Trainer.train()` does. Our 4-row batch is split unevenly (1 + 3 rows), as
# the last batch of an epoch often is.

# %% tags=["train"]
from kit.gradients import accumulated_gradient, ga_verdict, split

show(accumulated_gradient)


def compare_with_one_big_batch(trainer_class, label):
    """Print and return how the accumulated gradient compares: ×size, off."""
    trainer = recipes.sft_trainer("cpu", output_dir="runs/01_ga",
                                  model=model, trainer_class=trainer_class)
    big = accumulated_gradient(trainer, [batch])
    accumulated = accumulated_gradient(trainer, split(batch, [1, 3]))
    ratio = (accumulated.norm() / big.norm()).item()
    off = ((accumulated - big).norm() / big.norm()).item()
    print(f"{label:<16} ×{ratio:.3f}, {off:.1%}")
    return ratio, off


print("Trainer:",
      ga_verdict(*compare_with_one_big_batch(Trainer, "Trainer")))

# %% tags=["train", "uses-exercise"]
print("MyTrainer:",
      ga_verdict(*compare_with_one_big_batch(MyTrainer, "MyTrainer")))

# %% [markdown]
# If your loss is the mean that `F.cross_entropy` returns, the line above
# says the gradient is about **twice** too large, and points elsewhere
# (if you already divided a sum by `num_items_in_batch`, it says exact:
# you are a step ahead — read on to see why it matters). Two bugs stack up
# in a mean loss:
#
# 1. **Nobody divided by 2.** `training_step` divides the loss by the number
#    of accumulation steps *unless it thinks the loss is already scaled* —
#    and it thinks so whenever the model accepts `num_items_in_batch`, as
#    every transformers causal LM does. A mean ignores that argument.
#    The attribute `loss_is_scaled_for_ga` tells the Trainer the truth.
# 2. **A mean of means is not the mean.** The micro-batch with 1 row gets
#    the same weight as the one with 3. Only dividing the *sum* over tokens
#    by the token count of the whole accumulated batch — that is
#    `num_items_in_batch` — gives the big batch's loss.
#
# Telling the Trainer to divide by the accumulation steps fixes only the
# first bug of a mean loss:

# %% tags=["train", "uses-exercise"]
class HalfFixed(MyTrainer):
    loss_is_scaled_for_ga = False  # "divide my loss by the GA steps, please"


print("HalfFixed:",
      ga_verdict(*compare_with_one_big_batch(HalfFixed, "HalfFixed")))

# %% [markdown]
# The kit's `CausalLMTrainer` fixes both: its loss is the sum divided by
# `num_items_in_batch`, and it says the loss is scaled.

# %% tags=["train"]
from kit.trainers import CausalLMTrainer

show(CausalLMTrainer)
show(losses.causal_lm_loss)
print("CausalLMTrainer:",
      ga_verdict(*compare_with_one_big_batch(CausalLMTrainer,
                                          "CausalLMTrainer")))

# %% [markdown]
# ## Explore: split the batch yourself
#
# Four rows with 3, 4, 2 and 3 labelled tokens, cut into micro-batches.
# Each bar is one token's share of the accumulated gradient (colour: its
# micro-batch). Light bars: a mean loss per micro-batch, divided by the
# number of micro-batches; dark bars: the sum divided by
# `num_items_in_batch`; dashed: one big batch, 1/N for every token. Move
# the slider: only the dark bars stay on the line for every split. The
# legend's "off" is the measure printed above, |g − g_big| / |g_big|; its
# numbers differ from the cells' for the same 1 + 3 split because these
# rows and their uniform logits are not the batch and model above.

# %% tags=["plot"]
from kit.explore import explore_ga_split

explore_ga_split()

# %% [markdown]
# ## What you learned
#
# - `compute_loss` is where the loss is made; `model(**inputs)` computes one
#   only if you leave `labels` in `inputs`.
# - The causal-LM loss is a shifted cross-entropy that ignores `-100`.
# - Under gradient accumulation, a mean loss is wrong twice over. Divide the
#   summed loss by `num_items_in_batch` and set `loss_is_scaled_for_ga`.
#   Every trainer in this course is tested to give the same gradient with
#   accumulation as with one big batch.

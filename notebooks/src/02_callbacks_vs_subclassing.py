# %% [markdown]
# # 02 · Callbacks or subclassing: *when* against *what*
#
# **You will:** learn the one question that decides how to change a
# `Trainer`; write a callback that stops training at a target loss (★);
# sort eight realistic requests into "callback" or "subclass" (★★); and read
# the live plot you have been watching, the course's own callback.
#
# **Time:** 15–20 minutes; the cells run in about 10 seconds on two CPU
# cores.

# %%
from transformers import TrainerCallback

from kit import recipes
from kit.checks import check, hint, solution
from kit.course import setup_notebook, show
from kit.live import LivePlotCallback

setup_notebook()

# %% [markdown]
# ## The question
#
# A **callback** is told *when* things happen — `on_step_end`, `on_log`,
# `on_evaluate` … (notebook 00 traced them all). It receives the arguments,
# the `TrainerState` (step, log history) and a `TrainerControl` whose flags
# it may set: stop training, save, evaluate, log. It never sees a batch or a
# loss tensor before they are used, so it cannot change *what* is computed.
#
# A **subclass** overrides a `Trainer` method — `compute_loss`,
# `get_train_dataloader`, `training_step` … — and so changes *what* is
# computed.
#
# Here are the events a callback can hook, straight from transformers:

# %%
print([name for name in dir(TrainerCallback) if name.startswith("on_")])

# %% [markdown]
# ## ★ Exercise 1: stop at a target loss
#
# Write `StopAtLoss(target)`: in `on_log`, once the training loss (the
# `"loss"` key of `logs`) is below `target`, set
# `control.should_training_stop = True`. Careful: evaluation logs and the
# final summary have no `"loss"` key. Stuck? `hint("stop_callback", 1)`:
# right after a failed `check` it starts from what went wrong (levels 1 to
# 3); `solution("stop_callback")` prints an answer.

# %%
class StopAtLoss(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        ### BEGIN SOLUTION
        loss = (logs or {}).get("loss")
        if loss is not None and loss < self.target:
            control.should_training_stop = True
        return control
        ### END SOLUTION


check("stop_callback", StopAtLoss)

# %% [markdown]
# The checker ran it inside a real `Trainer`. Watch it stop a run here, from
# a fresh model, when the loss crosses 1.5 — long before `max_steps`:

# %% tags=["train", "uses-exercise"]
trainer = recipes.sft_trainer(
    "cpu", output_dir="runs/02_stop", max_steps=1000, logging_steps=10,
    callbacks=[StopAtLoss(target=1.5),
               LivePlotCallback(title="StopAtLoss(target=1.5)")])
recipes.quiet(trainer)
result = trainer.train()
print(f"global_step: {result.global_step} (max_steps: 1000)")

# %% [markdown]
# ## ★★ Exercise 2: callback or subclass?
#
# For each request, answer `"callback"` or `"subclass"`. Ask: does it only
# need to *see* the loop and perhaps stop it, or must it change *what* is
# computed?

# %%
### BEGIN SOLUTION
answers = {
    "Print the learning rate every 50 steps": "callback",
    "Stop when the eval loss has not improved for 3 evaluations": "callback",
    "Save a few generated samples at every evaluation": "callback",
    "Draw a live plot of the loss": "callback",
    "Weigh each token's loss by how rare the token is": "subclass",
    "Serve each prompt G times in a row to the model": "subclass",
    "Compute DPO's loss from chosen and rejected log-probs": "subclass",
    "Skip the optimizer step when the gradients hold a NaN": "subclass",
}
### END SOLUTION
### BEGIN STUB
answers = {
    "Print the learning rate every 50 steps": "?",
    "Stop when the eval loss has not improved for 3 evaluations": "?",
    "Save a few generated samples at every evaluation": "?",
    "Draw a live plot of the loss": "?",
    "Weigh each token's loss by how rare the token is": "?",
    "Serve each prompt G times in a row to the model": "?",
    "Compute DPO's loss from chosen and rejected log-probs": "?",
    "Skip the optimizer step when the gradients hold a NaN": "?",
}
### END STUB
check("callback_or_subclass", answers)

# %% [markdown]
# Two are worth a second look. *Early stopping* is a callback in
# transformers itself (`EarlyStoppingCallback`): it reads the eval metric
# from the state and sets a flag. *Skipping a step on NaN* sounds like
# "when", but a callback's `on_pre_optimizer_step` cannot cancel the step —
# only an overridden `training_step` (or optimizer) can.
#
# ## The live plot is a callback
#
# `LivePlotCallback` only watches: at `on_train_begin` it shows a figure, at
# each `on_log` it redraws it from `state.log_history` (at most twice a
# second), and at `on_train_end` it draws the final version. It never touches
# the model or the loss — a textbook callback.

# %%
show(LivePlotCallback)

# %% [markdown]
# The same drawing code works after the fact, from any finished run's log
# history — the command line uses it to save PNGs:

# %% tags=["plot"]
from kit.live import plot_history

plot_history(trainer.state.log_history, title="plot_history(log_history)")

# %% [markdown]
# ## What you learned
#
# - Callbacks decide *when* (watch, log, stop, save); subclasses decide
#   *what* (loss, batches, steps).
# - A callback talks back only through `TrainerControl` flags.
# - From the next notebook on, everything we change is *what*: DPO's loss,
#   GRPO's dataloader, GRPO's loss.

# %% [markdown]
# # 08 · Overriding a private method: the buffer, saved with each checkpoint
#
# **You will:** read what the Trainer docs say about methods that start
# with `_`; see their signatures in the transformers you have, and how one
# of them changed in the past; then override `_save_checkpoint` and
# `_load_from_checkpoint` so that a GRPO run stopped in the middle of a
# generation buffer resumes bit-exactly (★★★).
#
# **Time:** 25–35 minutes; the cells run in about 15 seconds on two CPU
# cores.

# %%
import inspect
import os

import torch
import transformers
from transformers import Trainer

from kit import private_methods
from kit.checks import check, hint, solution
from kit.course import setup_notebook, show
from kit.trainers import GRPOTrainer, GRPOTrainerWithoutBuffer

setup_notebook()

# %% [markdown]
# ## "They may change without notice"
#
# The Trainer docs list the methods you may override, and end with a
# warning: private methods that start with `_` (like `_save_checkpoint` or
# `_evaluate`) "can be overridden too, but they may change without
# notice". Public methods keep their signatures across releases; private
# ones are the Trainer's own plumbing, and move when it is rebuilt.
#
# Here are the two this notebook overrides, in the transformers you have:

# %%
print("transformers", transformers.__version__)
for name in ("_save_checkpoint", "_load_from_checkpoint"):
    print(f"Trainer.{name}{inspect.signature(getattr(Trainer, name))}")

# %% [markdown]
# ## What changed before
#
# These are facts from the pull requests themselves (the kit keeps them in
# `kit/private_methods.py`):
#
# - transformers PR 31817 removed the `metrics` argument of
#   `Trainer._save_checkpoint`, leaving `(model, trial)`; it shipped in
#   4.47 (TRL PR 2288 lists 4.46 as not affected; ms-swift gated its
#   override on >= 4.47).
# - TRL PR 3998 (September 2025): TRL's PPOTrainer still called
#   `self._save_checkpoint(model, trial=None, metrics=None)`, a
#   `TypeError` at the first save. ms-swift PR 5646, the same week, fixed
#   its own PPO trainer by popping `metrics` from its override's
#   `**kwargs`.
# - Axolotl 0.18.0 writes `_save_checkpoint(self, model, trial,
#   **kwargs)` and passes `**kwargs` on: an argument added later is taken
#   and handed to the Trainer, and the override does not break.
#
# So an override of a private method takes the arguments it uses, then
# `**kwargs`, and passes everything on to `super()`. The kit does
# this for every private method it overrides, and records each with the
# signature it was written against. `python -m kit doctor` prints the
# same check as this cell, so on a newer transformers (on Colab, say) you
# see at once whether the course still fits:

# %%
changed = {f.name: f for f in private_methods.check()}
for name, (recorded, files) in private_methods.RECORD.items():
    state = changed[name].message if name in changed else "as recorded"
    print(f"Trainer.{name}{recorded}: {state}")
print(f"RECORDED_WITH: transformers {private_methods.RECORDED_WITH}")

# %% [markdown]
# Which methods TRL's `DPOTrainer` and `GRPOTrainer`, and Axolotl's
# trainers, override and why — private ones included — is the table at
# the end of [notebook 06](06_scale_up.ipynb#How-the-real-trainers-extend-Trainer).
#
# ## What a checkpoint must carry
#
# Notebook 04's buffer lives in the trainer: `self._buffer` holds the k
# slices of the last `generate()` call and `self._step` counts the slices
# served. The Trainer's checkpoint knows nothing of them. Save at a step
# that is not a multiple of `steps_per_generation` and resume: the resumed
# run finds no buffer, generates anew — other completions — and ends
# somewhere else.
#
# `GRPOTrainerWithoutBuffer` is the kit's GRPO trainer with exactly that
# gap: its checkpoints hold the Trainer's files and nothing of its own.

# %%
show(GRPOTrainerWithoutBuffer)
show(GRPOTrainer._prepare_inputs)

# %% [markdown]
# ## ★★★ Exercise: `buffer_checkpoint`
#
# Subclass `GRPOTrainerWithoutBuffer` and override two private methods:
#
# - `_save_checkpoint`: let the Trainer save first (`super()` makes the
#   `checkpoint-N` folder, in `self._get_output_dir(trial)`, N being
#   `self.state.global_step`), then `torch.save` a dict with
#   `self._step`, `self._buffer` and `self._generation` (the cost
#   counters) into that folder. Each process holds its own slices, so
#   each writes its own file, named for `self.accelerator.process_index`.
# - `_load_from_checkpoint`: read your file first
#   (`torch.load(..., weights_only=True)`) and check it: raise a
#   `ValueError` naming it when it is missing, or when its buffer has not
#   `self.args.steps_per_generation` slices (a run of another k saved it).
#   Only then let the Trainer load the weights, and set all three: a bad
#   checkpoint is refused before any weights load, not halfway.
#
# Give both the signatures printed above, plus `**kwargs` passed on to
# `super()`. The check stops a short run (k = 2) after a save at step 1,
# in the middle of a buffer; resumes it; and compares its losses and
# weights with a run that was never stopped. It calls your methods as a
# newer Trainer would, with one keyword more, and saves once as process 1
# of 2, then resumes a checkpoint without your file and one cut for
# another k. Stuck? `hint("buffer_checkpoint", 1)` (levels 1 to 3), and
# `solution("buffer_checkpoint")` prints an answer.

# %%
class MyCheckpointedTrainer(GRPOTrainerWithoutBuffer):
    ### BEGIN SOLUTION
    def _save_checkpoint(self, model, trial, **kwargs):
        super()._save_checkpoint(model, trial, **kwargs)  # makes the folder
        folder = os.path.join(self._get_output_dir(trial),
                              f"checkpoint-{self.state.global_step}")
        torch.save({"step": self._step, "buffer": self._buffer,
                    "generation": self._generation},
                   os.path.join(folder, self.buffer_file()))

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        # your file first: a checkpoint without it, or with a buffer cut
        # for another k, is refused before the Trainer loads any weights
        path = os.path.join(resume_from_checkpoint, self.buffer_file())
        if not os.path.isfile(path):
            raise ValueError(f"cannot resume: {path} is missing")
        state = torch.load(path, map_location=self.args.device,
                           weights_only=True)
        k = self.args.steps_per_generation
        if state["buffer"] is not None and len(state["buffer"]) != k:
            raise ValueError(f"cannot resume: {path} holds "
                             f"{len(state['buffer'])} slices, and this run "
                             f"serves k = {k}")
        super()._load_from_checkpoint(resume_from_checkpoint, model,
                                      **kwargs)
        self._step, self._buffer = state["step"], state["buffer"]
        self._generation = state["generation"]

    def buffer_file(self):
        # one file per process: each process holds its own slices
        return f"buffer_{self.accelerator.process_index}.pt"
    ### END SOLUTION
    ### BEGIN STUB
    # the Trainer's signatures, and **kwargs for what a newer one passes
    def _save_checkpoint(self, model, trial, **kwargs):
        raise NotImplementedError("exercise: write your code here")

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        raise NotImplementedError("exercise: write your code here")
    ### END STUB


check("buffer_checkpoint", MyCheckpointedTrainer)

# %% [markdown]
# The check's run, by hand: stop after the save at step 1, then look into
# the checkpoint. Beside the Trainer's files (weights, optimizer,
# scheduler, RNG state, `trainer_state.json`) and the kit's
# `kit_checkpoint.json` lies your buffer file.

# %% tags=["train", "uses-exercise"]
import tempfile

from kit.checks.nb08_private import StopAfterSave, toy_trainer

folder = tempfile.mkdtemp()
stopped = toy_trainer(MyCheckpointedTrainer, folder)
stopped.add_callback(StopAfterSave())
stopped.train()
print("in checkpoint-1:", sorted(os.listdir(f"{folder}/checkpoint-1")))
print(f"saved mid-buffer: _step {stopped._step}, len(_buffer) "
      f"{len(stopped._buffer)}")

# %% [markdown]
# One thing the kit's own version does that yours need not: it writes its
# state *before* `kit_checkpoint.json`, the file it writes last, so a
# checkpoint cut short while saving is refused by name on resume
# (`kit/trainers/checkpoint.py`). Yours comes after the Trainer's files;
# a save cut short between the two leaves a checkpoint without a buffer.

# %%
show(GRPOTrainer.checkpoint_state)

# %% [markdown]
# ## What you learned
#
# - Private methods are overridable, and the Trainer may change them
#   without notice: `_save_checkpoint` lost `metrics` in 4.47.
# - Take `**kwargs` and pass them on: an override then survives an
#   argument added or dropped.
# - `super()` first when it makes what you use (the folder); your own
#   checks before it when it changes what a refusal should leave alone
#   (the weights); one file per process for per-process state.
# - `python -m kit doctor` tells you when a method the kit overrides moved.

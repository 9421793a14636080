"""The private `Trainer` methods the kit overrides, and whether they moved.

transformers says of methods that start with `_`: they "can be overridden
too, but they may change without notice". They do. Past drift, as far as
we could check it in the pull requests themselves:

- transformers PR 31817 removed `metrics` from `Trainer._save_checkpoint`
  (now `(model, trial)`; the best-model bookkeeping moved to
  `_determine_best_metric`). It shipped in 4.47: TRL PR 2288 (Oct 2024)
  lists 4.46 as not affected and copies `_determine_best_metric` into
  TRL's online trainers; ms-swift gated its override on >= 4.47.
- TRL PR 3998 (Sep 2025): TRL's PPOTrainer still called
  `self._save_checkpoint(model, trial=None, metrics=None)` against the
  new `(model, trial)`, a TypeError at the first save; the fix drops
  `metrics=None`. ms-swift PR 5646 (the same week) fixes its PPO trainer
  by popping `metrics` from the `**kwargs` of its own override.
- Axolotl 0.18.0 (commit 067b021c, pinned to transformers 5.14.1):
  `AxolotlTrainer._save_checkpoint(self, model, trial, **kwargs)`, a
  signature that survives an argument being added or dropped later.

So every override the kit writes is recorded here with the signature of
the Trainer method it was written against (transformers 5.25.0), and
`check()` compares the record with the installed transformers.
`python -m kit doctor` prints the result; tests/test_private_methods.py
fails on a change and on an override nobody recorded.
"""

import inspect
import os
from collections import namedtuple

RECORDED_WITH = "5.25.0"  # the transformers the signatures below come from

# name -> (the Trainer signature, annotations left out; the kit files that
# override it). Annotations are left out because their text changes with
# the Python version and a refactor without breaking any override; names,
# order, kinds and defaults are what an override depends on.
RECORD = {
    "_save_checkpoint": ("(self, model, trial)",
                         ("kit/trainers/checkpoint.py",
                          "kit/checks/nb08_private.py")),
    "_load_from_checkpoint": ("(self, resume_from_checkpoint, model=None)",
                              ("kit/trainers/checkpoint.py",
                               "kit/checks/nb08_private.py")),
    "_prepare_inputs": ("(self, inputs)",
                        ("kit/trainers/grpo.py", "kit/checks/nb04_grpo_buffer.py")),
    "_get_train_sampler": ("(self, train_dataset=None)",
                           ("kit/trainers/grpo.py",)),
    "_set_signature_columns_if_needed": ("(self)",
                                         ("kit/trainers/dpo.py",
                                          "kit/trainers/grpo_state.py")),
    "_get_grad_norm": ("(self, model, grad_norm=None)",
                       ("kit/trainers/nonfinite.py",)),
}

# Trainer methods the kit calls, or counts on Trainer calling, without
# overriding them: a change there breaks the kit as surely (a keyword-only
# `_get_output_dir` fails the first save with a TypeError).
# get_resumed_dataloader is public since transformers 5.25.0: a resume in
# the middle of an epoch skips the batches already served through it, which
# GRPO's saved buffer counts on.
CALLED = {
    "_get_output_dir": ("(self, trial)", ("kit/trainers/checkpoint.py",
                                          "kit/checks/nb08_private.py")),
    "_get_dataloader": ("(self, dataset, description, batch_size, "
                        "sampler_fn=None, is_training=False, "
                        "dataloader_key=None)",
                        ("kit/trainers/grpo.py",
                         "kit/checks/nb04_grpo_dataloader.py")),
    "get_resumed_dataloader": ("(self, dataloader, num_batches)",
                               ("kit/trainers/grpo_state.py",)),
}


class Finding(namedtuple("Finding", "name recorded installed files")):
    """One private method that moved; `installed` is None when it is gone."""

    @property
    def message(self):
        files = ", ".join(self.files)
        if self.installed is None:
            return (f"Trainer.{self.name} is gone from the installed "
                    f"transformers (recorded {self.name}{self.recorded} "
                    f"from {RECORDED_WITH}): the kit's override is never "
                    f"called. Fix {files}.")
        return (f"Trainer.{self.name} changed: recorded {self.recorded} "
                f"(transformers {RECORDED_WITH}), installed "
                f"{self.installed}. Fix what uses it in {files}, then its "
                f"record in kit/private_methods.py.")


def plain_signature(function):
    """`function`'s signature as text, without annotations."""
    signature = inspect.signature(function)
    parameters = [p.replace(annotation=inspect.Parameter.empty)
                  for p in signature.parameters.values()]
    return str(signature.replace(
        parameters=parameters,
        return_annotation=inspect.Signature.empty))


def installed_signature(name):
    """The installed Trainer's signature of `name`, or None if it is gone."""
    from transformers import Trainer
    method = getattr(Trainer, name, None)
    return None if method is None else plain_signature(method)


def check(record=None):
    """One Finding per recorded method that changed or disappeared."""
    findings = []
    for name, (recorded, files) in (record or {**RECORD, **CALLED}).items():
        installed = installed_signature(name)
        if installed != recorded:
            findings.append(Finding(name, recorded, installed, files))
    return findings


def overrides(classes):
    """{private Trainer method: the kit files overriding it} over the MROs
    of `classes`: what RECORD must list."""
    from transformers import Trainer
    from kit.runtime import ROOT
    found = {}
    for cls in classes:
        for owner in cls.__mro__:
            if not owner.__module__.startswith("kit."):
                continue  # Trainer's own, TRL's, torch's
            for name in vars(owner):
                if (name.startswith("_") and not name.startswith("__")
                        and hasattr(Trainer, name)):
                    path = inspect.getsourcefile(owner)
                    found.setdefault(name, set()).add(
                        os.path.relpath(path, ROOT))
    return found


def probe():
    """What a signature cannot show: whether the installed Trainer still
    calls each override through `self` (a loop that calls
    `Trainer._get_grad_norm(self, ...)` skips the kit's), and whether the
    kit's own calls still work. One tiny GRPO run, saved at step 1 and
    resumed to step 2, through a trainer that counts the calls: one line
    per problem, none when all is well. About 5 s on a CPU."""
    import tempfile
    from kit import recipes
    from kit.trainers import GRPOTrainer
    counted = {**RECORD, "get_resumed_dataloader": CALLED[
        "get_resumed_dataloader"]}
    calls = dict.fromkeys(counted, 0)

    def counting(name):
        def method(self, *args, **kwargs):
            calls[name] += 1
            return getattr(super(Counting, self), name)(*args, **kwargs)
        return method
    Counting = type("Counting", (GRPOTrainer,),
                    {name: counting(name) for name in counted})
    settings = dict(trainer_class=Counting, steps_per_generation=2,
                    per_device_train_batch_size=8, num_generations=4,
                    save_strategy="steps", save_steps=1,
                    # the case _set_signature_columns_if_needed is for
                    remove_unused_columns=True,
                    eval_strategy="no", eval_on_start=False,
                    disable_tqdm=True, report_to="none")
    from transformers.utils import logging
    bars = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # "Loading weights": not the report's
    with tempfile.TemporaryDirectory() as folder:
        try:
            recipes.quiet(recipes.grpo_trainer(
                "cpu", output_dir=folder, max_steps=1, **settings)).train()
            recipes.quiet(recipes.grpo_trainer(
                "cpu", output_dir=folder, max_steps=2, **settings)).train(
                resume_from_checkpoint=os.path.join(folder, "checkpoint-1"))
        except Exception as error:  # what a changed method breaks
            first = (str(error).strip().splitlines() or [""])[0][:200]
            return [f"a two-step GRPO run through the kit's trainers failed "
                    f"({type(error).__name__}: {first}): a Trainer method "
                    "it overrides or calls changed; see the lines above"]
        finally:
            if bars:
                logging.enable_progress_bar()
    return [f"the installed Trainer never calls self.{name}: the kit's "
            f"override in {', '.join(counted[name][1])} is skipped"
            for name, count in calls.items() if count == 0]

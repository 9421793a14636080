"""Running the course's recipes: train, save, plot, ship a starting policy.

`kit.recipes` builds the trainers; this module runs one to the end, as
`python -m kit train` does, and writes what a run leaves behind: the model,
`log_history.json` and `plot.png` (or, for the course's own SFT run, a
starting policy checked against BAND).
"""

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
from safetensors import SafetensorError
from transformers.trainer_utils import get_last_checkpoint

from kit import outputs, recipes, tasks
from kit.live import plot_history
from kit.models import SAVING, check_preset, greedy_accuracy, policy_path
from kit.recipes import BAND
from kit.runtime import run_path

# the final files are written here, then moved in (kit.models.SAVING: a
# folder that still holds it was cut short while they moved)
# float16 halves the "gpu" policy to 8 MB, small enough to ship with the kit
SHIP_DTYPE = {"gpu": torch.float16}


@dataclass(frozen=True)
class Recipe:
    """What `run` needs to know of a recipe, besides its builder."""
    build: Callable  # -> a ready Trainer
    metrics: tuple = ()  # plotted beside the loss
    evaluates_on_start: bool = False  # a resume skips step 0's evaluation
    ships: bool = False  # its full run (no max_steps) is a starting policy


RECIPES = {
    "sft": Recipe(recipes.sft_trainer, ships=True),
    "dpo": Recipe(recipes.dpo_trainer, evaluates_on_start=True,
                  metrics=("rewards/margins", "rewards/accuracies")),
    "grpo": Recipe(recipes.grpo_trainer, evaluates_on_start=True,
                   metrics=("reward",)),
}


def run(name, output_dir=None, save_steps=None, resume_from_checkpoint=None,
        **kwargs):
    """Train recipe `name` ("sft", "dpo", "grpo"); save all to output_dir.

    save_steps writes a checkpoint every that many steps; a run resumed from
    one reaches the same weights and log history as one never interrupted.
    """
    recipe = RECIPES[name]
    # `~/run` is the home folder's run (Trainer expands it too: say the same)
    output_dir = run_path(Path(output_dir or f"runs/{name}").expanduser())
    # a notebook too: only the course's rebuild may write into kit/policies
    outputs.check_run_dir(output_dir, rebuilds=outputs.rebuilds(
        name, save_steps=save_steps,
        resume_from_checkpoint=resume_from_checkpoint, **kwargs))
    if save_steps:
        kwargs.update(save_strategy="steps", save_steps=save_steps)
    if resume_from_checkpoint and recipe.evaluates_on_start:
        kwargs["eval_on_start"] = False  # step 0 was evaluated the first time
    trainer = recipe.build(output_dir=output_dir, **kwargs)
    trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    if recipe.ships and kwargs.get("max_steps") is None:
        # the course's own recipe: a starting policy, checked and shipped
        save_starting_policy(trainer, check_preset(kwargs.get("preset")),
                             output_dir)
    else:
        save(trainer, output_dir, recipe.metrics)
    return trainer


def save(trainer, output_dir, metrics=()):
    """The final model, its tokenizer, the log history and its plot.

    Written into a folder beside the run's files, then moved over them: a
    save cut short (a full disk) leaves the folder as it was, says so in
    one line, and a rerun into it is welcome.
    """
    output_dir = Path(output_dir)
    staging = output_dir / SAVING
    history = trainer.state.log_history
    first = trainer.is_world_process_zero()
    try:
        trainer.save_model(str(staging))
        if first:
            (staging / "log_history.json").write_text(
                json.dumps(history, indent=1))
    except (OSError, SafetensorError) as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise OSError(_not_saved(output_dir, error)) from None
    if first:
        for item in staging.iterdir():
            os.replace(item, output_dir / item.name)
        staging.rmdir()
    save_plot(history, metrics, output_dir)


def _not_saved(output_dir, error):
    reason = (str(error).strip().splitlines() or [type(error).__name__])[-1]
    latest = get_last_checkpoint(str(output_dir))
    again = (f"resume from its latest checkpoint, --resume-from-checkpoint "
             f"{latest}" if latest else "run again")
    return (f"could not save the model to {output_dir} ({reason[:120]}): "
            "the files already there are as they were: free some space, "
            f"then {again}")


def save_plot(history, metrics, output_dir):
    """plot.png of the run, titled by its folder; never fails the run.

    The model and log are saved first: a plot that cannot be drawn costs a
    line on stderr, not the training. A folder name is not mathtext: `$` in
    `cost_$5` would start a formula, so it is escaped when it trips.
    """
    path = Path(output_dir) / "plot.png"
    title = Path(output_dir).name
    for attempt in (title, title.replace("$", r"\$")):
        try:
            plot_history(history, metrics, title=attempt).savefig(path,
                                                                 dpi=100)
            return path
        except (ValueError, OSError) as error:
            failure = error
    first = (str(failure).strip().splitlines() or [""])[-1][:100]
    print(f"could not draw {path} ({type(failure).__name__}: {first}); "
          f"the model and log_history.json are saved", file=sys.stderr)
    return None


# ------------------------------------------------- the shipped starting policy

def build_starting_policy(preset=None, path=None, seed=0):
    """Re-create the course's starting policy (what `train sft` saves).

    Training happens here, never in `load_policy`: `python -m kit train sft
    --preset gpu --output-dir kit/policies/gpu` comes here too.
    """
    preset = check_preset(preset)
    path = Path(path or policy_path(preset))
    trainer = recipes.sft_trainer(preset, output_dir=path, seed=seed,
                                  disable_tqdm=True)
    trainer.train()
    save_starting_policy(trainer, preset, path)
    return path


def save_starting_policy(trainer, preset, path):
    """Check the trained policy sits in BAND, then save it as it ships."""
    model, dtype = trainer.model, SHIP_DTYPE.get(preset, torch.float32)
    model.to(dtype).float()  # round now, so that we check what ships
    accuracy = greedy_accuracy(model, trainer.processing_class,
                               tasks.prompt_dataset("test"))
    if not BAND[0] <= accuracy <= BAND[1]:
        raise RuntimeError(
            f"the {preset} starting policy answers {accuracy:.3f} of the "
            f"held-out sums after {trainer.state.global_step} steps, outside "
            f"the band {BAND}: change SFT[{preset!r}] or STOP_IN_BAND")
    model.to(dtype)
    save(trainer, path)
    outputs.record_policy(path, preset, accuracy)  # what doctor checks

"""Nothing is lost: resumed runs and re-seeded runs repeat themselves exactly."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from kit import recipes, tasks

TIMING = ("runtime", "per_second", "generation/seconds")


def history(folder, drop=()):
    """The log history without wall-clock timings (and any `drop` keys)."""
    rows = json.loads((folder / "log_history.json").read_text())
    return [{k: v for k, v in row.items()
             if not any(t in k for t in TIMING) and k not in drop}
            for row in rows]


def same_weights(a, b):
    first = load_file(a / "model.safetensors")
    second = load_file(b / "model.safetensors")
    return first.keys() == second.keys() and all(
        torch.equal(first[k], second[k]) for k in first)


def kit_train(*args):
    result = subprocess.run([sys.executable, "-m", "kit", "train", *args],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.parametrize("recipe", ["dpo", "grpo"])
def test_a_resumed_run_ends_where_an_uninterrupted_one_does(recipe, tmp_path):
    # GRPO generates every 4 steps: the checkpoint at step 10 falls in the
    # middle of a generation, so its buffer must be saved and restored too.
    full, saved, resumed = (tmp_path / n for n in ("full", "saved", "resumed"))
    recipes.run(recipe, full, max_steps=20, disable_tqdm=True)
    recipes.run(recipe, saved, max_steps=20, save_steps=10, disable_tqdm=True)
    # the command line, as a learner would resume
    kit_train(recipe, "--max-steps", "20", "--output-dir", str(resumed),
              "--resume-from-checkpoint", str(saved / "checkpoint-10"))
    assert same_weights(full, resumed)
    # train_loss, in the final summary, averages only this call's steps
    assert history(full, drop=("train_loss",)) == history(
        resumed, drop=("train_loss",))


@pytest.mark.parametrize("recipe", ["sft", "dpo", "grpo"])
def test_the_same_seed_gives_the_same_curve(recipe, tmp_path):
    for name in ("first", "second"):
        recipes.run(recipe, tmp_path / name, max_steps=12, logging_steps=2,
                    seed=3, disable_tqdm=True)
    assert history(tmp_path / "first") == history(tmp_path / "second")
    assert same_weights(tmp_path / "first", tmp_path / "second")
    recipes.run(recipe, tmp_path / "other", max_steps=12, logging_steps=2,
                seed=4, disable_tqdm=True)
    assert history(tmp_path / "other") != history(tmp_path / "first")


# ------------------------------------------------- checkpoints we refuse

def grpo(output_dir, **overrides):
    settings = dict(max_steps=2, save_strategy="steps", save_steps=1,
                    per_device_train_batch_size=8, num_generations=4,
                    steps_per_generation=2, eval_strategy="no",
                    eval_on_start=False, disable_tqdm=True)
    return recipes.grpo_trainer("cpu", output_dir=output_dir,
                                train_dataset=tasks.prompt_dataset("train",
                                                                   n=64),
                                **{**settings, **overrides})


@pytest.fixture(scope="module")
def grpo_checkpoint(tmp_path_factory):
    """A GRPO checkpoint in the middle of a generation (k = 2, step 1)."""
    folder = tmp_path_factory.mktemp("grpo")
    grpo(folder).train()
    return folder / "checkpoint-1"


def resume(trainer, checkpoint):
    trainer.train(resume_from_checkpoint=str(checkpoint))


def broken_copy(checkpoint, tmp_path, missing=None):
    copy = tmp_path / "checkpoint-1"
    shutil.copytree(checkpoint, copy)
    if missing:
        (copy / missing).unlink()
    return copy


def test_a_checkpoint_resumes_into_the_same_trainer(grpo_checkpoint,
                                                    tmp_path):
    trainer = grpo(tmp_path)
    resume(trainer, grpo_checkpoint)
    assert trainer.state.global_step == 2


@pytest.mark.parametrize("missing", ["grpo_state_0.pt", "optimizer.pt",
                                     "scheduler.pt", "rng_state.pth",
                                     "kit_checkpoint.json"])
def test_a_checkpoint_with_a_file_missing_is_refused(missing, grpo_checkpoint,
                                                     tmp_path):
    checkpoint = broken_copy(grpo_checkpoint, tmp_path, missing)
    with pytest.raises(ValueError, match=f"cannot resume from .*{missing}"):
        resume(grpo(tmp_path / "run"), checkpoint)


def test_a_changed_steps_per_generation_is_refused(grpo_checkpoint, tmp_path):
    with pytest.raises(ValueError, match="saved with steps_per_generation="
                                         "2, this run has steps_per_"
                                         "generation=1"):
        resume(grpo(tmp_path, steps_per_generation=1), grpo_checkpoint)


def test_another_trainers_checkpoint_is_refused(tmp_path):
    recipes.dpo_trainer("cpu", output_dir=tmp_path / "dpo", max_steps=1,
                        save_strategy="steps", save_steps=1,
                        eval_strategy="no", eval_on_start=False,
                        disable_tqdm=True).train()
    with pytest.raises(ValueError, match="saved by DPOTrainer, and this is "
                                         "GRPOTrainer"):
        resume(grpo(tmp_path / "grpo"), tmp_path / "dpo" / "checkpoint-1")


class Payload:
    """Pickles into a call of Path.touch: loading it would run code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return Path.touch, (self.path,)


def test_a_pickled_payload_in_the_buffer_is_refused_unrun(grpo_checkpoint,
                                                          tmp_path):
    checkpoint = broken_copy(grpo_checkpoint, tmp_path)
    ran = tmp_path / "the payload ran"
    torch.save({"step": Payload(ran)}, checkpoint / "grpo_state_0.pt")
    with pytest.raises(ValueError, match="loading it could run code"):
        resume(grpo(tmp_path / "run"), checkpoint)
    assert not ran.exists()

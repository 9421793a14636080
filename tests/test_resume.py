"""Nothing is lost: resumed runs and re-seeded runs repeat themselves exactly."""

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from kit import recipes

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

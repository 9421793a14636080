"""Nothing is lost: resumed runs and re-seeded runs repeat themselves exactly."""

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from kit import cli, recipes, runs, tasks
from kit.trainers import GRPOTrainer

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


def kit_train(capsys, *args):
    """`python -m kit train ARGS`, in this process (a new one spends ~7 s
    importing torch; tests/test_cli.py runs the entry point itself)."""
    code = cli.main(["train", *args])
    assert code == 0, capsys.readouterr().err[-3000:]


def shrink(patch):
    """The course recipes, smaller: an exact resume and a repeated curve
    need the recipe's steps, schedule and generations, not its batch size
    nor DPO's 72k training pairs (tokenised anew by each trainer). GRPO
    keeps k = 4, so step 10 still falls in the middle of a generation."""
    for table, batch in ((recipes.SFT, dict(per_device_train_batch_size=16)),
                         (recipes.DPO, dict(per_device_train_batch_size=16)),
                         (recipes.GRPO, dict(per_device_train_batch_size=8,
                                             num_generations=4))):
        patch.setitem(table, "cpu", {**table["cpu"], **batch})
    assert recipes.GRPO["cpu"]["steps_per_generation"] == 4
    every_pair = tasks.preference_dataset

    def fewer_pairs(split="train", n=None, **options):
        if split == "train" and n is None:
            n = 256  # sums, each with all its near misses: ~2k pairs
        return every_pair(split, n=n, **options)
    patch.setattr(tasks, "preference_dataset", fewer_pairs)


@pytest.fixture
def small_runs(monkeypatch):
    shrink(monkeypatch)


@pytest.mark.parametrize("recipe", ["sft", "dpo", "grpo"])
def test_a_resumed_run_ends_where_an_uninterrupted_one_does(recipe, tmp_path,
                                                            capsys,
                                                            small_runs):
    # GRPO generates every 4 steps: the checkpoint at step 10 falls in the
    # middle of a generation, so its buffer must be saved and restored too.
    # (It is also where DPO and GRPO log: a logged loss averages the steps
    # since the last log, and a resumed run has only its own.)
    full, saved, resumed = (tmp_path / n for n in ("full", "saved", "resumed"))
    runs.run(recipe, full, max_steps=20, disable_tqdm=True)
    runs.run(recipe, saved, max_steps=20, save_steps=10, disable_tqdm=True)
    # the command line, as a learner would resume
    kit_train(capsys, recipe, "--max-steps", "20", "--output-dir",
              str(resumed), "--resume-from-checkpoint",
              str(saved / "checkpoint-10"))
    assert same_weights(full, resumed)
    # train_loss, in the final summary, averages only this call's steps
    assert history(full, drop=("train_loss",)) == history(
        resumed, drop=("train_loss",))
    # and the same seed gives the same curve: saving changes nothing
    assert history(full) == history(saved) and same_weights(full, saved)


@pytest.mark.parametrize("recipe", ["sft", "dpo", "grpo"])
def test_another_seed_gives_another_curve(recipe, tmp_path, small_runs):
    for seed in (3, 4):
        runs.run(recipe, tmp_path / str(seed), max_steps=2,
                    logging_steps=1, seed=seed, disable_tqdm=True)
    assert history(tmp_path / "3") != history(tmp_path / "4")


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


@pytest.fixture(scope="module")
def dpo_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dpo")
    with pytest.MonkeyPatch.context() as patch:
        shrink(patch)
        recipes.dpo_trainer("cpu", output_dir=folder, max_steps=1,
                            save_strategy="steps", save_steps=1,
                            eval_strategy="no", eval_on_start=False,
                            disable_tqdm=True).train()
    return folder / "checkpoint-1"


def test_another_trainers_checkpoint_is_refused(dpo_checkpoint, tmp_path):
    with pytest.raises(ValueError, match="saved by DPOTrainer, and this is "
                                         "GRPOTrainer"):
        resume(grpo(tmp_path / "grpo"), dpo_checkpoint)


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


# ---------------------------------------------------- SFT, under the same

def sft(output_dir, preset="cpu", **overrides):
    return recipes.sft_trainer(preset, output_dir=output_dir,
                               **{**dict(max_steps=2, save_strategy="steps",
                                         save_steps=1, disable_tqdm=True),
                                  **overrides})


@pytest.fixture(scope="module")
def sft_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sft")
    sft(folder).train()
    return folder / "checkpoint-1"


def refused_before_loading(trainer, checkpoint, match):
    """The refusal comes before any weights of the checkpoint are loaded."""
    before = [p.detach().clone() for p in trainer.model.parameters()]
    with pytest.raises(ValueError, match=match):
        resume(trainer, checkpoint)
    assert all(torch.equal(b, p) for b, p in
               zip(before, trainer.model.parameters()))


def test_sft_refuses_a_dpo_checkpoint(dpo_checkpoint, tmp_path, capsys):
    refused_before_loading(sft(tmp_path), dpo_checkpoint,
                           "saved by DPOTrainer, and this is CausalLMTrainer")
    # the command line went on with DPO's rows in its log, and exited 0
    assert cli.main(["train", "sft", "--max-steps", "2", "--output-dir",
                     str(tmp_path / "cli"), "--resume-from-checkpoint",
                     str(dpo_checkpoint)]) == 2
    assert ("saved by DPOTrainer, and this is CausalLMTrainer"
            in capsys.readouterr().err)


@pytest.mark.parametrize("missing", ["optimizer.pt", "scheduler.pt",
                                     "rng_state.pth", "trainer_state.json",
                                     "model.safetensors"])
def test_sft_refuses_a_checkpoint_with_a_file_missing(missing, sft_checkpoint,
                                                      tmp_path):
    checkpoint = broken_copy(sft_checkpoint, tmp_path, missing)
    refused_before_loading(sft(tmp_path / "run"), checkpoint,
                           f"{missing} is missing")


def test_sft_resumes_its_own_checkpoint(sft_checkpoint, tmp_path):
    trainer = sft(tmp_path)
    resume(trainer, sft_checkpoint)
    assert trainer.state.global_step == 2


# ---------------------------------------- settings and models that changed

@pytest.mark.parametrize("setting, value", [("temperature", 0.7),
                                            ("beta", 0.1)])
def test_grpo_refuses_a_changed_temperature_or_beta(setting, value,
                                                    grpo_checkpoint,
                                                    tmp_path):
    # the buffer's log-probs were taken at temperature 1, without reference
    saved = 1.0 if setting == "temperature" else 0.0
    refused_before_loading(grpo(tmp_path, **{setting: value}),
                           grpo_checkpoint,
                           f"saved with {setting}={saved}, this run has "
                           f"{setting}={value}: resume with the same "
                           f"{setting}")


# What each setting of the resume table is changed to: a value a user
# would pass (numbers otherwise double, plus one)
CHANGED_TO = {"loss_type": {"GRPOTrainer": "dapo", "DPOTrainer": "ipo"},
              "scale_rewards": {"GRPOTrainer": "none"},
              "importance_sampling_level": {"GRPOTrainer": "sequence"},
              "epsilon_high": {"GRPOTrainer": 5.0},
              "reward_weights": {"GRPOTrainer": [2.0]},
              "multi_objective_aggregation": {
                  "GRPOTrainer": "normalize_then_sum"},
              "min_p": {"GRPOTrainer": 0.05}}


def changed(trainer_name, name, value):
    if name in CHANGED_TO:
        return CHANGED_TO[name][trainer_name]
    return type(value)(value * 2 + 1)


def resume_table_rows():
    from kit.trainers.checkpoint import KEPT_ON_RESUME
    return [(trainer, name) for trainer, kept in KEPT_ON_RESUME.items()
            for name in kept]


@pytest.fixture(scope="module")
def trainers_and_checkpoints(grpo_checkpoint, dpo_checkpoint, sft_checkpoint,
                             tmp_path_factory):
    folder = tmp_path_factory.mktemp("resumers")
    with pytest.MonkeyPatch.context() as patch:
        shrink(patch)
        dpo = recipes.dpo_trainer("cpu", output_dir=folder / "dpo",
                                  max_steps=1, disable_tqdm=True)
    return {"GRPOTrainer": (grpo(folder / "grpo"), grpo_checkpoint),
            "DPOTrainer": (dpo, dpo_checkpoint),
            "CausalLMTrainer": (sft(folder / "sft"), sft_checkpoint)}


@pytest.mark.parametrize("trainer_name, name", resume_table_rows())
def test_each_setting_of_the_resume_table_is_refused_changed(
        trainer_name, name, trainers_and_checkpoints, monkeypatch):
    trainer, checkpoint = trainers_and_checkpoints[trainer_name]
    saved = getattr(trainer.args, name)
    new = changed(trainer_name, name, saved)
    monkeypatch.setattr(trainer.args, name, new)
    with pytest.raises(ValueError) as refused:
        trainer.check_checkpoint(checkpoint)
    assert str(refused.value) == (
        f"cannot resume from {checkpoint}: it was saved with {name}={saved}, "
        f"this run has {name}={new}: resume with the same {name} or start a "
        "new run")


def test_what_the_resume_table_leaves_out_may_change(
        trainers_and_checkpoints, monkeypatch):
    for trainer, checkpoint in trainers_and_checkpoints.values():
        for name, value in (("learning_rate", 0.5), ("logging_steps", 3),
                            ("max_steps", 50), ("save_steps", 7)):
            monkeypatch.setattr(trainer.args, name, value)
        trainer.check_checkpoint(checkpoint)  # no refusal


def test_the_readme_resume_table_is_the_kits():
    from kit.trainers.checkpoint import KEPT_ON_RESUME
    readme = (Path(__file__).parent.parent / "docs" / "kit.md").read_text()
    section = readme.split("## What a resume may change")[1]
    table = next(part for part in section.split("\n\n")
                 if part.startswith("| trainer"))
    rows = {line.split("|")[1].strip(" `"): line.split("|")[2]
            for line in table.splitlines()[2:]}
    assert set(rows) == set(KEPT_ON_RESUME)
    for trainer, kept in KEPT_ON_RESUME.items():
        assert sorted(n.strip(" `") for n in rows[trainer].split(",")) == (
            sorted(kept)), trainer


# ------------------------------ what else decides a run: saved and checked

def nudged(model):
    """The same model, its first weight moved: another of the same shape."""
    with torch.no_grad():
        next(model.parameters()).add_(0.01)
    return model


def another_reward(prompts, completions, **kwargs):
    return [0.0 for _ in completions]


def test_another_seed_model_reward_or_optimizer_is_refused_by_name(
        grpo_checkpoint, sft_checkpoint, tmp_path):
    refused_before_loading(grpo(tmp_path / "seed", seed=1), grpo_checkpoint,
                           "saved with seed=0, this run has seed=1: resume "
                           "with the same seed or start a new run")
    other = grpo(tmp_path / "model")
    nudged(other.model)
    refused_before_loading(other, grpo_checkpoint, (
        r"its run started from another model \(weights \w+, this run's "
        r"\w+\), of the same shape: resume with the model the run started "
        "from"))
    refused_before_loading(
        grpo(tmp_path / "reward", reward_funcs=[another_reward]),
        grpo_checkpoint, r"its buffer was scored by the reward functions "
                         r"\['correctness_reward'\], this run has "
                         r"\['another_reward'\]")
    refused_before_loading(sft(tmp_path / "sgd", optim="sgd"), sft_checkpoint,
                           r"saved with optimizer=adamw_torch\w*, this run "
                           "has optimizer=sgd")


def test_another_dpo_reference_is_refused(dpo_checkpoint, tmp_path):
    with pytest.MonkeyPatch.context() as patch:
        shrink(patch)
        dpo = recipes.dpo_trainer("cpu", output_dir=tmp_path, max_steps=2,
                                  disable_tqdm=True)
    nudged(dpo.ref_model)
    refused_before_loading(dpo, dpo_checkpoint, "its run's reference model "
                                                "was another")


def test_an_edited_step_or_a_max_steps_behind_the_checkpoint_is_refused(
        sft_checkpoint, tmp_path):
    checkpoint = broken_copy(sft_checkpoint, tmp_path)
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    state["global_step"] = 999
    (checkpoint / "trainer_state.json").write_text(json.dumps(state))
    refused_before_loading(sft(tmp_path / "run"), checkpoint, (
        "its trainer_state.json says global_step=999, but the checkpoint "
        "was saved at step 1"))
    refused_before_loading(
        sft(tmp_path / "short", max_steps=1),
        sft_checkpoint.parent / "checkpoint-2",
        r"it is at step 2, past this run's max_steps=1 \(the Trainer would "
        r"still take one more step\): give max_steps above 2")


def test_a_grpo_loss_type_or_a_dpo_beta_changed_is_refused_before_loading(
        grpo_checkpoint, dpo_checkpoint, tmp_path):
    refused_before_loading(grpo(tmp_path / "grpo", loss_type="dapo"),
                           grpo_checkpoint, "saved with loss_type=grpo, this "
                                            "run has loss_type=dapo")
    with pytest.MonkeyPatch.context() as patch:
        shrink(patch)
        dpo = recipes.dpo_trainer("cpu", output_dir=tmp_path / "dpo",
                                  max_steps=2, beta=0.01, disable_tqdm=True)
    refused_before_loading(dpo, dpo_checkpoint, "this run has beta=0.01")


def test_a_checkpoint_of_another_model_size_is_refused(sft_checkpoint,
                                                       tmp_path):
    refused_before_loading(sft(tmp_path, preset="gpu"), sft_checkpoint,
                           "its model has hidden_size=.*this run's model "
                           r"has hidden_size=.*\(and --preset\)")


def test_weights_of_another_shape_are_refused_without_a_config(
        sft_checkpoint, tmp_path):
    checkpoint = broken_copy(sft_checkpoint, tmp_path, "config.json")
    refused_before_loading(sft(tmp_path / "run", preset="gpu"), checkpoint,
                           "its model.safetensors holds .* of shape")


# ------------------------------------------------ broken files, by name

def cut_short(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


@pytest.mark.parametrize("name, breakage, match", [
    ("kit_checkpoint.json", "{}", "kit_checkpoint.json is damaged .*lacks"),
    ("kit_checkpoint.json", "cut", "kit_checkpoint.json is damaged .*not "
                                   "JSON"),
    ("trainer_state.json", "cut", "trainer_state.json is damaged"),
    ("optimizer.pt", "cut", "optimizer.pt is damaged"),
    ("scheduler.pt", "cut", "scheduler.pt is damaged"),
    ("rng_state.pth", "cut", "rng_state.pth is damaged"),
    ("model.safetensors", "cut", "model.safetensors is damaged"),
    ("grpo_state_0.pt", "cut", "grpo_state_0.pt is damaged"),
    ("grpo_state_0.pt", "keys", r"grpo_state_0.pt holds \['other'\], not "
                                r"\['buffer', 'generation', 'step'\]"),
])
def test_a_broken_file_is_named_before_any_weights_load(
        name, breakage, match, grpo_checkpoint, tmp_path):
    checkpoint = broken_copy(grpo_checkpoint, tmp_path)
    path = checkpoint / name
    if breakage == "cut":
        cut_short(path)
    elif breakage == "keys":
        torch.save({"other": 1}, path)
    else:
        path.write_text(breakage)
    refused_before_loading(grpo(tmp_path / "run"), checkpoint,
                           f"cannot resume from .*{match}")


def test_weights_or_a_buffer_that_are_not_finite_are_refused_by_name(
        grpo_checkpoint, tmp_path):
    from safetensors.torch import save_file
    checkpoint = broken_copy(grpo_checkpoint, tmp_path)
    weights = load_file(checkpoint / "model.safetensors")
    key = sorted(weights)[0]
    weights[key] = weights[key].clone().fill_(float("nan"))
    save_file(weights, checkpoint / "model.safetensors",
              metadata={"format": "pt"})
    refused_before_loading(grpo(tmp_path / "run"), checkpoint, (
        f"its model.safetensors holds values that are not finite \\(nan or "
        f"inf\\) in {key}: the run had diverged before this save"))
    checkpoint = tmp_path / "nan_buffer" / "checkpoint-1"
    shutil.copytree(grpo_checkpoint, checkpoint)
    state = torch.load(checkpoint / "grpo_state_0.pt", weights_only=True)
    state["buffer"][1]["advantages"][0] = float("nan")
    torch.save(state, checkpoint / "grpo_state_0.pt")
    refused_before_loading(grpo(tmp_path / "run2"), checkpoint, (
        "grpo_state_0.pt holds a buffer whose slice 1 has 1 values of "
        "advantages that are not finite"))


def with_step(step):
    return lambda state: {**state, "step": step}


def with_slices(change):
    return lambda state: {**state, "buffer": [change(s) for s in
                                              state["buffer"]]}


def one_row(slice_):
    return {key: None if value is None else value[:1]
            for key, value in slice_.items()}


def without_advantages(slice_):
    return {key: value for key, value in slice_.items()
            if key != "advantages"}


@pytest.mark.parametrize("change, match", [
    (with_step(-3), r"holds step=-3, but 1 optimizer steps of gradient_"
                    r"accumulation_steps=1 serve 0 to 1 micro-steps"),
    (with_step("x"), "holds step='x'"),
    (with_step(2.5), "holds step=2.5"),
    (with_step(2), "holds step=2, but 1 optimizer steps"),  # beyond them
    (with_step(True), "holds step=True"),
    (lambda state: {**state, "buffer": state["buffer"] * 2},
     "holds a buffer of 4 slices, not the 2 slices of steps_per_generation=2"),
    (lambda state: {**state, "buffer": state["buffer"][:1]},
     "holds a buffer of 1 slices, not the 2"),
    (lambda state: {**state, "buffer": None}, "holds no buffer after 1 steps"),
    (with_slices(one_row), "holds a buffer whose slice 0 has 1 rows of "
                           "prompt_ids, not the per_device_train_batch_size=8"),
    (with_slices(without_advantages),
     "holds a buffer whose slice 0 lacks advantages"),
    (lambda state: {**state, "generation": {}}, "holds generation={}"),
])
def test_a_hand_made_or_foreign_buffer_state_is_refused_before_loading(
        change, match, grpo_checkpoint, tmp_path):
    checkpoint = broken_copy(grpo_checkpoint, tmp_path)
    path = checkpoint / "grpo_state_0.pt"
    torch.save(change(torch.load(path, weights_only=True)), path)
    refused_before_loading(grpo(tmp_path / "run"), checkpoint,
                           f"cannot resume from .*: grpo_state_0.pt {match}")


def test_a_missing_path_is_named_as_missing(tmp_path):
    refused_before_loading(grpo(tmp_path), tmp_path / "no-such-checkpoint",
                           "no-such-checkpoint: there is no such folder")


def test_a_run_folder_names_its_latest_checkpoint(grpo_checkpoint, tmp_path):
    refused_before_loading(grpo(tmp_path), grpo_checkpoint.parent,
                           "it is a run's folder, not one of its checkpoints:"
                           " resume from its latest, --resume-from-checkpoint"
                           " .*checkpoint-2$")


def test_a_half_written_checkpoint_says_so(grpo_checkpoint, tmp_path):
    checkpoint = broken_copy(grpo_checkpoint, tmp_path, "kit_checkpoint.json")
    (checkpoint / "trainer_state.json").unlink()
    refused_before_loading(grpo(tmp_path / "run"), checkpoint,
                           "saving it was cut short")


def test_a_grpo_checkpoint_cut_before_its_last_file_says_so(grpo_checkpoint,
                                                            tmp_path):
    checkpoint = broken_copy(grpo_checkpoint, tmp_path, "kit_checkpoint.json")
    refused_before_loading(grpo(tmp_path / "run"), checkpoint,
                           "it has grpo_state_0.pt but no kit_checkpoint.json"
                           ", which is written after it: saving it was cut "
                           "short")


def test_a_checkpoint_of_the_stock_trainer_says_so(tmp_path):
    from transformers import Trainer
    sft(tmp_path / "stock", trainer_class=Trainer).train()
    refused_before_loading(sft(tmp_path / "run"),
                           tmp_path / "stock" / "checkpoint-1",
                           "no kit_checkpoint.json, so it was not saved by a "
                           "kit trainer")


def test_a_kit_checkpoint_cut_after_the_trainers_files_says_cut_short(
        sft_checkpoint, tmp_path):
    # cut after trainer_state.json, the Trainer's last file: not a stock
    # Trainer's checkpoint (N37)
    checkpoint = broken_copy(sft_checkpoint, tmp_path, "kit_checkpoint.json")
    refused_before_loading(sft(tmp_path / "run"), checkpoint,
                           "it has trainer_state.json from a kit trainer but "
                           "no kit_checkpoint.json, which is written after "
                           "it: saving it was cut short")


class KilledAfterTheTrainersFiles(GRPOTrainer):
    """Saving stops (as under kill -9) once the Trainer's files are in."""

    def checkpoint_state(self):
        raise KeyboardInterrupt


def test_a_folder_saved_over_by_a_run_cut_short_is_refused(grpo_checkpoint,
                                                           tmp_path):
    # run B saves into the folder run A's checkpoint-1 is in, and is cut
    # short: A's kit_checkpoint.json must not vouch for B's files (N88)
    folder = tmp_path / "runs"
    shutil.copytree(grpo_checkpoint.parent, folder)
    with pytest.raises(KeyboardInterrupt):
        grpo(folder, trainer_class=KilledAfterTheTrainersFiles, seed=1,
             learning_rate=0.1).train()
    refused_before_loading(grpo(tmp_path / "run"), folder / "checkpoint-1",
                           "saving it was cut short")


# ----------------------------------------- one run at a time into a folder

def test_a_second_run_into_a_folder_in_use_is_refused_naming_the_first(
        tmp_path, capsys):
    from kit.trainers.run_lock import output_folder_lock
    folder = tmp_path / "same"
    with output_folder_lock(folder):  # a first run, training there
        with pytest.raises(ValueError, match=(
                r"output_dir .*same is being written by another run "
                r"\(process \d+, started .*\): wait for it to end")):
            sft(folder).train()
        assert cli.main(["train", "sft", "--max-steps", "1", "--output-dir",
                         str(folder)]) == 2
        assert "is being written by another run" in capsys.readouterr().err
    assert not (folder / ".kit_run.lock").exists()  # gone with the run
    sft(folder).train()  # once the first has ended, the folder is free


def test_a_new_run_into_a_finished_runs_folder_removes_its_checkpoints(
        sft_checkpoint, tmp_path, capsys):
    folder = tmp_path / "run"
    shutil.copytree(sft_checkpoint.parent, folder)  # checkpoint-1 and -2
    sft(folder, max_steps=1).train()
    assert sorted(p.name for p in folder.glob("checkpoint-*")) == [
        "checkpoint-1"]  # this run's: no checkpoint-2 passes for its latest
    assert (f"{folder}: removed checkpoint-1, checkpoint-2, saved there by "
            "an earlier run: this run starts anew") in capsys.readouterr().out
    stock = tmp_path / "stock"
    (stock / "checkpoint-5").mkdir(parents=True)
    (stock / "checkpoint-5" / "trainer_state.json").write_text("{}")
    with pytest.raises(ValueError, match=(
            "output_dir .*stock holds checkpoint-5, which no kit trainer "
            "saved: this run's checkpoints would mix with them")):
        sft(stock).train()
    assert (stock / "checkpoint-5" / "trainer_state.json").exists()


# ------------------------------------------------------------ a full disk

def no_space_left(*args, **kwargs):
    from safetensors import SafetensorError
    raise SafetensorError("Error while serializing: I/O error: No space left "
                          "on device (os error 28)")


def files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("error", [
    RuntimeError("[enforce fail at inline_container.cc:672] . unexpected "
                 "pos 64 vs 0"),
    OSError(28, "No space left on device")])
def test_a_checkpoint_cut_by_a_full_disk_names_its_folder_and_the_way_on(
        error, tmp_path, monkeypatch):
    saved = torch.save

    def full_at_step_2(obj, path, *args, **kwargs):
        if "checkpoint-2" in str(path):
            raise error
        return saved(obj, path, *args, **kwargs)
    monkeypatch.setattr(torch, "save", full_at_step_2)
    folder = tmp_path / "run"
    with pytest.raises(OSError) as cut:
        sft(folder, max_steps=3).train()
    why = str(error).splitlines()[-1]
    assert str(cut.value) == (
        f"could not save the checkpoint {folder}/checkpoint-2 ({why}): it is "
        "not whole, and no resume will take it: free some space (a full "
        f"disk?), then resume from the latest whole one ({folder}/"
        "checkpoint-1), or start again")


def test_a_final_save_cut_while_its_files_moved_is_named_on_load(tmp_path):
    from kit import models
    runs.run("sft", tmp_path, max_steps=1, disable_tqdm=True)
    (tmp_path / ".saving").mkdir()
    (tmp_path / "config.json").rename(tmp_path / ".saving" / "config.json")
    with pytest.raises(FileNotFoundError, match=(
            r"the final save into .* was cut short while its files moved in "
            r"\(.saving/ still holds config.json\): run the training into "
            "it again")):
        models.load_policy(str(tmp_path))


def test_a_full_disk_leaves_the_folder_as_it_was_and_a_rerun_welcome(
        tmp_path, monkeypatch, capsys):
    import transformers.modeling_utils as modeling
    kept, fresh = tmp_path / "kept", tmp_path / "fresh"
    runs.run("sft", kept, max_steps=1, disable_tqdm=True)
    before = files(kept)
    with monkeypatch.context() as patch:
        patch.setattr(modeling, "safe_save_file", no_space_left)
        with pytest.raises(OSError, match=(
                f"could not save the model to {kept} \\(.*No space left on "
                r"device.*\): the files already there are as they were: "
                "free some space, then run again")):
            runs.run("sft", kept, max_steps=2, disable_tqdm=True)
        assert files(kept) == before  # the first run's model is not lost
        with pytest.raises(OSError):
            runs.run("sft", fresh, max_steps=1, disable_tqdm=True)
        assert cli.main(["train", "sft", "--max-steps", "1", "--output-dir",
                         str(kept)]) == 2
        assert "No space left on device" in capsys.readouterr().err
    # space again: a rerun into either folder is the kit's own (N78)
    for folder in (kept, fresh):
        assert cli.main(["train", "sft", "--max-steps", "1", "--output-dir",
                         str(folder)]) == 0

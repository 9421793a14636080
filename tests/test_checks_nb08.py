"""Notebook 08's checker: the buffer checkpoint, a private override.

It accepts the reference and the kit's own GRPOTrainer, and rejects and
names each mistake, written here as a learner would write it (not the
catalogue's code).
"""

import os

import pytest
import torch

from kit import checks
from kit.checks import nb08_private
from kit.trainers import GRPOTrainer, GRPOTrainerWithoutBuffer

pytestmark = pytest.mark.usefixtures("lenient")


def _folder(trainer, trial):
    return os.path.join(trainer._get_output_dir(trial),
                        f"checkpoint-{trainer.state.global_step}")


def _state(trainer):
    return {"step": trainer._step, "buffer": trainer._buffer,
            "generation": trainer._generation}


def _restore(trainer, folder, name=None):
    name = name or f"buffer_{trainer.accelerator.process_index}.pt"
    state = torch.load(os.path.join(folder, name), weights_only=True)
    trainer._step, trainer._buffer = state["step"], state["buffer"]
    trainer._generation = state["generation"]


def _checked(trainer, folder, name):
    """The state in `name`, refused unless it is there and cut for this k."""
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{name} is not in {folder}")
    state = torch.load(path, weights_only=True)
    slices = len(state["buffer"] or [])
    if slices not in (0, trainer.args.steps_per_generation):
        raise ValueError(f"{name}: {slices} slices for another k")
    return state


class Learners(GRPOTrainerWithoutBuffer):
    """A right answer in other words: args.process_index, its own name."""

    def _save_checkpoint(self, model, trial, **kwargs):
        super()._save_checkpoint(model, trial, **kwargs)
        torch.save(_state(self), os.path.join(
            _folder(self, trial), f"mine-{self.args.process_index}.pt"))

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        state = _checked(self, resume_from_checkpoint,
                         f"mine-{self.args.process_index}.pt")
        super()._load_from_checkpoint(resume_from_checkpoint, model,
                                      **kwargs)
        self._step, self._buffer = state["step"], state["buffer"]
        self._generation = state["generation"]


class ReadsAfterLoading(Learners):
    """Last session's right answer: the weights load before the file."""

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        GRPOTrainerWithoutBuffer._load_from_checkpoint(
            self, resume_from_checkpoint, model, **kwargs)
        _restore(self, resume_from_checkpoint,
                 f"mine-{self.args.process_index}.pt")


class ChecksOnlyThatItIsThere(Learners):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        name = f"mine-{self.args.process_index}.pt"
        if not os.path.exists(os.path.join(resume_from_checkpoint, name)):
            raise FileNotFoundError(name)
        GRPOTrainerWithoutBuffer._load_from_checkpoint(
            self, resume_from_checkpoint, model, **kwargs)
        _restore(self, resume_from_checkpoint, name)


class NoKwargs(Learners):
    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)


class SavedFirst(Learners):
    def _save_checkpoint(self, model, trial, **kwargs):
        torch.save(_state(self), os.path.join(_folder(self, trial),
                                              "mine-0.pt"))
        super()._save_checkpoint(model, trial, **kwargs)


class OnlyLoads(GRPOTrainerWithoutBuffer):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        super()._load_from_checkpoint(resume_from_checkpoint, model,
                                      **kwargs)
        _restore(self, resume_from_checkpoint)


class OnlySaves(GRPOTrainerWithoutBuffer):
    def _save_checkpoint(self, model, trial, **kwargs):
        super()._save_checkpoint(model, trial, **kwargs)
        torch.save(_state(self), os.path.join(_folder(self, trial),
                                              "buffer_0.pt"))


class LoadsWithoutSuper(OnlySaves):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        _restore(self, resume_from_checkpoint)


class ForgetsTheStep(OnlySaves):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        super()._load_from_checkpoint(resume_from_checkpoint, model,
                                      **kwargs)
        state = torch.load(os.path.join(resume_from_checkpoint,
                                        "buffer_0.pt"), weights_only=True)
        self._buffer = state["buffer"]
        self._generation = state["generation"]


class OneFileName(Learners):
    def _save_checkpoint(self, model, trial, **kwargs):
        GRPOTrainerWithoutBuffer._save_checkpoint(self, model, trial,
                                                  **kwargs)
        torch.save(_state(self), os.path.join(_folder(self, trial),
                                              "mine-0.pt"))

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        GRPOTrainerWithoutBuffer._load_from_checkpoint(
            self, resume_from_checkpoint, model, **kwargs)
        _restore(self, resume_from_checkpoint, "mine-0.pt")


class Stub(GRPOTrainerWithoutBuffer):
    def _save_checkpoint(self, model, trial, **kwargs):
        raise NotImplementedError

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        raise NotImplementedError


@pytest.mark.parametrize("right", [nb08_private.MyCheckpointedTrainer,
                                   Learners, GRPOTrainer])
def test_the_buffer_checkpoint_accepts_right_answers(right):
    assert checks.check("buffer_checkpoint", right).status == "passed"


@pytest.mark.parametrize("wrong, mistake", [
    (NoKwargs, "no_kwargs"),
    (SavedFirst, "saved_before_super"),
    (GRPOTrainerWithoutBuffer, "buffer_not_saved"),  # no override at all
    (LoadsWithoutSuper, "super_not_called"),
    (OnlySaves, "not_restored"),
    (ForgetsTheStep, "step_not_restored"),
    (OneFileName, "same_file_everywhere"),
    (ReadsAfterLoading, "read_after_the_weights"),
])
def test_the_buffer_checkpoint_names_each_mistake(wrong, mistake):
    result = checks.check("buffer_checkpoint", wrong)
    assert (result.status, result.mistake) == ("failed", mistake)


def test_a_buffer_cut_for_another_k_must_be_refused_before_the_weights():
    result = checks.check("buffer_checkpoint", ChecksOnlyThatItIsThere)
    assert result.status == "failed"
    assert ("a checkpoint whose buffer has a slice more than this run's "
            "steps_per_generation was resumed without a word"
            in result.message)


def test_only_saving_is_not_enough():
    # saves but the resume crashes reading a file that is not there
    result = checks.check("buffer_checkpoint", OnlyLoads)
    assert (result.status, result.mistake) == ("failed", "buffer_not_saved")


def test_the_stub_is_not_attempted():
    assert checks.check("buffer_checkpoint", Stub).status == "not attempted"


def test_the_base_saves_no_buffer_and_the_kit_trainer_does(tmp_path):
    _, _, files = nb08_private._uninterrupted()
    assert not any(name.startswith("grpo_state") for name in files)
    trainer = nb08_private.toy_trainer(GRPOTrainer, str(tmp_path), max_steps=1)
    trainer.train()
    assert "grpo_state_0.pt" in os.listdir(tmp_path / "checkpoint-1")


def test_the_check_leaves_trainer_and_processes_as_they_were():
    from accelerate import Accelerator
    from transformers import Trainer, TrainingArguments
    before = (Trainer._save_checkpoint, Trainer._load_from_checkpoint,
              Accelerator.process_index, TrainingArguments.world_size)
    checks.check("buffer_checkpoint", OneFileName)
    assert before == (Trainer._save_checkpoint,
                      Trainer._load_from_checkpoint,
                      Accelerator.process_index, TrainingArguments.world_size)

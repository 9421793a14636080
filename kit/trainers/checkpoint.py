"""Checkpoints that say what made them, and resumes that check it.

The Trainer resumes from any folder it is given: another trainer's, one
with files missing, one made with a different batch layout. Each goes on
quietly and ends somewhere else. So each checkpoint records its trainer and
the settings that shape its batches, and a resume refuses a mismatch or a
missing file, naming it, before any training time is spent.
"""

import json
import os

from transformers.trainer import OPTIMIZER_NAME, SCHEDULER_NAME

METADATA = "kit_checkpoint.json"


class CheckpointMixin:
    """Write `kit_checkpoint.json` with each checkpoint; check it on resume.

    A trainer lists in `checkpoint_settings()` the settings a resume must
    share, and in `checkpoint_files()` any files of its own it saves.
    """

    def checkpoint_settings(self):
        """Settings that must not change between save and resume."""
        # they decide which rows make each step's batch
        return {"processes": self.accelerator.num_processes,
                "per_device_train_batch_size":
                    self.args.per_device_train_batch_size,
                "gradient_accumulation_steps":
                    self.args.gradient_accumulation_steps}

    def checkpoint_files(self):
        """Files of this process that a resume cannot do without."""
        return []

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            with open(os.path.join(self._checkpoint_dir(trial), METADATA),
                      "w") as file:
                json.dump(self._checkpoint_metadata(), file, indent=1)

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        self.check_checkpoint(resume_from_checkpoint)
        super()._load_from_checkpoint(resume_from_checkpoint, model)

    def check_checkpoint(self, folder):
        """Refuse a checkpoint this trainer cannot resume exactly."""
        path = os.path.join(folder, METADATA)
        if not os.path.isfile(path):
            raise ValueError(
                f"cannot resume from {folder}: it has no {METADATA}, so it "
                f"was not saved by a kit trainer: start a new run, or resume "
                f"from a checkpoint {type(self).__name__} saved")
        with open(path) as file:
            saved = json.load(file)
        mine = self._checkpoint_metadata()
        if saved["trainer"] != mine["trainer"]:
            raise ValueError(
                f"cannot resume from {folder}: it was saved by "
                f"{saved['trainer']}, and this is {mine['trainer']}: resume "
                f"from a {mine['trainer']} checkpoint or start a new run")
        for name, value in mine["settings"].items():
            if saved["settings"].get(name) != value:
                raise ValueError(
                    f"cannot resume from {folder}: it was saved with {name}="
                    f"{saved['settings'].get(name)}, this run has {name}="
                    f"{value}: resume with the same {name} or start a new run")
        needed = self._rng_file(), OPTIMIZER_NAME, SCHEDULER_NAME
        for name in (*needed, *self.checkpoint_files()):
            if not os.path.isfile(os.path.join(folder, name)):
                raise ValueError(
                    f"cannot resume from {folder}: {name} is missing, so the "
                    "run would not continue as it was: copy the whole "
                    "checkpoint folder, or start a new run")

    def _checkpoint_metadata(self):
        # The kit trainer a class derives from: a learner's subclass of
        # GRPOTrainer may resume what GRPOTrainer saved.
        kit_class = next(c for c in type(self).__mro__
                         if c.__module__.startswith("kit.trainers"))
        return {"trainer": kit_class.__name__,
                "class": type(self).__name__,
                "run_name": self.args.run_name,
                "settings": self.checkpoint_settings()}

    def _checkpoint_dir(self, trial):
        return os.path.join(self._get_output_dir(trial),
                            f"checkpoint-{self.state.global_step}")

    def _rng_file(self):
        # the Trainer's own names (see Trainer._save_rng_state)
        if self.args.world_size > 1:
            return f"rng_state_{self.args.process_index}.pth"
        return "rng_state.pth"

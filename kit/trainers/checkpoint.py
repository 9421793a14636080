"""Checkpoints that say what made them, and resumes that check it.

The Trainer resumes from any folder it is given: another trainer's, one
with files missing or cut short, one made with a different batch layout or
another model. Each goes on quietly and ends somewhere else, or crashes
after the weights were loaded. So each checkpoint records its trainer and
the settings a resume must share, and a resume reads and checks every file
first, refusing a mismatch or a broken file by name, before any weights are
loaded or any training time is spent.
"""

import json
import os
import pickle
import zipfile

import torch
from safetensors import SafetensorError, safe_open
from transformers.trainer import (OPTIMIZER_NAME, SCHEDULER_NAME,
                                  TRAINER_STATE_NAME)
from transformers.trainer_utils import get_last_checkpoint

from kit.trainers.guards import refusal
from kit.trainers.run_lock import output_folder_lock

METADATA = "kit_checkpoint.json"  # written last: its presence means "whole"
KIT_MARK = "kit_checkpoint"  # trainer_state.json's mark: a kit trainer saved
WEIGHTS = "model.safetensors"
# The other ways a Trainer saves a model (sharded, .bin, adapters).
OTHER_WEIGHTS = ("model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json", "adapter_model.safetensors",
                 "adapter_model.bin")
# config.json keys that fix the model's shape: what a preset changes
SHAPE = ("model_type", "vocab_size", "hidden_size", "intermediate_size",
         "num_hidden_layers", "num_attention_heads", "num_key_value_heads")

# What a resume may not change, by kit trainer: the settings that decide
# which rows make a step's batch, what a buffered slice holds, or what the
# loss is. Anything else may change: a learning rate, logging, max_steps,
# save_steps. README's resume table is this one (a test holds them equal).
BATCH = ("per_device_train_batch_size", "gradient_accumulation_steps")
KEPT_ON_RESUME = {
    "CausalLMTrainer": BATCH,
    "DPOTrainer": BATCH + ("beta", "loss_type", "label_smoothing",
                           "max_length"),
    # a resume serves the saved buffer: cut the same way, its completions
    # as long, its log-probs taken at this temperature and reference
    "GRPOTrainer": BATCH + ("num_generations", "steps_per_generation",
                            "max_completion_length", "temperature", "beta",
                            "epsilon", "loss_type", "scale_rewards"),
}


class CheckpointMixin:
    """Write `kit_checkpoint.json` with each checkpoint; check it on resume.

    A trainer's row of KEPT_ON_RESUME lists the settings a resume must
    share; one with state of its own names a `state_file` and returns that
    state from `checkpoint_state()` (tensors, numbers, lists and dicts
    only, so that loading it with weights_only cannot run code).
    """

    state_file = None  # e.g. "grpo_state_{process}.pt", one per process

    def checkpoint_settings(self):
        """Settings that must not change between save and resume: this
        trainer's row of KEPT_ON_RESUME, and the number of processes."""
        kept = next(KEPT_ON_RESUME[c.__name__] for c in type(self).__mro__
                    if c.__name__ in KEPT_ON_RESUME)
        return {"processes": self.accelerator.num_processes,
                **{name: getattr(self.args, name) for name in kept}}

    def checkpoint_state(self):
        """This trainer's own state, saved in `state_file`."""
        return {}

    def load_checkpoint_state(self, state):
        """Take back what `checkpoint_state()` returned."""

    def train(self, *args, **kwargs):
        # one run at a time into a folder: two would save over each other
        with output_folder_lock(self.args.output_dir, self.args.should_save):
            return super().train(*args, **kwargs)

    # Private methods: **kwargs takes whatever a newer Trainer passes (when
    # transformers 4.47 dropped `metrics`, overrides without it broke).
    def _save_checkpoint(self, model, trial, **kwargs):
        folder = self._checkpoint_dir(trial)
        if self.args.should_save:
            # A folder saved over (a run killed mid-save, then another)
            # must not keep the marker of the run before: gone first, it
            # comes back only once this save is whole.
            if os.path.exists(os.path.join(folder, METADATA)):
                os.remove(os.path.join(folder, METADATA))
            # and trainer_state.json, which the Trainer writes last, says
            # a kit trainer saved it: a folder without the marker is then
            # one cut short, not a stock Trainer's
            self.state.stateful_callbacks[KIT_MARK] = {
                "trainer": self._checkpoint_metadata()["trainer"]}
        super()._save_checkpoint(model, trial, **kwargs)
        if self.state_file:
            torch.save(self.checkpoint_state(),
                       os.path.join(folder, self._state_file()))
        if self.args.should_save:  # last, whole or not at all
            partial = os.path.join(folder, METADATA + ".partial")
            with open(partial, "w") as file:
                json.dump(self._checkpoint_metadata(), file, indent=1)
            os.replace(partial, os.path.join(folder, METADATA))

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        state = self.check_checkpoint(resume_from_checkpoint)
        super()._load_from_checkpoint(resume_from_checkpoint, model, **kwargs)
        if self.state_file:
            self.load_checkpoint_state(state)

    def check_checkpoint(self, folder):
        """Refuse a checkpoint this trainer cannot resume exactly.

        Every file is read and checked before any weights are loaded.
        Returns the state saved in `state_file` (None without one).
        """
        folder = str(folder)
        saved = self._read_metadata(folder)
        self._check_trainer(folder, saved)
        self._check_model(folder)  # before the settings: a preset sets both
        self._check_settings(folder, saved)
        self._check_files(folder)
        return self._read_state(folder)

    # ---------------------------------------------------------- the checks

    def _read_metadata(self, folder):
        """kit_checkpoint.json, or an error that says what the folder is."""
        if not os.path.exists(folder):
            refuse(folder, "there is no such folder: check the path (a "
                           "checkpoint is a checkpoint-N folder inside the "
                           "run's output folder)")
        if not os.path.isdir(folder):
            refuse(folder, "it is a file: give a checkpoint-N folder")
        path = os.path.join(folder, METADATA)
        if not os.path.isfile(path):
            latest = get_last_checkpoint(folder)
            if latest:
                refuse(folder, "it is a run's folder, not one of its "
                               "checkpoints: resume from its latest, "
                               f"--resume-from-checkpoint {latest}")
            state = os.path.join(folder, TRAINER_STATE_NAME)
            if not os.path.isfile(state):
                refuse(folder, f"it has neither {TRAINER_STATE_NAME} nor "
                               f"{METADATA}, which are written last: saving "
                               "it was cut short (or it is not a "
                               "checkpoint): resume from an earlier "
                               "checkpoint, or start a new run")
            if self.state_file and os.path.isfile(
                    os.path.join(folder, self._state_file())):
                refuse(folder, f"it has {self._state_file()} but no "
                               f"{METADATA}, which is written after it: "
                               "saving it was cut short: resume from an "
                               "earlier checkpoint, or start a new run")
            if _saved_by_the_kit(state):
                refuse(folder, f"it has {TRAINER_STATE_NAME} from a kit "
                               f"trainer but no {METADATA}, which is "
                               "written after it: saving it was cut short: "
                               "resume from an earlier checkpoint, or "
                               "start a new run")
            refuse(folder, f"it has no {METADATA}, so it was not saved by a "
                           "kit trainer: start a new run, or resume from a "
                           f"checkpoint {type(self).__name__} saved")
        try:
            with open(path) as file:
                saved = json.load(file)
        except (ValueError, UnicodeDecodeError) as error:
            damaged(folder, METADATA, f"not JSON: {error}")
        if not (isinstance(saved, dict) and isinstance(saved.get("trainer"),
                                                       str)
                and isinstance(saved.get("settings"), dict)):
            damaged(folder, METADATA, "it lacks 'trainer' or 'settings'")
        return saved

    def _check_trainer(self, folder, saved):
        """The same kit trainer (a learner's subclass counts as its base)."""
        mine = self._checkpoint_metadata()["trainer"]
        if saved["trainer"] != mine:
            refuse(folder, f"it was saved by {saved['trainer']}, and this is "
                           f"{mine}: resume from a {mine} checkpoint or start "
                           "a new run")

    def _check_settings(self, folder, saved):
        """The same settings: they shape each step's batch and loss."""
        for name, value in self.checkpoint_settings().items():
            if name not in saved["settings"]:
                refuse(folder, f"it was saved by an older kit, which did not "
                               f"record {name}: start a new run")
            if saved["settings"][name] != value:
                refuse(folder, f"it was saved with {name}="
                               f"{saved['settings'][name]}, this run has "
                               f"{name}={value}: resume with the same {name} "
                               "or start a new run")

    def _check_files(self, folder):
        """Every file a resume reads is there and whole."""
        state = (self._state_file(),) if self.state_file else ()
        for name in (TRAINER_STATE_NAME, OPTIMIZER_NAME, SCHEDULER_NAME,
                     self._rng_file(), *state):
            if not os.path.isfile(os.path.join(folder, name)):
                refuse(folder, f"{name} is missing, so the run would not "
                               "continue as it was: copy the whole "
                               "checkpoint folder, or start a new run")
        if not any(os.path.isfile(os.path.join(folder, name))
                   for name in (WEIGHTS, *OTHER_WEIGHTS)):
            refuse(folder, f"{WEIGHTS} is missing: copy the whole "
                           "checkpoint folder, or start a new run")
        try:
            with open(os.path.join(folder, TRAINER_STATE_NAME)) as file:
                json.load(file)
        except (ValueError, UnicodeDecodeError) as error:
            damaged(folder, TRAINER_STATE_NAME, f"not JSON: {error}")
        for name in (OPTIMIZER_NAME, SCHEDULER_NAME, self._rng_file()):
            # torch.save writes a zip whose directory is at the very end:
            # a file cut short has none
            try:
                with zipfile.ZipFile(os.path.join(folder, name)) as archive:
                    archive.namelist()
            except (zipfile.BadZipFile, OSError) as error:
                damaged(folder, name, str(error))

    def _check_model(self, folder):
        """The checkpoint's model has this run's model's shape."""
        model = self.accelerator.unwrap_model(self.model)
        config = os.path.join(folder, "config.json")
        if os.path.isfile(config) and hasattr(model, "config"):
            try:
                with open(config) as file:
                    theirs = json.load(file)
            except (ValueError, UnicodeDecodeError) as error:
                damaged(folder, "config.json", f"not JSON: {error}")
            mine = model.config.to_dict()
            for key in SHAPE:
                if theirs.get(key) != mine.get(key):
                    refuse(folder, f"its model has {key}={theirs.get(key)}, "
                                   f"this run's model has {key}="
                                   f"{mine.get(key)}: resume with the model "
                                   "(and --preset) the checkpoint was "
                                   "trained from, or start a new run")
        weights = os.path.join(folder, WEIGHTS)
        if not os.path.isfile(weights):
            return  # another format: the Trainer checks it as it loads
        shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        try:
            with safe_open(weights, "pt") as file:
                for key in file.keys():
                    shape = tuple(file.get_slice(key).get_shape())
                    if key in shapes and shapes[key] != shape:
                        refuse(folder, f"its {WEIGHTS} holds {key} of shape "
                                       f"{shape}, this run's model "
                                       f"{shapes[key]}: resume with the "
                                       "model (and --preset) the checkpoint "
                                       "was trained from, or start a new run")
        except SafetensorError as error:
            damaged(folder, WEIGHTS, str(error))

    def _read_state(self, folder):
        """The trainer's own state: tensors only, with the keys it saves."""
        if not self.state_file:
            return None
        name = self._state_file()
        try:  # weights_only: a checkpoint from elsewhere cannot run code
            # onto the CPU first: the trainer moves it where it runs (two
            # CPU processes both run on cpu:0, a device torch.load refuses)
            state = torch.load(os.path.join(folder, name),
                               map_location="cpu", weights_only=True)
        except pickle.UnpicklingError:
            refuse(folder, said("not_only_tensors", name=name))
        except (RuntimeError, EOFError, OSError) as error:
            damaged(folder, name, str(error).splitlines()[0])
        expected = sorted(self.checkpoint_state())
        if not isinstance(state, dict) or sorted(state) != expected:
            found = sorted(state) if isinstance(state, dict) else type(
                state).__name__
            refuse(folder, f"{name} holds {found}, not {expected}: it was "
                           f"not saved by {type(self).__name__}: resume from "
                           "a checkpoint it saved, or start a new run")
        with open(os.path.join(folder, TRAINER_STATE_NAME)) as file:
            global_step = json.load(file).get("global_step")
        problem = self.checkpoint_state_problem(state, global_step)
        if problem:
            refuse(folder, f"{name} {problem}: it was not saved with this "
                           "checkpoint by a run with these settings: resume "
                           "from a checkpoint the kit saved, or start a new "
                           "run")
        return state

    def checkpoint_state_problem(self, state, global_step):
        """What makes `state` (its keys checked) unfit for this run at
        `global_step`, in a few words; None when it fits. Checked before
        any weights load: a bad state fails here, not mid-training."""
        return None

    # ------------------------------------------------------------- plumbing

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

    def _state_file(self):
        return self.state_file.format(process=self.accelerator.process_index)

    def _rng_file(self):
        # the Trainer's own names (see Trainer._save_rng_state)
        if self.args.world_size > 1:
            return f"rng_state_{self.args.process_index}.pth"
        return "rng_state.pth"


def _saved_by_the_kit(trainer_state):
    """Whether a trainer_state.json holds the kit's mark (see
    _save_checkpoint); a damaged one does not."""
    try:
        with open(trainer_state) as file:
            saved = json.load(file)
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(saved, dict) and KIT_MARK in (
        saved.get("stateful_callbacks") or {})


def refuse(folder, why):
    raise refusal("cannot_resume", folder=folder, why=why)


def damaged(folder, name, why):
    refuse(folder, said("damaged", name=name, why=why))


def said(key, **fields):
    return str(refusal(key, **fields))

"""Checkpoints that say what made them, and resumes that check it.

The Trainer resumes from any folder it is given: another trainer's, one
with files missing or cut short, one made with a different batch layout or
another model. Each goes on quietly and ends somewhere else, or crashes
after the weights were loaded. So each checkpoint records its trainer and
the settings a resume must share, and a resume reads and checks every file
first, refusing a mismatch or a broken file by name, before any weights are
loaded or any training time is spent.
"""

import hashlib
import json
import os
import pickle
import re
import shutil
import zipfile

import torch
from accelerate.utils import gather_object
from safetensors import SafetensorError, safe_open
from transformers.trainer import (OPTIMIZER_NAME, SCHEDULER_NAME,
                                  TRAINER_STATE_NAME)
from transformers.trainer_utils import get_last_checkpoint

from kit import i18n
# why a checkpoint is refused, en and ja; the identity entries with words
# of their own
from kit.trainers.checkpoint_words import IDENTITY_WORDS, REFUSALS
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
# save_steps. docs/kit.md's resume table is this one (a test holds them equal).
BATCH = ("per_device_train_batch_size", "gradient_accumulation_steps")
KEPT_ON_RESUME = {
    "CausalLMTrainer": BATCH,
    "DPOTrainer": BATCH + ("beta", "loss_type", "label_smoothing",
                           "max_length", "discopop_tau"),
    # a resume serves the saved buffer: cut the same way, its completions
    # as long, its log-probs taken at this temperature and reference
    "GRPOTrainer": BATCH + ("num_generations", "steps_per_generation",
                            "max_completion_length", "temperature", "beta",
                            "epsilon", "loss_type", "scale_rewards",
                            "use_bias_correction_kl",
                            "importance_sampling_level", "epsilon_high",
                            "sapo_temperature_pos", "sapo_temperature_neg",
                            # the buffer's advantages, masks and samples
                            "reward_weights", "multi_objective_aggregation",
                            "mask_truncated_completions", "top_p", "top_k",
                            "min_p", "repetition_penalty"),
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

    def checkpoint_identity(self):
        """What else decides the run, as it started: the seed (which rows
        each step draws), the starting weights (a fingerprint: another
        model of the same shape differs) and the optimizer (its saved
        state fits no other). A trainer adds its own: DPO's reference,
        GRPO's reward functions."""
        optimizer = (type(self.optimizer).__name__ if self.optimizer
                     is not None else getattr(self.args.optim, "value",
                                              self.args.optim))
        return {"seed": self.args.seed, "data_seed": self.args.data_seed,
                "model": fingerprint(self.accelerator.unwrap_model(
                    self.model)), "optimizer": optimizer}

    def _identity(self):
        """checkpoint_identity() as this trainer started: taken once, at
        its first train() or check, before any weights change or load."""
        if getattr(self, "_started_as", None) is None:
            self._started_as = self.checkpoint_identity()
        return self._started_as

    def checkpoint_state(self):
        """This trainer's own state, saved in `state_file`."""
        return {}

    def load_checkpoint_state(self, state):
        """Take back what `checkpoint_state()` returned."""

    def train(self, *args, **kwargs):
        # one run at a time into a folder: two would save over each other
        with output_folder_lock(self.args.output_dir, self.args.should_save):
            self._identity()  # the starting weights, before any step
            resumed = args[0] if args else kwargs.get(
                "resume_from_checkpoint")
            if not resumed and self.args.should_save:
                self._clear_earlier_checkpoints()
            return super().train(*args, **kwargs)

    def _clear_earlier_checkpoints(self):
        """A new run into a folder removes the checkpoints an earlier kit
        run left there: kept, its later ones would pass for this run's
        latest (get_last_checkpoint, save_total_limit). A checkpoint no kit
        trainer saved is refused, not removed."""
        folder = self.args.output_dir
        found = sorted((p for p in (os.listdir(folder) if os.path.isdir(
            folder) else []) if re.fullmatch(r"checkpoint-\d+", p)),
            key=lambda p: int(p.split("-")[1]))
        if not found:
            return
        foreign = [p for p in found if not _kit_saved(os.path.join(folder,
                                                                  p))]
        if foreign:
            raise ValueError(_said("foreign_checkpoints", folder=folder,
                                   names=", ".join(foreign)))
        for name in found:
            shutil.rmtree(os.path.join(folder, name))
        print(_said("removed_earlier", folder=folder,
                    names=", ".join(found)))

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
        try:
            super()._save_checkpoint(model, trial, **kwargs)
            if self.state_file:
                torch.save(self.checkpoint_state(),
                           os.path.join(folder, self._state_file()))
        except (OSError, RuntimeError, SafetensorError) as error:
            # a full disk: torch's zip writer says "[enforce fail at
            # inline_container.cc...]", safetensors "os error 28", with no
            # folder named; this one has no kit_checkpoint.json, so no
            # resume will take it for whole
            raise OSError(_said("save_failed", folder=folder, why=(
                str(error).strip().splitlines() or [type(error).__name__])[
                    -1][:160], latest=_latest_whole(
                        os.path.dirname(folder), but=folder))) from None
        if self.args.should_save:  # last, whole or not at all
            partial = os.path.join(folder, METADATA + ".partial")
            with open(partial, "w") as file:
                json.dump(self._checkpoint_metadata(), file, indent=1)
            os.replace(partial, os.path.join(folder, METADATA))

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        try:
            state, refused = self.check_checkpoint(resume_from_checkpoint), None
        except ValueError as error:  # e.g. one rank's grpo_state file gone
            state, refused = None, error
        refuse_together(self.accelerator, refused)
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
        self._check_identity(folder, saved)
        self._check_files(folder)
        self._check_step(folder, saved)
        return self._read_state(folder)

    # ---------------------------------------------------------- the checks

    def _read_metadata(self, folder):
        """kit_checkpoint.json, or an error that says what the folder is."""
        if not os.path.exists(folder):
            refuse(folder, "no_folder")
        if not os.path.isdir(folder):
            refuse(folder, "a_file")
        path = os.path.join(folder, METADATA)
        if not os.path.isfile(path):
            latest = get_last_checkpoint(folder)
            if latest:
                refuse(folder, "run_folder", latest=latest)
            state = os.path.join(folder, TRAINER_STATE_NAME)
            if not os.path.isfile(state):
                refuse(folder, "neither", state=TRAINER_STATE_NAME)
            if self.state_file and os.path.isfile(
                    os.path.join(folder, self._state_file())):
                refuse(folder, "cut_short", name=self._state_file())
            if _saved_by_the_kit(state):
                refuse(folder, "cut_short_kit", name=TRAINER_STATE_NAME)
            refuse(folder, "not_the_kits", trainer=type(self).__name__)
        try:
            with open(path) as file:
                saved = json.load(file)
        except (ValueError, UnicodeDecodeError) as error:
            damaged(folder, METADATA, _said("not_json", error=error))
        if not (isinstance(saved, dict) and isinstance(saved.get("trainer"),
                                                       str)
                and isinstance(saved.get("settings"), dict)):
            damaged(folder, METADATA, _said("lacks"))
        return saved

    def _check_trainer(self, folder, saved):
        """The same kit trainer (a learner's subclass counts as its base)."""
        mine = self._checkpoint_metadata()["trainer"]
        if saved["trainer"] != mine:
            refuse(folder, "other_trainer", theirs=saved["trainer"],
                   mine=mine)

    def _check_settings(self, folder, saved):
        """The same settings: they shape each step's batch and loss."""
        for name, value in self.checkpoint_settings().items():
            if name not in saved["settings"]:
                refuse(folder, "older_kit", name=name)
            if saved["settings"][name] != value:
                refuse(folder, "other_setting", name=name,
                       theirs=saved["settings"][name], value=value)

    def _check_identity(self, folder, saved):
        """The same seed, starting model, optimizer (and reference,
        rewards): the steps after a resume are the ones the run would
        have taken."""
        theirs = saved.get("identity")
        if not isinstance(theirs, dict):
            refuse(folder, "older_kit", name="seed, model and optimizer")
        for name, value in self._identity().items():
            if name not in theirs:
                refuse(folder, "older_kit", name=name)
            if theirs[name] != value:
                reason = name if name in IDENTITY_WORDS else "other_setting"
                refuse(folder, reason, name=name, theirs=theirs[name],
                       value=value)

    def _check_step(self, folder, saved):
        """trainer_state.json's step is the checkpoint's own (an edited
        one would train on to it), and this run's max_steps lies past it
        (below it, the Trainer still takes one more step)."""
        with open(os.path.join(folder, TRAINER_STATE_NAME)) as file:
            state = json.load(file)
        step = state.get("global_step") if isinstance(state, dict) else None
        named = re.fullmatch(r"checkpoint-(\d+)", os.path.basename(
            os.path.normpath(folder)))
        says = {saved.get("step"), int(named[1]) if named else None} - {None}
        if not isinstance(step, int) or says and says != {step}:
            refuse(folder, "other_step", state=TRAINER_STATE_NAME, step=step,
                   saved=min(says) if says else "?")
        if 0 < self.args.max_steps < step:
            refuse(folder, "past_max_steps", step=step,
                   max_steps=self.args.max_steps)

    def _check_files(self, folder):
        """Every file a resume reads is there and whole."""
        state = (self._state_file(),) if self.state_file else ()
        for name in (TRAINER_STATE_NAME, OPTIMIZER_NAME, SCHEDULER_NAME,
                     self._rng_file(), *state):
            if not os.path.isfile(os.path.join(folder, name)):
                refuse(folder, "missing", name=name)
        if not any(os.path.isfile(os.path.join(folder, name))
                   for name in (WEIGHTS, *OTHER_WEIGHTS)):
            refuse(folder, "missing", name=WEIGHTS)
        try:
            with open(os.path.join(folder, TRAINER_STATE_NAME)) as file:
                json.load(file)
        except (ValueError, UnicodeDecodeError) as error:
            damaged(folder, TRAINER_STATE_NAME,
                    _said("not_json", error=error))
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
                damaged(folder, "config.json", _said("not_json", error=error))
            mine = model.config.to_dict()
            for key in SHAPE:
                if theirs.get(key) != mine.get(key):
                    refuse(folder, "other_model", setting=key,
                           theirs=theirs.get(key), mine=mine.get(key))
        weights = os.path.join(folder, WEIGHTS)
        if not os.path.isfile(weights):
            return  # another format: the Trainer checks it as it loads
        shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        try:
            with safe_open(weights, "pt") as file:
                for key in file.keys():
                    shape = tuple(file.get_slice(key).get_shape())
                    if key in shapes and shapes[key] != shape:
                        refuse(folder, "other_shape", setting=key,
                               shape=shape,
                               mine=shapes[key])
                for key in file.keys():  # one tensor at a time: read whole
                    values = file.get_tensor(key)
                    if (values.is_floating_point()
                            and not torch.isfinite(values).all()):
                        refuse(folder, "not_finite", name=WEIGHTS, tensor=key)
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
            refuse(folder, "not_only_tensors", name=name)
        except (RuntimeError, EOFError, OSError) as error:
            damaged(folder, name, str(error).splitlines()[0])
        expected = sorted(self.checkpoint_state())
        if not isinstance(state, dict) or sorted(state) != expected:
            found = sorted(state) if isinstance(state, dict) else type(
                state).__name__
            refuse(folder, "other_state", name=name, found=found,
                   expected=expected, trainer=type(self).__name__)
        with open(os.path.join(folder, TRAINER_STATE_NAME)) as file:
            global_step = json.load(file).get("global_step")
        problem = self.checkpoint_state_problem(state, global_step)
        owner = problem and self.state_kept_by()
        if owner:  # the learner's code made it so, not the checkpoint
            refuse(folder, "unfit_own_state", name=name, problem=problem,
                   owner=owner)
        if problem:
            refuse(folder, "unfit_state", name=name, problem=problem)
        unfit = self.checkpoint_state_unfit(state)
        if unfit:  # the model's, not a learner's override's doing
            refuse(folder, "unfit_state", name=name, problem=unfit)
        return state

    def checkpoint_state_problem(self, state, global_step):
        """What makes `state` (its keys checked) unfit for this run at
        `global_step`, in a few words; None when it fits. Checked before
        any weights load: a bad state fails here, not mid-training."""
        return None

    def checkpoint_state_unfit(self, state):
        """What in `state` (whole, as checkpoint_state_problem found it)
        this run's model cannot take, e.g. token ids beyond its vocabulary;
        None when it can."""
        return None

    def state_kept_by(self):
        """The learner's override that keeps this state ("Class.method"),
        or None where the kit's code keeps it: an unfit state is then that
        override's doing, not the checkpoint's."""
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
                "step": self.state.global_step,
                "settings": self.checkpoint_settings(),
                "identity": self._identity()}

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


def fingerprint(model):
    """A short hash of a model's weights: up to 256 values spread over each
    tensor, by name. Reading them all would cost a second a GB; two models
    of the same shape from other runs or seeds differ in every tensor."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        flat = tensor.detach().reshape(-1)
        digest.update(name.encode())
        digest.update(flat[::max(1, flat.numel() // 256)][:256].float()
                      .cpu().numpy().tobytes())
    return digest.hexdigest()[:12]


def _latest_whole(run_folder, but=None):
    """The latest checkpoint-N of `run_folder` that a kit trainer finished
    saving (its kit_checkpoint.json written), or None."""
    found = [p for p in (os.listdir(run_folder) if os.path.isdir(run_folder)
                         else []) if re.fullmatch(r"checkpoint-\d+", p)
             and os.path.join(run_folder, p) != but
             and os.path.isfile(os.path.join(run_folder, p, METADATA))]
    return os.path.join(run_folder, max(
        found, key=lambda p: int(p.split("-")[1]))) if found else None


def _kit_saved(checkpoint):
    """Whether a kit trainer saved (or began to save) this checkpoint-N."""
    return (os.path.isfile(os.path.join(checkpoint, METADATA))
            or os.path.isfile(os.path.join(checkpoint, METADATA + ".partial"))
            or _saved_by_the_kit(os.path.join(checkpoint, TRAINER_STATE_NAME))
            or not os.listdir(checkpoint))  # cut short before its first file


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


def refuse_together(accelerator, refused):
    """Raise a refusal on every process, or on none: a process that raised
    alone would leave the others waiting in their next collective (and
    their traceback, not its one line, would end the launch)."""
    if accelerator.num_processes > 1:
        said = [text for text in gather_object(
            [str(refused) if refused else None]) if text]
        if said and refused is None:
            raise ValueError(said[0])
    if refused is not None:
        raise refused


def refuse(folder, reason, **fields):
    """The ValueError for a checkpoint that cannot be resumed: why, and
    what to do, in the kit's language (REFUSALS[reason])."""
    raise ValueError(i18n.text(REFUSALS, "cannot_resume", folder=folder,
                               why=i18n.text(REFUSALS, reason, **fields)))


def damaged(folder, name, why):
    refuse(folder, "damaged", name=name, why=why)


def _said(key, **fields):
    return i18n.text(REFUSALS, key, **fields)

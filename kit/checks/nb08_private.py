"""Checker for notebook 08's ★★★: a private override, the buffer checkpoint.

The learner's `_save_checkpoint` / `_load_from_checkpoint` must carry
GRPO's generation buffer across a checkpoint taken mid-buffer. The check
runs what a learner would: a short run stopped after a save, resumed from
it, compared with an uninterrupted run; every call made as a newer Trainer
would make it (one keyword more); then one save as process 1 of 2.
"""

import functools
import hashlib
import os
import shutil
import tempfile
from contextlib import contextmanager
from unittest import mock

import torch
from accelerate import Accelerator
from transformers import Trainer, TrainerCallback, TrainingArguments

from kit import tasks
from kit.checks.compare import Raised, attempt, describe_error, same
from kit.checks.core import Mistake, Property, exercise, paused
from kit.checks.nb04_grpo_dataloader import first_problem, judge_facts
from kit.checks.nb08_words import BUFFER_CHECKPOINT_WORDS
from kit.i18n import said
from kit.models import load_policy
from kit.recipes import quiet
from kit.trainers import GRPOConfig, GRPOTrainer, GRPOTrainerWithoutBuffer

NOTEBOOK = "08_private_methods"


class MyCheckpointedTrainer(GRPOTrainerWithoutBuffer):
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


# The mistakes: the reference with one thing changed.

class ReadsAfterTheWeights(MyCheckpointedTrainer):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        super(MyCheckpointedTrainer, self)._load_from_checkpoint(
            resume_from_checkpoint, model, **kwargs)  # the weights first
        state = torch.load(  # then the file, unchecked
            os.path.join(resume_from_checkpoint, self.buffer_file()),
            map_location=self.args.device, weights_only=True)
        self._step, self._buffer = state["step"], state["buffer"]
        self._generation = state["generation"]

class BufferNotSaved(MyCheckpointedTrainer):
    def _save_checkpoint(self, model, trial, **kwargs):
        super(MyCheckpointedTrainer, self)._save_checkpoint(
            model, trial, **kwargs)  # and nothing of its own


class NotRestored(MyCheckpointedTrainer):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        super(MyCheckpointedTrainer, self)._load_from_checkpoint(
            resume_from_checkpoint, model, **kwargs)  # the file stays unread


class SuperNotCalled(MyCheckpointedTrainer):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        # no super(): the weights are never loaded
        state = torch.load(
            os.path.join(resume_from_checkpoint, self.buffer_file()),
            weights_only=True)
        self._step, self._buffer = state["step"], state["buffer"]
        self._generation = state["generation"]


class SavedBeforeSuper(MyCheckpointedTrainer):
    def _save_checkpoint(self, model, trial, **kwargs):
        folder = os.path.join(self._get_output_dir(trial),
                              f"checkpoint-{self.state.global_step}")
        torch.save({"step": self._step, "buffer": self._buffer,
                    "generation": self._generation},
                   os.path.join(folder, self.buffer_file()))
        super()._save_checkpoint(model, trial, **kwargs)  # too late


class MakesTheFolderFirst(MyCheckpointedTrainer):
    def _save_checkpoint(self, model, trial, **kwargs):
        folder = os.path.join(self._get_output_dir(trial),
                              f"checkpoint-{self.state.global_step}")
        os.makedirs(folder, exist_ok=True)  # so that the save works...
        torch.save({"step": self._step, "buffer": self._buffer,
                    "generation": self._generation},
                   os.path.join(folder, self.buffer_file()))
        super()._save_checkpoint(model, trial, **kwargs)  # ...still late


class SameFileEverywhere(MyCheckpointedTrainer):
    def buffer_file(self):
        return "buffer.pt"  # process 1 writes over process 0's


class NoKwargs(MyCheckpointedTrainer):
    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)


class StepNotRestored(MyCheckpointedTrainer):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        step = self._step
        super()._load_from_checkpoint(resume_from_checkpoint, model,
                                      **kwargs)
        self._step = step  # the buffer is back, its counter is not


class UnpicklesAnything(MyCheckpointedTrainer):
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        path = os.path.join(resume_from_checkpoint, self.buffer_file())
        if not os.path.isfile(path):
            raise ValueError(f"cannot resume: {path} is missing")
        state = torch.load(path, map_location=self.args.device,
                           weights_only=False)  # whatever the file holds
        k = self.args.steps_per_generation
        if state["buffer"] is not None and len(state["buffer"]) != k:
            raise ValueError(f"cannot resume: {path} holds "
                             f"{len(state['buffer'])} slices, and this run "
                             f"serves k = {k}")
        super(MyCheckpointedTrainer, self)._load_from_checkpoint(
            resume_from_checkpoint, model, **kwargs)
        self._step, self._buffer = state["step"], state["buffer"]
        self._generation = state["generation"]


# ------------------------------------------------------------ observing

K, STEPS, SAVE_AT = 2, 3, 1  # the save at step 1 falls mid-buffer
FUTURE = "future_argument"  # a keyword no transformers passes (yet)


@paused()
def toy_trainer(trainer_class, folder, **options):
    model, tokenizer = load_policy(preset="cpu")
    settings = dict(report_to="none", use_cpu=True, seed=0,
                    per_device_train_batch_size=4, num_generations=4,
                    steps_per_generation=K, max_completion_length=4,
                    max_steps=STEPS, save_steps=1, logging_steps=1,
                    disable_tqdm=True)
    args = GRPOConfig(folder, **{**settings, **options})
    # quiet: the learner reads the verdict, not the Trainer's raw log dicts
    return quiet(trainer_class(
        model, [tasks.correctness_reward], args=args,
        train_dataset=tasks.prompt_dataset("train", n=16),
        processing_class=tokenizer))


@contextmanager
def _newer_trainer(trainer, at_super=None):
    """Within: a Trainer whose private methods take one keyword more, and
    call `trainer`'s overrides with it. Each time the Trainer's own
    _save_checkpoint begins, `at_super` gets what the checkpoint folder
    holds already (the learner's files written before super())."""
    saved = Trainer._save_checkpoint, Trainer._load_from_checkpoint

    def save(self, model, trial, **kwargs):  # only FUTURE is new
        if at_super is not None:
            folder = os.path.join(self._get_output_dir(trial),
                                  f"checkpoint-{self.state.global_step}")
            at_super.append(sorted(os.listdir(folder))
                            if os.path.isdir(folder) else [])
        return saved[0](self, model, trial, **_known(kwargs))

    def load(self, resume_from_checkpoint, model=None, **kwargs):
        return saved[1](self, resume_from_checkpoint, model,
                        **_known(kwargs))
    cls = type(trainer)
    trainer._save_checkpoint = functools.partial(
        cls._save_checkpoint, trainer, **{FUTURE: None})
    trainer._load_from_checkpoint = functools.partial(
        cls._load_from_checkpoint, trainer, **{FUTURE: None})
    with mock.patch.object(Trainer, "_save_checkpoint", save), \
            mock.patch.object(Trainer, "_load_from_checkpoint", load):
        yield


def _known(kwargs):
    return {key: value for key, value in kwargs.items() if key != FUTURE}


@contextmanager
def _as_process(trainer, index, processes=2):
    """Within: `trainer` believes it is process `index` of `processes`."""
    world_zero = trainer.state.is_world_process_zero
    trainer.state.is_world_process_zero = index == 0
    try:
        with mock.patch.object(Accelerator, "process_index",
                               property(lambda self: index)), \
                mock.patch.object(TrainingArguments, "process_index",
                                  property(lambda self: index)), \
                mock.patch.object(TrainingArguments, "world_size",
                                  property(lambda self: processes)):
            yield
    finally:
        trainer.state.is_world_process_zero = world_zero


class _AtTrainBegin(TrainerCallback):
    """Keeps what the trainer holds right after the checkpoint is loaded."""

    def __init__(self, trainer):
        self.trainer, self.seen = trainer, None

    def on_train_begin(self, args, state, control, **kwargs):
        trainer = self.trainer
        self.seen = {"weights": _weights(trainer.model),
                     "buffer": trainer._buffer, "step": trainer._step}


class StopAfterSave(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step >= SAVE_AT:
            control.should_training_stop = True


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _losses(trainer):
    """(step, loss, generate() calls) of each logged step after the save."""
    return [(row["step"], row["loss"], row["generation/calls"])
            for row in trainer.state.log_history
            if "loss" in row and row["step"] > SAVE_AT]


def _files(folder):
    """{name: a hash of its bytes} of the files in `folder`."""
    return {name: hashlib.sha1(open(os.path.join(folder, name),
                                    "rb").read()).hexdigest()
            for name in sorted(os.listdir(folder))}


@functools.lru_cache(maxsize=None)
def _uninterrupted():
    """The run without a stop: its losses, final weights and the files the
    Trainer itself puts in a checkpoint (no buffer of anyone's)."""
    with torch.random.fork_rng(devices=[]):
        trainer = toy_trainer(GRPOTrainerWithoutBuffer, tempfile.mkdtemp())
        with paused():
            trainer.train()
    folder = os.path.join(trainer.args.output_dir, f"checkpoint-{SAVE_AT}")
    return (_losses(trainer), _weights(trainer.model),
            frozenset(os.listdir(folder)))


class _Outcome(str):
    """An outcome compared by its kind ("ValueError"), as a catalogued
    mistake's is (their words hold paths that differ), carrying the
    learner's own error for the line that reports it."""
    said = None


def _outcome(function):
    """'ok', or what the learner's code raised (its kind, and whether it
    refused the newer Trainer's keyword)."""
    result = attempt(function)
    if not isinstance(result, Raised):
        return "ok"
    error = result.error
    outcome = _Outcome(f"{type(error).__name__}: {FUTURE}"
                       if isinstance(error, TypeError) and FUTURE in str(
                           error) else type(error).__name__)
    outcome.said = describe_error(error)
    return outcome


def _said(outcome):
    """The learner's error in full ("ValueError: cannot resume: ..."): a
    line that says only "raised ValueError" hides what their code said."""
    return getattr(outcome, "said", None) or outcome


def _resume_facts(candidate):
    losses, weights, trainer_files = _uninterrupted()
    folder = tempfile.mkdtemp()
    first = toy_trainer(candidate, folder)
    first.add_callback(StopAfterSave())
    at_super = []
    with _newer_trainer(first, at_super):
        saving = _outcome(first.train)
    # the lesson's own mistake, whether or not the folder was there: any
    # file in it before the Trainer's save began was written too early
    early = next((files for files in at_super if files), None)
    yield "saved before super()", early, early is not None and said(
        BUFFER_CHECKPOINT_WORDS["problem.before super"],
        files=", ".join(early))
    # an error before the Trainer's save began, or after it had saved: only
    # the first is told to call super() first
    when = "after super()" if at_super else "before super()"
    failed = (BUFFER_CHECKPOINT_WORDS["problem.saving after super"] if at_super
              else BUFFER_CHECKPOINT_WORDS["problem.saving"])
    yield f"saving, as a newer Trainer calls it ({when})", saving, (
        saving != "ok" and (
            said(BUFFER_CHECKPOINT_WORDS["problem.kwargs"], name=FUTURE)
            if saving.endswith(FUTURE) else said(failed, error=_said(saving))))
    checkpoint = os.path.join(folder, f"checkpoint-{SAVE_AT}")
    added = len(set(os.listdir(checkpoint)) - trainer_files)
    yield "files your save added", added, added == 0 and said(
        BUFFER_CHECKPOINT_WORDS["problem.not saved"])
    saved = {"weights": _weights(first.model), "buffer": first._buffer,
             "step": first._step}
    second = toy_trainer(candidate, folder)
    loaded = _AtTrainBegin(second)
    second.add_callback(loaded)
    with _newer_trainer(second):
        resuming = _outcome(functools.partial(
            second.train, resume_from_checkpoint=checkpoint))
    # said always ("ok"): a property needs the reference's value to differ
    yield "resuming", resuming, (loaded.seen is None or resuming != "ok") and (
        said(BUFFER_CHECKPOINT_WORDS["problem.resuming"],
             error=_said(resuming)))
    back = {part: same(loaded.seen[part], saved[part]) for part in saved}
    yield "weights as saved", back["weights"], not back["weights"] and said(
        BUFFER_CHECKPOINT_WORDS["problem.weights"])
    yield "buffer as saved", back["buffer"], not back["buffer"] and said(
        BUFFER_CHECKPOINT_WORDS["problem.buffer"])
    step = loaded.seen["step"]
    yield "self._step after loading", step, not back["step"] and said(
        BUFFER_CHECKPOINT_WORDS["problem.step"], step=step,
        saved=saved["step"])
    exact = (_losses(second) == losses and all(
        torch.equal(value, weights[key])
        for key, value in second.model.state_dict().items()))
    yield "resumed run = uninterrupted run", exact, not exact and said(
        BUFFER_CHECKPOINT_WORDS["problem.not exact"])
    yield from _process_facts(second)
    yield from _refusal_facts(candidate, checkpoint, trainer_files)
    yield from _code_facts(candidate, checkpoint, trainer_files)


def _without_your_files(checkpoint, trainer_files):
    added = set(os.listdir(checkpoint)) - trainer_files
    for name in added:
        os.remove(os.path.join(checkpoint, name))
    return bool(added)


def _one_slice_more(checkpoint, trainer_files):
    """Your file's buffer with a slice more, as a run of another k saved
    it; False where no file holds a buffer of K slices under "buffer"."""
    changed = False
    for name in set(os.listdir(checkpoint)) - trainer_files:
        path = os.path.join(checkpoint, name)
        try:
            state = torch.load(path, weights_only=True)
        except Exception:  # not a torch file: not the buffer's
            continue
        buffer = state.get("buffer") if isinstance(state, dict) else None
        if isinstance(buffer, list) and len(buffer) == K:
            torch.save({**state, "buffer": buffer + buffer[:1]}, path)
            changed = True
    return changed


def _refusal_facts(candidate, checkpoint, trainer_files):
    """A checkpoint without your file, or with a buffer of another k, is
    refused before the Trainer loads its weights (not after, not at all)."""
    words = BUFFER_CHECKPOINT_WORDS
    problems = {"resumed": words["problem.resumed"],
                "after the weights": words["problem.after the weights"]}
    for case, case_words, breaks in (
            ("missing", words["case.missing"], _without_your_files),
            ("other k", words["case.other k"], _one_slice_more)):
        broken = os.path.join(tempfile.mkdtemp(), f"checkpoint-{SAVE_AT}")
        shutil.copytree(checkpoint, broken)
        if not breaks(broken, trainer_files):
            continue
        trainer = toy_trainer(candidate, tempfile.mkdtemp())
        before = _weights(trainer.model)
        with _newer_trainer(trainer):
            outcome = _outcome(functools.partial(
                trainer.train, resume_from_checkpoint=broken))
        verdict = ("resumed" if outcome == "ok" else "refused"
                   if same(_weights(trainer.model), before)
                   else "after the weights")
        yield f"resuming a checkpoint {case}", verdict, (
            verdict in problems and said(
                problems[verdict], case=said(case_words),
                error=_said(outcome)))


RAN = []  # a call of _ran_code each time a planted object was unpickled


def _ran_code():
    RAN.append(True)


class _RunsCode:
    """Unpickled, it calls _ran_code: a stand-in for the code a checkpoint
    from elsewhere (a shared folder, a download) could hold."""

    def __reduce__(self):
        return _ran_code, ()


def _code_facts(candidate, checkpoint, trainer_files):
    """A resume from a checkpoint whose buffer file also holds code must not
    run it: torch.load(path, weights_only=True) refuses such a file."""
    planted = os.path.join(tempfile.mkdtemp(), f"checkpoint-{SAVE_AT}")
    shutil.copytree(checkpoint, planted)
    changed = False
    for name in set(os.listdir(planted)) - trainer_files:
        path = os.path.join(planted, name)
        try:
            state = torch.load(path, weights_only=True)
        except Exception:  # not a torch file: not the buffer's
            continue
        if isinstance(state, dict):
            torch.save({**state, "note": _RunsCode()}, path)
            changed = True
    if not changed:
        return
    trainer = toy_trainer(candidate, tempfile.mkdtemp(), max_steps=SAVE_AT)
    RAN.clear()
    with _newer_trainer(trainer):
        _outcome(functools.partial(trainer.train,
                                   resume_from_checkpoint=planted))
    ran = bool(RAN)
    yield "a buffer file holding code, loaded", ran, ran and said(
        BUFFER_CHECKPOINT_WORDS["problem.ran code"])


def _process_facts(trainer):
    """Save as process 1 of 2, then as process 0, into one new folder:
    process 1 must write a file of its own, and process 0 must not write
    over it."""
    trainer.args.output_dir = tempfile.mkdtemp()
    folder = os.path.join(trainer.args.output_dir,
                          f"checkpoint-{trainer.state.global_step}")
    written = {}
    for index in (1, 0):
        trainer._step = 100 + index  # each process has its own state
        with _as_process(trainer, index), _newer_trainer(trainer):
            outcome = _outcome(functools.partial(
                trainer._save_checkpoint, trainer.model, None))
        if outcome != "ok":
            yield "saving as another process", outcome, said(
                BUFFER_CHECKPOINT_WORDS["problem.saving"],
                error=_said(outcome))
        written[index] = _files(folder) if os.path.isdir(folder) else {}
    # the Trainer's own file for process 1: its RNG state
    own = {name for name in written[1] if name != "rng_state_1.pth"}
    overwritten = sorted(name for name in own
                         if written[0].get(name) != written[1][name])
    verdict = ("overwritten" if overwritten else
               "own file" if own else "nothing")
    problem = {"overwritten": BUFFER_CHECKPOINT_WORDS["problem.overwritten"],
               "nothing": BUFFER_CHECKPOINT_WORDS["problem.nothing"]}
    yield "process 1's buffer file", verdict, verdict in problem and said(
        problem[verdict])


@exercise("buffer_checkpoint", words=BUFFER_CHECKPOINT_WORDS,
          stars=3, notebook=NOTEBOOK,
          kit_code=("kit.trainers.checkpoint:CheckpointMixin._save_checkpoint",
                    "kit.trainers.checkpoint:"
                    "CheckpointMixin._load_from_checkpoint",
                    "kit.trainers:GRPOTrainer.checkpoint_state",
                    "kit.trainers:GRPOTrainer.load_checkpoint_state"),
          answer=GRPOTrainer, solution=MyCheckpointedTrainer,
          method="_save_checkpoint",
          judge=lambda candidate, seen, expected: _judge(seen),
          mistakes=[
              Mistake("no_kwargs", NoKwargs, rung=1),
              Mistake("saved_before_super", SavedBeforeSuper, rung=2),
              Mistake("saved_before_super", MakesTheFolderFirst, rung=2),
              Mistake("buffer_not_saved", BufferNotSaved, rung=2),
              Mistake("super_not_called", SuperNotCalled, rung=3),
              Mistake("not_restored", NotRestored, rung=3),
              Mistake("step_not_restored", StepNotRestored, rung=3),
              Mistake("read_after_the_weights", ReadsAfterTheWeights,
                      rung=3),
              Mistake("same_file_everywhere", SameFileEverywhere, rung=2),
              Mistake("unpickles_anything", UnpicklesAnything, rung=3),
          ],
          # where the first problem came, when no mistake above fits: the
          # learner's own error is in the problem line
          properties=[
              Property("saving_fails", lambda name: name.startswith(
                  "saving, as a newer Trainer calls it"), rung=2),
              Property("resuming_fails", lambda name: name == "resuming",
                       rung=3),
              Property("resumed_differs", lambda name: name == (
                  "resumed run = uninterrupted run"), rung=3),
          ])
def observe_buffer_checkpoint(candidate):
    # the Trainer seeds torch: leave the notebook's random state as it was
    with torch.random.fork_rng(devices=[]):
        return attempt(lambda: first_problem(_resume_facts(candidate)))


def _judge(seen):
    judge_facts(seen, "the checkpoint")
    return said(BUFFER_CHECKPOINT_WORDS["judge.passed"])

"""Checkers for notebook 02: callbacks against subclassing."""

import pprint
import tempfile

from transformers import (TrainerCallback, TrainerControl, TrainerState,
                          TrainingArguments)

from kit import recipes
from kit.checks.compare import Mismatch, Raised, attempt, describe_error
from kit.checks.core import Mistake, exercise, paused, unpaused
from kit.checks.messages import MESSAGES
from kit.i18n import text

NOTEBOOK = "02_callbacks_vs_subclassing"


class StopAtLoss(TrainerCallback):
    """Stop training once the logged training loss falls below `target`."""

    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")  # eval and summary logs have none
        if loss is not None and loss < self.target:
            control.should_training_stop = True
        return control


class ReadsLossOnEveryLog(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs["loss"] < self.target:
            control.should_training_stop = True
        return control


class MissingLossAsZero(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs.get("loss", 0) < self.target:  # an eval log reads as 0
            control.should_training_stop = True
        return control


class StopsTheEpoch(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")
        if loss is not None and loss < self.target:
            control.should_epoch_stop = True
        return control


# what a run logs: training, evaluation, training, and the final summary
LOGS = [{"loss": 2.5}, {"eval_loss": 0.5},
        {"loss": 1.2, "learning_rate": 1e-3}, {"loss": 0.8},
        {"train_runtime": 3.0, "train_loss": 0.9}]


def _flags(callback, log):
    """(should_training_stop, should_epoch_stop) after one fresh on_log.

    The state is as the Trainer leaves it: the logs so far in its
    log_history, this one last (with its step), so that an answer reading
    `state.log_history[-1]` reads what `logs` holds."""
    control = TrainerControl()
    args = TrainingArguments(tempfile.mkdtemp(), report_to="none")
    state = TrainerState()
    state.log_history = [dict(before, step=step) for step, before in
                         enumerate(LOGS[:LOGS.index(log) + 1])]
    returned = callback.on_log(args, state, control, logs=dict(log))
    control = returned if isinstance(returned, TrainerControl) else control
    return bool(control.should_training_stop), bool(control.should_epoch_stop)


class OnTheClock(TrainerCallback):
    """The learner's callback inside the kit's real training: the clock
    paused for the training runs again for each of its events, and an
    endless one is named ("StopAtLoss.on_log")."""

    def __init__(self, callback):
        self.callback = callback

    def __getattribute__(self, name):
        if not name.startswith("on_"):
            return object.__getattribute__(self, name)
        callback = object.__getattribute__(self, "callback")
        method = getattr(callback, name)
        where = f"{type(callback).__name__}.{name}"

        def on_the_clock(*args, **kwargs):
            with unpaused(where):
                return method(*args, **kwargs)
        return on_the_clock


@exercise("stop_callback", stars=1, notebook=NOTEBOOK, answer=StopAtLoss,
          symptoms={"crash": 2}, mistakes=[
              Mistake("loss_on_eval_log", ReadsLossOnEveryLog, rung=2),
              Mistake("missing_loss_as_zero", MissingLossAsZero, rung=2),
              Mistake("should_epoch_stop", StopsTheEpoch, rung=3),
          ], judge=lambda candidate, seen, expected: _judge_stop(
              candidate, seen, expected))
def observe_stop_callback(candidate):
    callback = attempt(candidate, target=1.0)
    if isinstance(callback, Raised):
        raise Mismatch(text(MESSAGES, "stop_callback.judge.init",
                            name=candidate.__name__,
                            error=describe_error(callback.error)),
                       symptom="crash")
    return {str(log): attempt(_flags, callback, log) for log in LOGS}


def _judge_stop(candidate, seen, expected):
    for log, wanted in expected.items():
        flags = seen[log]
        if isinstance(flags, Raised):
            error = flags.error
            raise Mismatch(text(MESSAGES, "stop_callback.judge.raised",
                                log=log, error=describe_error(error)),
                           symptom="crash")
        if flags[1] and not wanted[1]:
            raise Mismatch(text(MESSAGES, "stop_callback.judge.epoch",
                                log=log))
        if flags[0] != wanted[0]:
            what = "stopped" if flags[0] else "kept going"
            raise Mismatch(text(MESSAGES, f"stop_callback.judge.{what}",
                                log=log))
    # And in a real run: a fresh model's loss falls below 2.0 in ~20 steps.
    # The clock stops: on_log ran under it above, the training is ours.
    with paused():
        trainer = recipes.sft_trainer("cpu", output_dir=tempfile.mkdtemp(),
                                      max_steps=200, logging_steps=5,
                                      disable_tqdm=True)
        trainer.add_callback(OnTheClock(candidate(target=2.0)))
        recipes.quiet(trainer).train()
    stopped_at = trainer.state.global_step
    if stopped_at >= 200:
        raise Mismatch(text(MESSAGES, "stop_callback.judge.never"))
    return text(MESSAGES, "stop_callback.judge.passed", step=stopped_at)


REQUESTS = {
    "Print the learning rate every 50 steps": "callback",
    "Stop when the eval loss has not improved for 3 evaluations": "callback",
    "Save a few generated samples at every evaluation": "callback",
    "Draw a live plot of the loss": "callback",
    "Weigh each token's loss by how rare the token is": "subclass",
    "Serve each prompt G times in a row to the model": "subclass",
    "Compute DPO's loss from chosen and rejected log-probs": "subclass",
    "Skip the optimizer step when the gradients hold a NaN": "subclass",
}
WHY = {
    "callback": "a callback watches the loop at fixed moments (on_log, "
                "on_evaluate, ...) and can stop it, but cannot change what "
                "is computed",
    "subclass": "changing what is computed (the loss, the batches, the step) "
                "needs an overridden Trainer method",
}


UNTOUCHED = ("?", "callback or subclass?")  # the stub's values


def _read(answer):
    """'Callback ', 'SUBCLASS' -> 'callback', 'subclass'; else as given."""
    return answer.strip().lower() if isinstance(answer, str) else answer


def _judge_requests(candidate, seen, expected):
    answers = {r: _read(candidate.get(r)) for r in REQUESTS}
    if all(a is None or a in UNTOUCHED for a in answers.values()):
        raise NotImplementedError
    undecided = [r for r, a in answers.items()
                 if a not in ("callback", "subclass")]
    if undecided:
        first = undecided[0]
        raise Mismatch(text(MESSAGES, "callback_or_subclass.judge.undecided",
                            count=len(undecided), first=first,
                            yours=candidate.get(first)))
    wrong = [r for r, answer in REQUESTS.items() if answers[r] != answer]
    if wrong:
        first = wrong[0]
        answer = REQUESTS[first]
        raise Mismatch(text(MESSAGES, "callback_or_subclass.judge.wrong",
                            count=len(wrong), of=len(REQUESTS), first=first,
                            answer=answer, why=WHY[answer]))
    return text(MESSAGES, "callback_or_subclass.judge.passed",
                count=len(REQUESTS))


@exercise("callback_or_subclass", stars=2, notebook=NOTEBOOK,
          answer=REQUESTS, judge=_judge_requests,
          solution="answers = " + pprint.pformat(REQUESTS, width=79,
                                                 sort_dicts=False))
def observe_requests(candidate):
    return {}

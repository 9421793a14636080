"""Checkers for notebook 02: callbacks against subclassing."""

import json
import tempfile

from transformers import (TrainerCallback, TrainerControl, TrainerState,
                          TrainingArguments)

from kit import recipes
from kit.checks.compare import Mismatch, Raised, attempt, describe_error
from kit.checks.core import Mistake, Property, exercise, paused, unpaused
from kit.i18n import said

NOTEBOOK = "02_callbacks_vs_subclassing"


class StopAtLoss(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")
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
    with paused():  # the kit's setup is not the learner's time (on a busy
        # machine, five TrainingArguments outlasted a 3 s limit)
        control = TrainerControl()
        args = TrainingArguments(tempfile.mkdtemp(), report_to="none")
        state = TrainerState()
        state.log_history = [dict(before, step=step) for step, before in
                             enumerate(LOGS[:LOGS.index(log) + 1])]
    returned = callback.on_log(args, state, control, logs=dict(log))
    _returns_control(returned, f"{type(callback).__name__}.on_log")
    control = returned if isinstance(returned, TrainerControl) else control
    return bool(control.should_training_stop), bool(control.should_epoch_stop)


def _returns_control(returned, where):
    """The Trainer takes what an event returns as its control, unless it is
    None: anything else (args, state, True) breaks the run in the
    Trainer's own code, far from the learner's line. Say it here."""
    if returned is not None and not isinstance(returned, TrainerControl):
        raise Mismatch(said(STOP_CALLBACK_WORDS["judge.returned"],
                            where=where, kind=type(returned).__name__))


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
                returned = method(*args, **kwargs)
            _returns_control(returned, where)
            return returned
        return on_the_clock


# What stop_callback's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint), its judge's lines.
STOP_CALLBACK_WORDS = {
    "hints": {
        "en": ["Override on_log(self, args, state, control, logs=None, "
               "**kwargs): the Trainer calls it with each log, a dict of "
               "numbers.",
               "Not every log has a 'loss' (evaluation logs, the final "
               "summary): read it with logs.get('loss') and skip the log "
               "when it is None, rather than reading a missing loss as 0.",
               "Set control.should_training_stop = True (should_epoch_stop "
               "only ends the epoch) once the loss is below the target, and "
               "return control."],
        "ja": ["on_log(self, args, state, control, logs=None, **kwargs) をオ"
               "ーバーライドしてください: Trainer はログ (数の dict) ごとにこ"
               "れを呼びます。",
               "すべてのログに 'loss' があるわけではありません (評価のログ、"
               "最後のまとめ): logs.get('loss') で読み、None ならそのログを飛"
               "ばしてください。ない損失を 0 と読まないでください。",
               "損失が目標を下回ったら control.should_training_stop = True "
               "にして (should_epoch_stop はエポックを終えるだけで"
               "す)、control を返してください。"]},
    "loss_on_eval_log": {
        "en": ("logs[\"loss\"] on an eval log",
               "evaluation logs and the final summary have no 'loss' key, so "
               "the callback crashes the run",
               "read it with logs.get('loss') and skip the log when it is "
               "None"),
        "ja": ("評価のログで logs[\"loss\"]",
               "評価のログと最後のまとめには 'loss' キーがないので、コールバ"
               "ックが実行を落とします",
               "logs.get('loss') で読み、None ならそのログを飛ばしてくださ"
               "い")},
    "missing_loss_as_zero": {
        "en": ("a missing loss read as 0",
               "logs.get('loss', 0) makes an evaluation log look like a loss "
               "of 0, so training stops at the first evaluation",
               "logs.get('loss') and skip the log when it is None"),
        "ja": ("ない損失を 0 と読んだ",
               "logs.get('loss', 0) では評価のログが損失 0 に見えるので、最初"
               "の評価で学習が止まります",
               "logs.get('loss') とし、None ならそのログを飛ばしてください")},
    "should_epoch_stop": {
        "en": ("should_epoch_stop",
               "that flag only ends the current epoch; training goes on",
               "set control.should_training_stop = True"),
        "ja": ("should_epoch_stop",
               "このフラグは今のエポックを終えるだけで、学習は続きます",
               "control.should_training_stop = True にしてください")},
    "property:logs_without_loss": {
        "en": ("a log without 'loss'",
               "right on the training logs, wrong on the evaluation log and "
               "the final summary, which hold no 'loss'"),
        "ja": ("'loss' のないログ",
               "学習のログでは正しく、'loss' を含まない評価のログと最後のまとめ"
               "で違います")},
    "property:log_below_the_target": {
        "en": ("the log below the target",
               "right while the loss stays above the target, wrong at the "
               "log whose loss (0.8) falls below it (1.0): that is where "
               "training must be told to stop"),
        "ja": ("目標を下回るログ",
               "損失が目標を上回るあいだは正しく、損失 (0.8) が目標 (1.0) を下"
               "回るログで違います。そこで学習に停止を伝えます")},
    "property:logs_above_the_target": {
        "en": ("logs above the target",
               "right where the loss falls below the target, wrong on logs "
               "whose loss (2.5, 1.2) is still above it: stop only once "
               "loss < target"),
        "ja": ("目標を上回るログ",
               "損失が目標を下回るログでは正しく、損失 (2.5、1.2) がまだ上回る"
               "ログで違います: loss < target になってから止めます")},
    "property:training_logs": {
        "en": ("the training logs",
               "right on the logs without a loss, wrong on the training "
               "logs: stop exactly where loss < target"),
        "ja": ("学習のログ",
               "損失のないログでは正しく、学習のログで違います: loss < target "
               "のところでだけ止めます")},
    "judge.returned": {
        "en": "{where} returned a {kind}: return control (or nothing) — "
              "the Trainer takes what an event returns as its control",
        "ja": "{where} が {kind} を返しました。control を返すか、何も返さない"
              "でください。Trainer はイベントが返したものを control として"
              "使います"},
    "judge.init": {
        "en": "{name}(target=1.0) raised {error}: keep __init__(self, target)",
        "ja": "{name}(target=1.0) が {error} を送出しました: __init__(self, "
              "target) のままにしてください"},
    "judge.raised": {
        "en": "on the log {log} your callback raised {error}",
        "ja": "ログ {log} であなたのコールバックが {error} を送出しました"},
    "judge.epoch": {
        "en": "after the log {log} it set should_epoch_stop: that does not "
              "stop training",
        "ja": "ログ {log} のあと should_epoch_stop を設定しました。これでは"
              "学習は止まりません"},
    "judge.stopped": {
        "en": "with target 1.0 it stopped after the log {log}",
        "ja": "target 1.0 で、ログ {log} のあと止まりました"},
    "judge.kept going": {
        "en": "with target 1.0 it kept going after the log {log}",
        "ja": "target 1.0 で、ログ {log} のあとも続きました"},
    "judge.never": {
        "en": "in a real run the callback never stopped training",
        "ja": "実際の実行で、コールバックは一度も学習を止めませんでした"},
    "judge.passed": {
        "en": "stops a real run at step {step} of 200",
        "ja": "実際の実行を 200 ステップ中 {step} ステップ目で止めます"},
}


@exercise("stop_callback", words=STOP_CALLBACK_WORDS,
          stars=1, notebook=NOTEBOOK, answer=StopAtLoss,
          symptoms={"crash": 2}, properties=[
              Property("logs_without_loss", lambda log: "'loss'" not in log,
                       rung=2),
              Property("log_below_the_target", "{'loss': 0.8}", rung=3),
              Property("logs_above_the_target", lambda log: any(
                  loss in log for loss in ("'loss': 2.5", "'loss': 1.2")),
                       rung=3),
              Property("training_logs", "'loss'", rung=3),
          ], mistakes=[
              Mistake("loss_on_eval_log", ReadsLossOnEveryLog, rung=2),
              Mistake("missing_loss_as_zero", MissingLossAsZero, rung=2),
              Mistake("should_epoch_stop", StopsTheEpoch, rung=3),
          ], judge=lambda candidate, seen, expected: _judge_stop(
              candidate, seen, expected))
def observe_stop_callback(candidate):
    callback = attempt(candidate, target=1.0)
    if isinstance(callback, Raised):
        raise Mismatch(said(STOP_CALLBACK_WORDS["judge.init"],
                            name=candidate.__name__,
                            error=describe_error(callback.error)),
                       symptom="crash")
    return {str(log): attempt(_flags, callback, log) for log in LOGS}


def _judge_stop(candidate, seen, expected):
    for log, wanted in expected.items():
        flags = seen[log]
        if isinstance(flags, Raised):
            error = flags.error
            raise Mismatch(said(STOP_CALLBACK_WORDS["judge.raised"],
                                log=log, error=describe_error(error)),
                           symptom="crash")
        if flags[1] and not wanted[1]:
            raise Mismatch(said(STOP_CALLBACK_WORDS["judge.epoch"],
                                log=log))
        if flags[0] != wanted[0]:
            line = (STOP_CALLBACK_WORDS["judge.stopped"] if flags[0]
                    else STOP_CALLBACK_WORDS["judge.kept going"])
            raise Mismatch(said(line, log=log))
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
        raise Mismatch(said(STOP_CALLBACK_WORDS["judge.never"]))
    return said(STOP_CALLBACK_WORDS["judge.passed"], step=stopped_at)


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
        raise Mismatch(said(CALLBACK_OR_SUBCLASS_WORDS["judge.undecided"],
                            count=len(undecided), first=first,
                            yours=candidate.get(first)))
    wrong = [r for r, answer in REQUESTS.items() if answers[r] != answer]
    if wrong:
        first = wrong[0]
        answer = REQUESTS[first]
        raise Mismatch(said(CALLBACK_OR_SUBCLASS_WORDS["judge.wrong"],
                            count=len(wrong), of=len(REQUESTS), first=first,
                            answer=answer, why=WHY[answer]))
    return said(CALLBACK_OR_SUBCLASS_WORDS["judge.passed"],
                count=len(REQUESTS))


# What callback_or_subclass's checker says, English beside Japanese: its hint
# ladder (gentlest first), its stub line, each mistake's (title, why, hint),
# its judge's lines.
CALLBACK_OR_SUBCLASS_WORDS = {
    "hints": {
        "en": ["Ask: does the request only need to *see* the loop (when), or "
               "must it change *what* the loop computes?",
               "Callbacks get the state and may set control flags; they "
               "never see the loss tensor or the batch before it is used."],
        "ja": ["こう問いましょう：その依頼はループ (いつ) を *見る* だけでよ"
               "いのか、ループが *何を* 計算するかを変えなければならないのか?",
               "コールバックは状態を受け取り、制御フラグを設定できます。損"
               "失のテンソルや、使われる前のバッチを見ることはありません。"]},
    "stub": {
        "en": "answer each request with 'callback' or 'subclass' in place of "
              "its '?'",
        "ja": "各依頼の '?' を 'callback' か 'subclass' で答えてください"},
    "judge.undecided": {
        "en": "{count} requests still undecided, e.g. {first!r} (yours: "
              "{yours!r}): answer 'callback' or 'subclass'",
        "ja": "{count} 件の依頼にまだ答えていません。例: {first!r} (あなたの答"
              "え: {yours!r}): 'callback' か 'subclass' で答えてください"},
    "judge.wrong": {
        "en": "{count} of {of} wrong, e.g. {first!r} is a {answer}: {why}",
        "ja": "{of} 件中 {count} 件が誤りです。例: {first!r} は {answer} で"
              "す: {why}"},
    "property:when_as_what": {
        "en": ("a 'when' taken for a 'what'",
               "a request that only watches the loop was answered "
               "'subclass'"),
        "ja": ("「いつ」を「何を」と取り違え",
               "ループを見るだけの依頼に 'subclass' と答えています")},
    "property:what_as_when": {
        "en": ("a 'what' taken for a 'when'",
               "a request that changes what is computed was answered "
               "'callback'"),
        "ja": ("「何を」を「いつ」と取り違え",
               "計算するものを変える依頼に 'callback' と答えています")},
    "judge.passed": {
        "en": "all {count} requests placed",
        "ja": "{count} 件の依頼すべてを正しく振り分けました"},
}


class PlacedAs(Property):
    """Every request answered wrong is a `where` request ("callback" or
    "subclass") answered as the other kind: the idea of that kind is what
    is missing. An undecided answer ("?", "maybe") is not this."""

    def fits(self, seen, expected, differs, stopped=False):
        return bool(differs) and all(
            expected.get(name) == self.where and seen.get(name) in WHY
            for name in differs)


@exercise("callback_or_subclass", words=CALLBACK_OR_SUBCLASS_WORDS,
          stars=2, notebook=NOTEBOOK,
          answer=REQUESTS, judge=_judge_requests,
          properties=[PlacedAs("when_as_what", "callback", rung=1),
                      PlacedAs("what_as_when", "subclass", rung=2)],
          # laid out as the notebook's cell is (a test holds it)
          solution="answers = {\n" + "".join(
              f"    {json.dumps(request)}: {json.dumps(answer)},\n"
              for request, answer in REQUESTS.items()) + "}")
def observe_requests(candidate):
    """Each request's answer as read, and the judge's line when one is
    wrong: a property below then says which kind was misplaced."""
    seen = {r: _read(candidate.get(r)) for r in REQUESTS}
    try:
        _judge_requests(candidate, seen, REQUESTS)
    except Mismatch as wrong:
        seen["problem"] = str(wrong)
    except NotImplementedError:
        pass  # untouched: the judge says so again
    return seen


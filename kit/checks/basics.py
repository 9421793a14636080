"""Checkers for notebooks 01 (the stock loss) and 02 (callbacks)."""

import tempfile

import torch
from transformers import (DataCollatorForSeq2Seq, TrainerCallback,
                          TrainerControl, TrainerState, TrainingArguments)

from kit import losses, recipes, tasks
from kit.checks.core import Mismatch, compare, exercise
from kit.models import tiny_model
from kit.trainers.sft import CausalLMTrainer

# ------------------------------------------------------------- notebook 01


def _lm_case(seed, batch=3, length=7, vocab=11):
    """Random logits and labels with a masked prompt and some padding."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, length, vocab, generator=g)
    labels = torch.randint(0, vocab, (batch, length), generator=g)
    labels[:, :3] = -100  # the prompt
    labels[0, -2:] = -100  # padding at the end of a shorter row
    return logits, labels


@exercise("causal_lm_loss", stars=1, notebook="01_stock_compute_loss",
          reference=losses.causal_lm_loss, hints=[
              "Position t predicts token t+1: drop the last position of the "
              "logits and the first of the labels.",
              "F.cross_entropy wants (N, V) scores and (N,) targets: flatten "
              "both with .reshape(-1, V) and .reshape(-1).",
              "ignore_index=-100 skips prompt and padding, and the default "
              "reduction='mean' averages over the tokens that are left.",
          ])
def grade_causal_lm_loss(candidate):
    verdicts = []
    for seed in (0, 1):
        logits, labels = _lm_case(seed)
        expected = losses.causal_lm_loss(logits, labels)
        actual = candidate(logits.clone(), labels.clone())
        if isinstance(actual, torch.Tensor) and actual.dim() > 0:
            raise Mismatch(f"the loss should be one number (a 0-d tensor), "
                           f"got shape {tuple(actual.shape)}")
        verdicts.append(compare("loss", actual, expected))
    return f"{verdicts[0]} on random logits, prompt and padding masked"


def _trainer_and_batch(trainer_class):
    tokenizer = tasks.make_tokenizer()
    model = tiny_model("cpu", seed=0, tokenizer=tokenizer)
    args = TrainingArguments(tempfile.mkdtemp(), report_to="none",
                             use_cpu=True, disable_tqdm=True)
    trainer = trainer_class(model=model, args=args, processing_class=tokenizer)
    rows = tasks.sft_dataset("train", n=4, seed=7).map(
        recipes.sft_features(tokenizer),
        remove_columns=["prompt", "completion"])
    batch = DataCollatorForSeq2Seq(tokenizer, padding=True)(list(rows))
    return trainer, model, dict(batch)


@exercise("compute_loss", stars=2, notebook="01_stock_compute_loss",
          reference=CausalLMTrainer.compute_loss, hints=[
              "Take the labels out of `inputs` (inputs.pop('labels')), run "
              "model(**inputs) and give outputs.logits to your loss.",
              "Return just the loss, or (loss, outputs) when return_outputs "
              "is True: evaluation asks for both.",
          ])
def grade_compute_loss(candidate):
    trainer, model, batch = _trainer_and_batch(candidate)
    with torch.no_grad():
        expected = model(**batch).loss
        loss = trainer.compute_loss(model, dict(batch))
        if isinstance(loss, tuple):
            raise Mismatch("with return_outputs=False, return the loss alone, "
                           "not a tuple")
        verdict = compare("loss", loss, expected)
        both = trainer.compute_loss(model, dict(batch), return_outputs=True)
    if not (isinstance(both, tuple) and len(both) == 2):
        raise Mismatch("with return_outputs=True, return (loss, outputs)")
    if getattr(both[1], "logits", None) is None:
        raise Mismatch("the second item should be the model's outputs, "
                       "with .logits")
    compare("loss (return_outputs=True)", both[0], expected)
    return f"{verdict} against the model's own loss"


# ------------------------------------------------------------- notebook 02


class StopAtLoss(TrainerCallback):
    """Stop training once the logged training loss falls below `target`."""

    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")  # eval and summary logs have none
        if loss is not None and loss < self.target:
            control.should_training_stop = True
        return control


@exercise("stop_callback", stars=1, notebook="02_callbacks_vs_subclassing",
          reference=StopAtLoss, hints=[
              "Override on_log(self, args, state, control, logs=None, "
              "**kwargs); the training loss is logs['loss'].",
              "Not every log has a 'loss' (evaluation, the final summary): "
              "use logs.get('loss').",
              "Set control.should_training_stop = True once the loss is "
              "below the target, and return control.",
          ])
def grade_stop_callback(candidate):
    callback = candidate(target=1.0)
    state, control = TrainerState(), TrainerControl()
    args = TrainingArguments(tempfile.mkdtemp(), report_to="none")
    logs = [({"loss": 2.5}, False), ({"eval_loss": 0.5}, False),
            ({"loss": 1.2, "learning_rate": 1e-3}, False),
            ({"loss": 0.8}, True)]
    for log, should_stop in logs:
        returned = callback.on_log(args, state, control, logs=log)
        control = returned if returned is not None else control
        if bool(control.should_training_stop) != should_stop:
            when = "stopped" if control.should_training_stop else "kept going"
            raise Mismatch(f"with target 1.0 it {when} after the log {log}")
    # And in a real run: a fresh model's loss falls below 2.0 in ~20 steps.
    trainer = recipes.sft_trainer("cpu", output_dir=tempfile.mkdtemp(),
                                  max_steps=200, logging_steps=5,
                                  disable_tqdm=True)
    trainer.add_callback(candidate(target=2.0))
    recipes.quiet(trainer).train()
    stopped_at = trainer.state.global_step
    if stopped_at >= 200:
        raise Mismatch("in a real run the callback never stopped training")
    return f"stops a real run at step {stopped_at} of 200"


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


@exercise("callback_or_subclass", stars=2,
          notebook="02_callbacks_vs_subclassing", reference=REQUESTS, hints=[
              "Ask: does the request only need to *see* the loop (when), or "
              "must it change *what* the loop computes?",
              "Callbacks get the state and may set control flags; they never "
              "see the loss tensor or the batch before it is used.",
          ])
def grade_callback_or_subclass(candidate):
    undecided = [r for r in REQUESTS
                 if candidate.get(r) not in ("callback", "subclass")]
    if len(undecided) == len(REQUESTS):
        raise NotImplementedError
    if undecided:
        raise Mismatch(f"{len(undecided)} requests still undecided, e.g. "
                       f"{undecided[0]!r}: answer 'callback' or 'subclass'")
    wrong = [r for r, answer in REQUESTS.items() if candidate[r] != answer]
    if wrong:
        first = wrong[0]
        answer = REQUESTS[first]
        raise Mismatch(f"{len(wrong)} of {len(REQUESTS)} wrong, e.g. "
                       f"{first!r} is a {answer}: {WHY[answer]}")
    return f"all {len(REQUESTS)} requests placed"

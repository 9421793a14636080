"""Checkers for notebook 01 (the stock loss) and its catalogue of mistakes."""

import tempfile

import torch
import torch.nn.functional as F
from transformers import DataCollatorForSeq2Seq, Trainer, TrainingArguments

from kit import losses, recipes, tasks
from kit.checks.compare import Mismatch, Raised, attempt, call, compare
from kit.checks.core import Mistake, exercise, paused
from kit.models import tiny_model

NOTEBOOK = "01_stock_compute_loss"

# ------------------------------------------------------------ causal_lm_loss
# Each mistake is a wrong answer written as a learner writes it.


def not_shifted(logits, labels):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
                           ignore_index=-100)


def shifted_wrong_way(logits, labels):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, 1:].reshape(-1, V),
                           labels[:, :-1].reshape(-1), ignore_index=-100)


def minus_100_counted(logits, labels):
    logprobs = logits[:, :-1].log_softmax(-1)  # (B, T-1, V)
    mask = (labels[:, 1:] != -100).float()
    targets = labels[:, 1:].clamp(min=0)  # -100 would not index
    token = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return -(token * mask).sum() / mask.numel()  # every position counted


def per_sequence_mean(logits, labels):
    per_token = F.cross_entropy(logits[:, :-1].transpose(1, 2),
                                labels[:, 1:], reduction="none")  # (B, T-1)
    mask = (labels[:, 1:] != -100).float()
    return ((per_token * mask).sum(1) / mask.sum(1)).mean()


def sum_not_divided(logits, labels):
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V),
                           labels[:, 1:].reshape(-1), ignore_index=-100,
                           reduction="sum")


def _lm_case(seed, batch=3, length=7, vocab=11):
    """Random logits and labels with a masked prompt and some padding."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, length, vocab, generator=g)
    labels = torch.randint(0, vocab, (batch, length), generator=g)
    labels[:, :3] = -100  # the prompt
    labels[0, -2:] = -100  # padding at the end of a shorter row
    return logits, labels


@exercise("causal_lm_loss", stars=1, notebook=NOTEBOOK,
          answer=losses.causal_lm_loss, hints=[
              "Position t predicts token t+1: drop the last position of the "
              "logits and the first of the labels.",
              "F.cross_entropy wants (N, V) scores and (N,) targets: flatten "
              "both with .reshape(-1, V) and .reshape(-1).",
              "ignore_index=-100 skips prompt and padding, and the default "
              "reduction='mean' averages over the tokens that are left.",
          ], mistakes=[
              Mistake("not_shifted", "not shifted", "position t must predict "
                      "token t+1, so drop the last logit and the first label",
                      "compare logits[:, :-1] with labels[:, 1:]",
                      not_shifted),
              Mistake("shifted_wrong_way", "shifted the wrong way",
                      "logits[:, 1:] against labels[:, :-1] asks each "
                      "position for the token *before* it",
                      "drop the *last* logit and the *first* label: "
                      "logits[:, :-1], labels[:, 1:]", shifted_wrong_way),
              Mistake("minus_100_counted", "-100 counted", "prompt and "
                      "padding positions count in the mean, so the loss is "
                      "too small", "average over labelled tokens only: "
                      "ignore_index=-100 does it", minus_100_counted),
              Mistake("per_sequence_mean", "per-sequence mean", "a mean per "
                      "row, then over rows, gives a short answer's tokens "
                      "more weight than a long one's",
                      "one mean over all labelled tokens of the batch: "
                      "flatten first, then F.cross_entropy",
                      per_sequence_mean),
              Mistake("sum_not_divided", "sum without dividing", "a sum "
                      "grows with the number of tokens: the loss should be a "
                      "mean", "keep F.cross_entropy's default "
                      "reduction='mean'", sum_not_divided),
          ])
def observe_causal_lm_loss(candidate):
    seen = {}
    for seed in (0, 1):
        logits, labels = _lm_case(seed)
        seen[f"loss (case {seed})"] = attempt(call, candidate, dict(
            logits=logits, labels=labels))
    return seen


# ------------------------------------------------------------- compute_loss
# The mistakes call the kit's causal_lm_loss: only the override is wrong.


class AlwaysTuple(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        return losses.causal_lm_loss(outputs.logits, labels), outputs


class IgnoresReturnOutputs(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        return losses.causal_lm_loss(outputs.logits, labels)


class DividesByNone(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        V = outputs.logits.shape[-1]
        loss = F.cross_entropy(outputs.logits[:, :-1].reshape(-1, V),
                               labels[:, 1:].reshape(-1), reduction="sum")
        loss = loss / num_items_in_batch
        return (loss, outputs) if return_outputs else loss


class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")  # we compute the loss, not the model
        outputs = model(**inputs)
        loss = causal_lm_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


causal_lm_loss = losses.causal_lm_loss  # what MyTrainer calls, here


@paused()
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


def _shape(returned):
    """What compute_loss returned, reduced to what the Trainer relies on."""
    if isinstance(returned, tuple):
        outputs = returned[1] if len(returned) > 1 else None
        return ("tuple", len(returned), _shape(returned[0]),
                getattr(outputs, "logits", None) is not None)
    if isinstance(returned, torch.Tensor):
        return returned.detach()
    return returned


@exercise("compute_loss", stars=2, notebook=NOTEBOOK, answer=MyTrainer,
          solution=MyTrainer, method="compute_loss",
          uses=[("causal_lm_loss", "causal_lm_loss", losses.causal_lm_loss)],
          hints=[
              "Take the labels out of `inputs` (inputs.pop('labels')), run "
              "model(**inputs) and give outputs.logits to your loss.",
              "Return just the loss, or (loss, outputs) when return_outputs "
              "is True: evaluation asks for both.",
          ], mistakes=[
              Mistake("always_tuple", "always a tuple", "training calls "
                      "compute_loss with return_outputs=False and wants the "
                      "loss alone", "return (loss, outputs) if "
                      "return_outputs else loss", AlwaysTuple),
              Mistake("ignores_return_outputs", "ignores return_outputs",
                      "evaluate() asks for (loss, outputs) with "
                      "return_outputs=True", "return (loss, outputs) if "
                      "return_outputs else loss", IgnoresReturnOutputs),
              Mistake("divides_by_none", "divides by a None "
                      "num_items_in_batch", "evaluation (and any call "
                      "outside training) passes num_items_in_batch=None",
                      "divide by num_items_in_batch only when it is given; "
                      "else take the mean", DividesByNone),
          ], judge=lambda candidate, seen, expected: _judge_compute_loss(
              seen, expected))
def observe_compute_loss(candidate):
    trainer, model, batch = _trainer_and_batch(candidate)
    tokens = int((batch["labels"][:, 1:] != -100).sum())
    with torch.no_grad():
        return {
            "the model's own loss": model(**batch).loss,
            "loss": _shape(attempt(trainer.compute_loss, model, dict(batch))),
            "loss with num_items_in_batch": _shape(attempt(
                trainer.compute_loss, model, dict(batch),
                num_items_in_batch=tokens)),
            "return_outputs=True": _shape(attempt(
                trainer.compute_loss, model, dict(batch),
                return_outputs=True)),
        }


def _judge_compute_loss(seen, expected):
    wanted = seen["the model's own loss"]
    for name in ("loss", "loss with num_items_in_batch"):
        if isinstance(seen[name], tuple):
            raise Mismatch(f"with return_outputs=False, return the loss "
                           f"alone, not a tuple ({name})")
        verdict = compare(name, seen[name], wanted)
    both = seen["return_outputs=True"]
    if isinstance(both, Raised):
        compare("loss (return_outputs=True)", both, wanted)
    if not (isinstance(both, tuple) and both[1] == 2):
        raise Mismatch("with return_outputs=True, return (loss, outputs)")
    if not both[3]:
        raise Mismatch("the second item should be the model's outputs, "
                       "with .logits")
    compare("loss (return_outputs=True)", both[2], wanted)
    return f"{verdict} against the model's own loss"

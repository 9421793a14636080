"""Checkers for notebook 01 (the stock loss) and its catalogue of mistakes."""

import functools
import tempfile

import torch
import torch.nn.functional as F
from transformers import DataCollatorForSeq2Seq, Trainer, TrainingArguments

from kit import losses, recipes, tasks
from kit.checks.compare import (Mismatch, Raised, attempt, call, compare,
                                describe_error, gradient, graph_leaves)
from kit.checks.core import EXERCISES, Mistake, exercise, paused
from kit.checks.messages import MESSAGES
from kit.gradients import split
from kit.i18n import text
from kit.models import tiny_model
from kit.trainers import CausalLMTrainer

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


def minus_100_as_token_0(logits, labels):
    targets = labels[:, 1:].clamp(min=0)  # -100 becomes token 0
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), targets.reshape(-1))


def detached_loss(logits, labels):
    with torch.no_grad():  # or .detach(), .item(): the gradient is cut
        return losses.causal_lm_loss(logits, labels)


# The cases vary what the loss must respect: batch, length, vocabulary, and
# rows with their own prompt and padding lengths, so that token counts differ
# (a per-row mean or a divided-by-the-wrong-count shows as a different
# factor in each case, not one constant). The last has rows with no prompt:
# a labelled first position, which no position predicts (a shift by
# torch.roll wraps it around to the end; a count of the unshifted labels
# counts it).
CASES = [(3, 7, 11, [3, 2, 4], [0, 2, 0]), (2, 9, 5, [1, 4], [3, 0]),
         (4, 6, 13, [2, 2, 3, 1], [0, 1, 0, 2]),
         (3, 8, 7, [0, 2, 0], [0, 0, 2])]


def _lm_case(seed, batch, length, vocab, prompts, padding):
    """Random logits (with a gradient) and labels with masked prompts and
    padding."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(batch, length, vocab, generator=g)
    labels = torch.randint(0, vocab, (batch, length), generator=g)
    for row, (prompt, pad) in enumerate(zip(prompts, padding)):
        labels[row, :prompt] = -100  # the prompt
        labels[row, length - pad:] = -100  # padding after a shorter answer
    return logits.requires_grad_(), labels


@exercise("causal_lm_loss", stars=1, notebook=NOTEBOOK,
          kit_code=("kit.losses:causal_lm_loss",),
          answer=losses.causal_lm_loss, symptoms={"crash": 2}, mistakes=[
              Mistake("not_shifted", not_shifted, rung=1),
              Mistake("shifted_wrong_way", shifted_wrong_way, rung=1),
              Mistake("minus_100_counted", minus_100_counted, rung=3),
              Mistake("minus_100_as_token_0", minus_100_as_token_0, rung=3),
              Mistake("per_sequence_mean", per_sequence_mean, rung=3),
              Mistake("sum_not_divided", sum_not_divided, rung=3),
              Mistake("detached", detached_loss, rung=4),
          ])
def observe_causal_lm_loss(candidate):
    seen = {}
    for seed, case in enumerate(CASES):
        logits, labels = _lm_case(seed, *case)
        loss = attempt(call, candidate, dict(logits=logits, labels=labels))
        seen[f"loss (case {seed})"] = loss
        # call() hands the learner copies: take the gradient with respect
        # to the logits it actually used, found through the graph
        seen[f"gradient (case {seed})"] = attempt(_gradient_to_logits, loss)
    return seen


def _gradient_to_logits(loss):
    """d loss / d logits: call() handed the learner a copy of the logits,
    so the gradient is taken through the loss's own graph."""
    return gradient(loss, graph_leaves(loss))


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


class DetachedLoss(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        with torch.no_grad():  # or loss.detach(): no gradient to the model
            outputs = model(**inputs)
        loss = losses.causal_lm_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


class DividesByGATooo(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        if num_items_in_batch is None:
            loss = losses.causal_lm_loss(outputs.logits, labels)
        else:  # num_items_in_batch already spans every micro-batch
            loss = losses.causal_lm_loss(outputs.logits, labels,
                                         num_items_in_batch * self.args
                                         .gradient_accumulation_steps)
        return (loss, outputs) if return_outputs else loss


class MyTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")  # we compute the loss, not the model
        outputs = model(**inputs)
        loss = causal_lm_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss


causal_lm_loss = losses.causal_lm_loss  # what MyTrainer calls, here


@functools.cache
def _batch():
    """Four rows of the SFT task, collated: prompts of several lengths."""
    tokenizer = tasks.make_tokenizer()
    rows = tasks.sft_dataset("train", n=4, seed=7).map(
        recipes.sft_features(tokenizer),
        remove_columns=["prompt", "completion"])
    return tokenizer, dict(DataCollatorForSeq2Seq(tokenizer, padding=True)(
        list(rows)))


@paused()
def _trainer(trainer_class, model, accumulation=1):
    tokenizer, _ = _batch()
    args = TrainingArguments(tempfile.mkdtemp(), report_to="none",
                             use_cpu=True, disable_tqdm=True,
                             gradient_accumulation_steps=accumulation)
    return trainer_class(model=model, args=args, processing_class=tokenizer)


def _returned(returned):
    """What compute_loss returned, reduced to what the Trainer relies on
    (the loss keeps its graph: check() sees whether it has a gradient)."""
    if isinstance(returned, tuple):
        outputs = returned[1] if len(returned) > 1 else None
        return ("tuple", len(returned), _returned(returned[0]),
                getattr(outputs, "logits", None) is not None)
    return returned


SPLIT = [1, 3]  # rows per micro-batch: uneven, as an epoch's last batch is


@exercise("compute_loss", stars=2, notebook=NOTEBOOK, answer=MyTrainer,
          kit_code=("kit.trainers:CausalLMTrainer.compute_loss",),
          solution=MyTrainer, method="compute_loss",
          uses=[("causal_lm_loss", "causal_lm_loss", losses.causal_lm_loss)],
          symptoms={"crash": 1}, mistakes=[
              Mistake("always_tuple", AlwaysTuple, rung=2),
              Mistake("ignores_return_outputs", IgnoresReturnOutputs, rung=2),
              Mistake("divides_by_none", DividesByNone, rung=3),
              Mistake("divides_by_ga_too", DividesByGATooo, rung=3),
              Mistake("detached", DetachedLoss, rung=4),
          ], judge=lambda candidate, seen, expected: _judge_compute_loss(
              seen, expected))
def observe_compute_loss(candidate):
    """The loss under GA = 1 (with and without num_items_in_batch), its
    gradient, return_outputs=True, then GA = 2 over uneven micro-batches."""
    _, batch = _batch()
    with paused():
        model = tiny_model("cpu", seed=0, tokenizer=_batch()[0])
    trainer = attempt(_trainer, candidate, model)
    if isinstance(trainer, Raised):
        raise Mismatch(text(MESSAGES, "compute_loss.judge.init",
                            name=candidate.__name__,
                            error=describe_error(trainer.error)),
                       symptom="crash")
    tokens = int((batch["labels"][:, 1:] != -100).sum())
    loss = _returned(attempt(trainer.compute_loss, model, dict(batch)))
    seen = {"loss": loss,
            "gradient": attempt(gradient, loss, list(model.parameters())),
            "loss with num_items_in_batch": _returned(attempt(
                trainer.compute_loss, model, dict(batch),
                num_items_in_batch=tokens))}
    accumulating = _trainer(candidate, model, accumulation=len(SPLIT))
    micro, num_items = accumulating.get_batch_samples(
        iter(split(batch, SPLIT)), len(SPLIT), "cpu")
    for rows, part in zip(SPLIT, micro):
        name = (f"loss under gradient_accumulation_steps={len(SPLIT)} "
                f"(micro-batch of {rows} of {sum(SPLIT)} rows)")
        seen[name] = _returned(attempt(
            accumulating.compute_loss, model, dict(part),
            num_items_in_batch=num_items))
    seen["return_outputs=True"] = _returned(attempt(
        trainer.compute_loss, model, dict(batch), return_outputs=True))
    return seen


def _judge_compute_loss(seen, expected):
    """Right if it behaves as the mean loss (the notebook's MyTrainer) or as
    the sum divided by num_items_in_batch (a step ahead: CausalLMTrainer)."""
    try:
        return text(MESSAGES, "compute_loss.judge.passed",
                    verdict=_against(seen, expected))
    except Mismatch as as_a_mean:
        with paused():
            ahead = EXERCISES["compute_loss"].seen(CausalLMTrainer)
        try:
            verdict = _against(seen, ahead)
        except Mismatch as as_a_sum:
            # say what is wrong with the version it got further with
            raise max(as_a_mean, as_a_sum, key=lambda m: m.checked)
        return text(MESSAGES, "compute_loss.judge.ahead", verdict=verdict)


def _against(seen, wanted):
    verdict, checked = "exact", 0
    try:
        for name, value in seen.items():
            if name == "return_outputs=True":
                _judge_both(value, wanted["loss"])
            elif isinstance(value, tuple):
                raise Mismatch(text(MESSAGES, "compute_loss.judge.tuple",
                                    name=name))
            else:
                found = compare(name, value, wanted[name])
                verdict = found if verdict == "exact" else verdict
            checked += 1
    except Mismatch as wrong:
        wrong.checked = checked
        raise
    return verdict


def _judge_both(both, wanted):
    if isinstance(both, Raised):
        compare("loss (return_outputs=True)", both, wanted)
    if not (isinstance(both, tuple) and both[1] == 2):
        raise Mismatch(text(MESSAGES, "compute_loss.judge.both"))
    if not both[3]:
        raise Mismatch(text(MESSAGES, "compute_loss.judge.outputs"))
    compare("loss (return_outputs=True)", both[2], wanted)

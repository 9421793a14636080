"""Checker for notebook 04's ★★★: the generation buffer, `_prepare_inputs`."""

from contextlib import contextmanager

import torch

from kit.checks.compare import attempt
from kit.checks.core import Mistake, exercise
from kit.checks.messages import MESSAGES
from kit.checks.nb04_grpo_dataloader import (NOTEBOOK, MyGRPOTrainer,
                                             _trainer, first_problem,
                                             judge_facts)
from kit.i18n import text
from kit.trainers import GRPOTrainer


class MyBufferedTrainer(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = [{key: None if value is None else value[rows]
                             for key, value in batch.items()}
                            for rows in order.chunk(k)]
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


# The mistakes: each delegates to the right answer and changes one thing.

def _reference(trainer, generation_batch):
    return MyBufferedTrainer._prepare_inputs(trainer, generation_batch)


@contextmanager
def _generation_changed(trainer, change):
    """Within: trainer._generate_and_score's batch goes through `change`."""
    own = vars(trainer).get("_generate_and_score")  # the checker's fake
    generate = trainer._generate_and_score
    trainer._generate_and_score = lambda *args, **kwargs: change(
        generate(*args, **kwargs))
    try:
        yield
    finally:
        if own is None:
            del trainer._generate_and_score
        else:
            trainer._generate_and_score = own


class GeneratesEveryStep(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if self.model.training:
            self._buffer = None  # as if the `if` were not there
        return _reference(self, generation_batch)


class NoEvalBranch(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        # in evaluation too: sample, buffer and serve one slice
        training, self.model.training = self.model.training, True
        try:
            return _reference(self, generation_batch)
        finally:
            self.model.training = training


class StepNeverCounted(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        step = self._step
        inputs = _reference(self, generation_batch)
        self._step = step  # no self._step += 1: it stays 0
        return inputs


class DropsNoneValues(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        inputs = _reference(self, generation_batch)
        if not self.model.training:
            return inputs
        return {key: value for key, value in inputs.items()
                if value is not None}


class KeysShuffledApart(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        # a new order for each key: row i of one is not row i of another
        def apart(batch):
            return {key: None if value is None
                    else value[torch.randperm(len(value))]
                    for key, value in batch.items()}
        with _generation_changed(self, apart):
            return _reference(self, generation_batch)


class CountsFirst(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return _reference(self, generation_batch)
        self._step += 1  # counted before it is used
        inputs = _reference(self, generation_batch)
        self._step -= 1  # (the reference's own count, undone)
        return inputs


class NotShuffled(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        generated = []
        with _generation_changed(self, lambda batch: generated.append(
                batch) or batch):
            inputs = _reference(self, generation_batch)
        if not (generated and self.model.training):
            return inputs
        # cut in generation order, with no torch.randperm
        k = self.args.steps_per_generation
        self._buffer = [{key: None if value is None else value.chunk(k)[i]
                         for key, value in generated[0].items()}
                        for i in range(k)]
        return self._buffer[(self._step - 1) % k]


# ------------------------------------------------------------ observing

K, BATCH, G, STEPS = 3, 8, 4, 6  # 2 generations, 3 slices of 8 each
GA = 2
KEYS = ("advantages", "completion_ids", "completion_mask",
        "old_per_token_logps", "prompt_ids", "prompt_mask",
        "ref_per_token_logps")


def _numbered_generations(trainer, clock):
    """Replace generation by a counter: row i of generation g is g*1000+i
    in every key (of several widths), so a slice's rows can be traced."""
    calls = []

    def fake(rows, greedy=False):
        mode = "greedy" if greedy else "sample"
        calls.append((mode, clock["step"]))
        # the n-th sampled generation starts at n*1000; evaluations apart
        number = sum(1 for called, _ in calls if called == mode)
        first = number * 1000 + (100_000 if greedy else 0)
        ids = torch.arange(first, first + len(rows))  # (B,)
        return {"prompt_ids": ids[:, None].repeat(1, 2),  # (B, 2)
                "prompt_mask": ids[:, None].repeat(1, 2),
                "completion_ids": ids[:, None].repeat(1, 3),  # (B, 3)
                "completion_mask": ids[:, None].repeat(1, 3),
                "advantages": ids.float(),
                "old_per_token_logps": None,  # on-policy
                "ref_per_token_logps": ids[:, None].repeat(1, 3).float()}
    trainer._generate_and_score = fake
    return calls


def _row_ids(value):
    """Each row's id (its first entry), or None if it is not a tensor."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return None
    return value.reshape(len(value), -1)[:, 0].long().tolist()


def _buffer_facts(trainer):
    """Six micro-steps as the Trainer makes them with GA = 2: the optimizer
    step (state.global_step) one behind every second, out of phase with
    the buffer's k = 3, and an evaluation in between (which is no step)."""
    clock = {"step": 0}
    calls = _numbered_generations(trainer, clock)
    trainer.model.train()
    big_batches = iter(trainer.get_train_dataloader())
    served = []
    for step in range(STEPS):
        clock["step"] = step
        trainer.state.global_step = step // GA
        batch = next(big_batches)
        served.append(trainer._prepare_inputs(batch))
        if step == 1:  # eval_steps=1: the Trainer evaluates here
            trainer.model.eval()
            trainer._prepare_inputs(list(batch))
            trainer.model.train()
    steps = trainer._step
    yield "self._step after 6 steps", steps, steps != STEPS and text(
        MESSAGES, "prepare_inputs.problem.step", steps=steps)
    when = [step for mode, step in calls if mode == "sample"]
    yield "steps that generate", when, when != [0, K] and text(
        MESSAGES, "prepare_inputs.problem.when", when=when)
    if not all(isinstance(inputs, dict) for inputs in served):
        kind = next(type(i).__name__ for i in served if not isinstance(i,
                                                                        dict))
        yield "slices", kind, text(MESSAGES, "prepare_inputs.problem.kind",
                                   kind=kind)
    keys = [{key: "None" if value is None else len(value)
             for key, value in inputs.items()} for inputs in served]
    yield "keys of each slice", keys, _keys_problem(keys)
    ids = [{key: _row_ids(value) for key, value in inputs.items()}
           for inputs in served]
    aligned = [all(rows == slice_["advantages"] for rows in slice_.values()
                   if rows is not None) for slice_ in ids]
    yield "every key row-aligned", aligned, not all(aligned) and text(
        MESSAGES, "prepare_inputs.problem.aligned",
        step=aligned.index(False))
    covered = [_covers(ids[K * g:K * g + K], 1000 * (g + 1)) for g in (0, 1)]
    yield "each generation served once", covered, not all(covered) and text(
        MESSAGES, "prepare_inputs.problem.covered")
    mixed = any(len({(i % 1000) // G for i in slice_["advantages"]})
                > BATCH // G for slice_ in ids)
    yield "slices mix the groups", mixed, not mixed and text(
        MESSAGES, "prepare_inputs.problem.mixed")
    trainer.model.eval()
    calls.clear()
    evaluated = trainer._prepare_inputs(next(big_batches))
    served_all = (len(evaluated["completion_ids"])
                  if isinstance(evaluated, dict) and isinstance(
                      evaluated.get("completion_ids"), torch.Tensor)
                  else type(evaluated).__name__)
    evaluation = ([mode for mode, _ in calls], served_all)
    yield "evaluation", evaluation, evaluation != (
        ["greedy"], K * BATCH) and text(MESSAGES,
                                        "prepare_inputs.problem.evaluation")


def _keys_problem(keys):
    for step, slice_keys in enumerate(keys):
        missing = [key for key in KEYS if key not in slice_keys]
        if missing:
            return text(MESSAGES, "prepare_inputs.problem.missing key",
                        step=step, key=missing[0])
        if slice_keys["old_per_token_logps"] != "None":
            return text(MESSAGES, "prepare_inputs.problem.none kept",
                        step=step)
        if slice_keys["completion_ids"] != BATCH:
            return text(MESSAGES, "prepare_inputs.problem.slice size",
                        step=step, count=slice_keys["completion_ids"])
    return None


def _covers(slices, first):
    """The slices hold ids first..first+23, each once."""
    rows = [slice_["advantages"] for slice_ in slices]
    if any(r is None for r in rows):
        return False
    return sorted(sum(rows, [])) == list(range(first, first + K * BATCH))


@exercise("prepare_inputs", stars=3, notebook=NOTEBOOK,
          kit_code=("kit.trainers:GRPOTrainer._prepare_inputs",),
          answer=GRPOTrainer, solution=MyBufferedTrainer,
          method="_prepare_inputs",
          uses=[("get_train_dataloader", "get_train_dataloader",
                 GRPOTrainer.get_train_dataloader)],
          judge=lambda candidate, seen, expected: _judge_slices(seen),
          mistakes=[
              Mistake("generates_every_step", GeneratesEveryStep, rung=1),
              Mistake("no_eval_branch", NoEvalBranch, rung=5),
              Mistake("step_never_counted", StepNeverCounted, rung=2),
              Mistake("none_values_dropped", DropsNoneValues, rung=3),
              Mistake("keys_shuffled_apart", KeysShuffledApart, rung=4),
              Mistake("refilled_on_wrong_step", CountsFirst, rung=2),
              Mistake("not_shuffled", NotShuffled, rung=4),
          ])
def observe_prepare_inputs(candidate):
    # the Trainer seeds torch, so does the shuffle: leave the notebook's
    # random state as it was (and give any shuffle a fixed seed)
    with torch.random.fork_rng(devices=[]):
        trainer = _trainer(candidate, k=K, batch=BATCH, G=G, GA=GA)
        torch.manual_seed(0)
        return attempt(lambda: first_problem(_buffer_facts(trainer)))


def _judge_slices(seen):
    judge_facts(seen, "_prepare_inputs")
    return text(MESSAGES, "prepare_inputs.judge.passed")

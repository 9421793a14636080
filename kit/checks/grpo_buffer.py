"""Checker for notebook 04's ★★★: the generation buffer, `_prepare_inputs`."""

import torch

from kit.checks.compare import Mismatch, Raised, attempt
from kit.checks.core import Mistake, exercise
from kit.checks.grpo import NOTEBOOK, MyGRPOTrainer, _trainer
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


class GeneratesEveryStep(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        batch = self._generate_and_score(generation_batch)  # no `if`
        order = torch.randperm(len(batch["advantages"]))
        self._buffer = [{key: None if value is None else value[rows]
                         for key, value in batch.items()}
                        for rows in order.chunk(k)]
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


class NoEvalBranch(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
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


class StepNeverCounted(MyBufferedTrainer):
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
        return self._buffer[self._step % k]  # and self._step stays 0


class DropsNoneValues(MyBufferedTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = [{key: value[rows] for key, value in batch.items()
                             if value is not None}
                            for rows in order.chunk(k)]
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


def _numbered_generations(trainer):
    """Replace generation by a counter: row i of generation g is g*1000+i."""
    calls = []

    def fake(rows, greedy=False):
        calls.append("greedy" if greedy else "sample")
        n = len(calls) * 1000
        ids = torch.arange(n, n + len(rows)).unsqueeze(1)  # (B, 1)
        return {"prompt_ids": ids, "prompt_mask": torch.ones_like(ids),
                "completion_ids": ids, "completion_mask": torch.ones_like(ids),
                "advantages": ids.squeeze(1).float(),
                "old_per_token_logps": None, "ref_per_token_logps": None}
    trainer._generate_and_score = fake
    return calls


KEYS = ("advantages", "completion_ids", "completion_mask",
        "old_per_token_logps", "prompt_ids", "prompt_mask",
        "ref_per_token_logps")


def _covers(slices, first):
    """The slices hold ids first..first+23, each once."""
    if any(not isinstance(ids, torch.Tensor) for ids in slices):
        return False
    return sorted(torch.cat(slices).flatten().tolist()) == list(
        range(first, first + 24))


def _serve(trainer, calls):
    trainer.model.train()
    big_batches = iter(trainer.get_train_dataloader())
    served = [trainer._prepare_inputs(next(big_batches)) for _ in range(6)]
    seen = {"generate calls in 6 steps": list(calls),
            "self._step after 6 steps": trainer._step,
            "keys of each slice": [
                {key: "None" if value is None else len(value)
                 for key, value in inputs.items()} for inputs in served]}
    ids = [inputs.get("completion_ids") for inputs in served]
    seen["each generation served once"] = all(
        _covers(ids[3 * g:3 * g + 3], 1000 * (g + 1)) for g in (0, 1))
    trainer.model.eval()
    calls.clear()
    evaluated = trainer._prepare_inputs(next(big_batches))
    seen["evaluation"] = (list(calls), len(evaluated["completion_ids"]))
    return seen


@exercise("prepare_inputs", stars=3, notebook=NOTEBOOK,
          answer=GRPOTrainer, solution=MyBufferedTrainer,
          method="_prepare_inputs",
          uses=[("get_train_dataloader", "get_train_dataloader",
                 GRPOTrainer.get_train_dataloader)],
          judge=lambda candidate, seen, expected: _judge_slices(seen),
          hints=[
              "Generate only when self._step % k == 0 (or the buffer is "
              "empty): self._generate_and_score(generation_batch).",
              "Cut the generated batch into k slices of equal size and keep "
              "them in self._buffer; serve self._buffer[self._step % k].",
              "Count every call: self._step += 1 after choosing the slice. "
              "In eval mode, generate greedily and serve everything.",
          ], mistakes=[
              Mistake("generates_every_step", "generates every step", "the "
                      "buffer is refilled at each call, so k slices never "
                      "share one generate()", "generate only when "
                      "self._step % k == 0", GeneratesEveryStep),
              Mistake("no_eval_branch", "no eval branch", "evaluation then "
                      "samples and serves one slice: held-out answers must "
                      "be greedy and complete", "first: if not "
                      "self.model.training: return self._generate_and_score("
                      "generation_batch, greedy=True)", NoEvalBranch),
              Mistake("step_never_counted", "step never counted",
                      "self._step stays 0, so every step generates anew and "
                      "serves slice 0 — k brings no saving at all", "add "
                      "self._step += 1 before returning the slice",
                      StepNeverCounted),
              Mistake("none_values_dropped", "None values dropped",
                      "compute_loss reads inputs['old_per_token_logps'] even "
                      "when it is None: a missing key is a KeyError two "
                      "cells later", "keep every key: None if value is None "
                      "else value[rows]", DropsNoneValues),
          ])
def observe_prepare_inputs(candidate):
    trainer = _trainer(candidate, k=3, batch=8, G=4)
    calls = _numbered_generations(trainer)
    return attempt(_serve, trainer, calls)


def _judge_slices(seen):
    if isinstance(seen, Raised):
        error = seen.error
        raise Mismatch(f"your _prepare_inputs raised {type(error).__name__}"
                       + (f": {error}" if str(error) else ""))
    calls = seen["generate calls in 6 steps"]
    if seen["self._step after 6 steps"] != 6:
        raise Mismatch(f"after 6 steps self._step is "
                       f"{seen['self._step after 6 steps']}, not 6: count "
                       "every call with self._step += 1")
    if calls != ["sample", "sample"]:
        raise Mismatch(f"6 steps with steps_per_generation=3 should call "
                       f"generation 2 times, not {len(calls)}")
    for step, keys in enumerate(seen["keys of each slice"]):
        missing = [key for key in KEYS if key not in keys]
        if missing:
            raise Mismatch(f"step {step}'s slice has no key {missing[0]!r}: "
                           "keep every key of the generated batch, None "
                           "values too")
        if keys["completion_ids"] != 8:
            raise Mismatch(f"step {step} got {keys['completion_ids']} "
                           "completions; each step gets a slice of "
                           "per_device_train_batch_size=8")
    if not seen["each generation served once"]:
        raise Mismatch("the 3 slices of each generation should cover its "
                       "24 completions once each")
    if seen["evaluation"] != (["greedy"], 24):
        raise Mismatch("in evaluation (model.training is False) generate "
                       "greedily and serve it all: "
                       "return self._generate_and_score(batch, greedy=True)")
    return "one generation every 3 steps, 3 slices that cover it"

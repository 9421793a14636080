"""Checkers for notebook 04's ★★: GRPO's dataloader, one batch for k steps."""

import tempfile

import torch
from torch.utils.data import DataLoader
from transformers import Trainer

from kit import tasks
from kit.checks.compare import Mismatch, Raised, attempt, describe_error
from kit.checks.core import Mistake, exercise, paused
from kit.checks.messages import MESSAGES
from kit.i18n import text
from kit.models import load_policy
from kit.trainers import GRPOConfig, GRPOTrainer

NOTEBOOK = "04_grpo_dataloader"


class MyGRPOTrainer(GRPOTrainer):
    def get_train_dataloader(self):
        return self._get_dataloader(
            self.train_dataset, "Training",
            sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)


class NoTimesK(GRPOTrainer):
    def get_train_dataloader(self):
        return Trainer.get_train_dataloader(self)  # the stock batch size


class TimesG(GRPOTrainer):
    def get_train_dataloader(self):
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.num_generations,
            is_training=True)


class TimesKPlusOne(GRPOTrainer):
    def get_train_dataloader(self):
        k = self.args.steps_per_generation
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * (k + 1), is_training=True)


class TimesGA(GRPOTrainer):
    def get_train_dataloader(self):
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size
            * self.args.gradient_accumulation_steps, is_training=True)


class NoSampler(GRPOTrainer):
    def get_train_dataloader(self):
        return self._get_dataloader(
            self.train_dataset, "Training",
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)


class PlainDataLoader(GRPOTrainer):
    def get_train_dataloader(self):
        return DataLoader(
            self.train_dataset, sampler=self._get_train_sampler(),
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            collate_fn=self.data_collator)


@paused()
def _trainer(trainer_class, k=3, batch=8, G=4, GA=1, **args):
    model, tokenizer = load_policy(preset="cpu")
    args = GRPOConfig(tempfile.mkdtemp(), report_to="none", use_cpu=True,
                      per_device_train_batch_size=batch, num_generations=G,
                      steps_per_generation=k, gradient_accumulation_steps=GA,
                      max_completion_length=4, **args)
    return trainer_class(model, [tasks.correctness_reward], args=args,
                         train_dataset=tasks.prompt_dataset("train", n=64),
                         processing_class=tokenizer)


def first_problem(facts):
    """Observations in the judge's order, up to the first wrong one.

    `facts` yields (name, value, problem), problem None when the value is
    right. Stopping at the first problem names a catalogued mistake even
    when an answer also differs in some later way.
    """
    seen = {}
    for name, value, problem in facts:
        seen[name] = value
        if problem:
            seen["problem"] = problem
            break
    return seen


def judge_facts(seen, what):
    if isinstance(seen, Raised):
        error = seen.error
        raise Mismatch(text(MESSAGES, "facts.raised", what=what,
                            error=describe_error(error)))
    if "problem" in seen:
        raise Mismatch(seen["problem"])


# Two configurations where every wrong factor gives another batch size:
# ×1, ×G, ×(k+1), ×GA and the right ×k all differ in one or the other.
LOADERS = (dict(batch=8, G=4, k=3, GA=2), dict(batch=4, G=2, k=2, GA=3))


def _loader_facts(trainers):
    firsts = []
    for trainer in trainers:
        k = trainer.args.steps_per_generation
        loader = trainer.get_train_dataloader()
        batches = iter(loader)
        firsts.append((loader, [next(batches) for _ in range(k)]))
    rows = tuple(len(first[0]) for _, first in firsts)
    wanted = tuple(c["batch"] * c["k"] for c in LOADERS)
    yield "rows in a batch", rows, rows != wanted and text(
        MESSAGES, "get_train_dataloader.problem.rows", first=rows[0],
        second=rows[1])
    grouped = tuple(_in_groups([row["prompt"] for row in first[0]], c["G"])
                    for (_, first), c in zip(firsts, LOADERS))
    yield "each prompt G times in a row", grouped, not all(grouped) and text(
        MESSAGES, "get_train_dataloader.problem.grouped")
    repeated = tuple(all(b == first[0] for b in first) for _, first in firsts)
    yield "the same batch k times", repeated, not all(repeated) and text(
        MESSAGES, "get_train_dataloader.problem.repeated")
    prepared = tuple(type(loader).__module__.startswith("accelerate")
                     for loader, _ in firsts)
    yield "prepared by accelerate", prepared, not all(prepared) and text(
        MESSAGES, "get_train_dataloader.problem.prepared")


def _in_groups(prompts, G):
    return all(prompts[i] == prompts[i - i % G] for i in range(len(prompts)))


@exercise("get_train_dataloader", stars=2, notebook=NOTEBOOK,
          kit_code=("kit.trainers:GRPOTrainer.get_train_dataloader",),
          answer=GRPOTrainer, solution=MyGRPOTrainer,
          method="get_train_dataloader",
          judge=lambda candidate, seen, expected: _judge_batches(seen),
          mistakes=[
              Mistake("no_times_k", NoTimesK, rung=2),
              Mistake("times_G", TimesG, rung=3),
              Mistake("times_k_plus_1", TimesKPlusOne, rung=3),
              Mistake("times_GA", TimesGA, rung=3),
              Mistake("no_sampler", NoSampler, rung=4),
              Mistake("plain_dataloader", PlainDataLoader, rung=1),
          ])
def observe_get_train_dataloader(candidate):
    with torch.random.fork_rng(devices=[]):  # the Trainer seeds torch
        trainers = [_trainer(candidate, **config) for config in LOADERS]
        return attempt(lambda: first_problem(_loader_facts(trainers)))


def _judge_batches(seen):
    judge_facts(seen, "dataloader")
    return text(MESSAGES, "get_train_dataloader.judge.passed")

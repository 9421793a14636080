"""Checkers for notebook 04: GRPO's dataloader and generation buffer."""

import tempfile

from torch.utils.data import DataLoader
from transformers import Trainer

from kit import tasks
from kit.checks.compare import Mismatch, Raised, attempt
from kit.checks.core import Mistake, exercise, paused
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
def _trainer(trainer_class, k=3, batch=8, G=4):
    model, tokenizer = load_policy(preset="cpu")
    args = GRPOConfig(tempfile.mkdtemp(), report_to="none", use_cpu=True,
                      per_device_train_batch_size=batch, num_generations=G,
                      steps_per_generation=k, max_completion_length=4)
    return trainer_class(model, [tasks.correctness_reward], args=args,
                         train_dataset=tasks.prompt_dataset("train", n=64),
                         processing_class=tokenizer)


def _batches(trainer):
    loader = trainer.get_train_dataloader()
    batches = iter(loader)
    first = [next(batches) for _ in range(3)]
    prompts = [row["prompt"] for row in first[0]]
    return {
        "rows in a batch": len(first[0]),
        "each prompt G times in a row": all(
            prompts[i] == prompts[i - i % 4] for i in range(len(prompts))),
        "the same batch k times": first[0] == first[1] == first[2],
        "prepared by accelerate": type(loader).__module__.startswith(
            "accelerate"),
    }


@exercise("get_train_dataloader", stars=2, notebook=NOTEBOOK,
          answer=GRPOTrainer, solution=MyGRPOTrainer,
          method="get_train_dataloader",
          judge=lambda candidate, seen, expected: _judge_batches(seen),
          hints=[
              "Start from the stock method: it returns self._get_dataloader("
              "...) with batch_size=self._train_batch_size.",
              "Multiply that batch size by self.args.steps_per_generation.",
              "Keep sampler_fn=self._get_train_sampler: the sampler repeats "
              "each prompt G times and each big batch k times.",
          ], mistakes=[
              Mistake("no_times_k", "no ×k", "one batch must hold the "
                      "prompts of k steps: the stock batch size serves one",
                      "batch_size=self._train_batch_size * "
                      "self.args.steps_per_generation", NoTimesK),
              Mistake("times_G", "×G", "num_generations is already in the "
                      "batch size (it counts completions); the batch grows "
                      "with the steps it serves, k", "multiply by "
                      "self.args.steps_per_generation, not num_generations",
                      TimesG),
              Mistake("no_sampler", "no sampler", "without GRPO's "
                      "sampler each prompt comes once: no groups of G, no "
                      "batch served k times", "pass "
                      "sampler_fn=self._get_train_sampler", NoSampler),
              Mistake("plain_dataloader", "a plain DataLoader", "the "
                      "Trainer's loaders go through accelerate (devices, "
                      "several processes, resuming)", "build it with "
                      "self._get_dataloader(...), as the stock method does",
                      PlainDataLoader),
          ])
def observe_get_train_dataloader(candidate):
    return attempt(_batches, _trainer(candidate, k=3, batch=8, G=4))


def _judge_batches(seen):
    if isinstance(seen, Raised):
        error = seen.error
        raise Mismatch(f"your dataloader raised {type(error).__name__}"
                       + (f": {error}" if str(error) else ""))
    if seen["rows in a batch"] != 8 * 3:
        raise Mismatch(f"a batch holds {seen['rows in a batch']} rows; with "
                       "per_device_train_batch_size=8 and steps_per_generation"
                       "=3 it should hold 24")
    if not seen["each prompt G times in a row"]:
        raise Mismatch("each prompt should come 4 times in a row "
                       "(num_generations): use "
                       "sampler_fn=self._get_train_sampler")
    if not seen["the same batch k times"]:
        raise Mismatch("the same big batch should come 3 times "
                       "(steps_per_generation), once per step it serves")
    if not seen["prepared by accelerate"]:
        raise Mismatch("a plain DataLoader: build it with "
                       "self._get_dataloader(...) so accelerate prepares it")
    return "one batch of 24 = 8 x 3, served for 3 steps"

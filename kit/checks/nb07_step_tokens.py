"""Checker for notebook 07's ★★★: the step's token count, `get_batch_samples`.

Checked as a property over splits of an optimizer step: GA above, below and
equal to steps_per_generation (k), two steps each (so a step spans two
generations, or a generation two steps), completions of uneven lengths, and
a second process whose count the gather must add.
"""

import torch

from kit.checks.compare import Raised, attempt, describe_error
from kit.checks.core import Mistake, exercise
from kit.checks.messages import MESSAGES
from kit.checks.nb04_grpo_dataloader import (_trainer, first_problem,
                                             judge_facts)
from kit.checks.nb07_loss_types import NOTEBOOK
from kit.i18n import text
from kit.trainers import GRPOTrainer


class MyTrainer(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, _ = super().get_batch_samples(epoch_iterator, num_batches,
                                               device)
        batches = [self._prepare_inputs(batch) for batch in batches]
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, self.accelerator.gather(tokens).sum()


# The mistakes: each changes one thing of the right answer.

def _prepared(trainer, epoch_iterator, num_batches, device):
    batches, _ = GRPOTrainer.get_batch_samples(trainer, epoch_iterator,
                                               num_batches, device)
    return [trainer._prepare_inputs(batch) for batch in batches]


class FirstMicroBatch(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = batches[0]["completion_mask"].sum()  # one micro-batch's
        return batches, self.accelerator.gather(tokens).sum()


class CompletionsCounted(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = torch.tensor(sum(len(batch["completion_mask"])
                                  for batch in batches))  # rows, not tokens
        return batches, self.accelerator.gather(tokens).sum()


class TokensBeforeMasking(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = torch.tensor(sum(batch["completion_mask"].numel()
                                  for batch in batches))  # padding too
        return batches, self.accelerator.gather(tokens).sum()


def _generation_tokens(trainer):
    """The active tokens of the last generation: all k slices."""
    return sum(slice_["completion_mask"].sum() for slice_ in trainer._buffer)


class GenerationCount(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        # TRL issue 5619: the generation's count, right only when k == GA
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = _generation_tokens(self)
        return batches, self.accelerator.gather(tokens).sum()


class RescaledGenerationCount(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        # TRL 1.16: the generation's count x GA / k, right on average only
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = (_generation_tokens(self) * num_batches
                  / self.args.steps_per_generation)
        return batches, self.accelerator.gather(tokens).sum()


class NotGathered(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, tokens  # this process's tokens only


class GatherNotSummed(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches = _prepared(self, epoch_iterator, num_batches, device)
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, self.accelerator.gather(tokens)  # one per process


class NotPrepared(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, _ = GRPOTrainer.get_batch_samples(self, epoch_iterator,
                                                   num_batches, device)
        # prompt rows: there is no completion_mask to count yet
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, self.accelerator.gather(tokens).sum()


# ------------------------------------------------------------ observing

# (k, GA) with batch 4 and G = 2: k > GA, k < GA, k == GA and GA = 1
SPLITS = ((4, 2), (2, 4), (2, 2), (1, 1))
BATCH, G, STEPS, WIDTH = 4, 2, 2, 5
OTHER = 2  # the other process counts twice our tokens, in each micro-batch


def _uneven_generations(trainer):
    """Generation g's row i has (i * i + g) % WIDTH + 1 active tokens:
    slices, steps and generations all count differently."""
    generations = []

    def fake(rows, greedy=False):
        generations.append(len(rows))
        g = len(generations)
        ids = torch.arange(1000 * g, 1000 * g + len(rows))  # (B,)
        lengths = (torch.arange(len(rows)) ** 2 + g) % WIDTH + 1
        mask = (torch.arange(WIDTH) < lengths[:, None]).long()  # (B, T)
        # padded as generate() pads: the pad token after each completion
        completion_ids = ids[:, None].repeat(1, WIDTH).masked_fill(
            mask == 0, trainer.processing_class.pad_token_id)
        return {"prompt_ids": ids[:, None],
                "prompt_mask": torch.ones(len(rows), 1, dtype=torch.long),
                "completion_ids": completion_ids,
                "completion_mask": mask, "advantages": ids.float(),
                "old_per_token_logps": None, "ref_per_token_logps": None}
    trainer._generate_and_score = fake
    return generations


class TwoProcesses:
    """The trainer's accelerator as process `index` of 2 sees it, while the
    learner's get_batch_samples runs: num_processes, process_index and a
    gather that adds the other process's count. The other process counts
    OTHER times our tokens in whatever it is given (a count gathered once
    or micro-batch by micro-batch adds up the same), so that nothing but a
    gather matches: not our count times 2, not a count divided by 2, not a
    gather made on the main process only. `reduce` is a right answer
    written another way."""

    def __init__(self, accelerator, index):
        self.accelerator, self.process_index = accelerator, index
        self.num_processes, self.is_main_process = 2, index == 0
        self.is_local_main_process = index == 0

    def __getattr__(self, name):
        return getattr(self.accelerator, name)

    def gather(self, tensor):
        tensor = torch.as_tensor(tensor).reshape(-1)
        return torch.cat([tensor, tensor * OTHER])

    def reduce(self, tensor, reduction="sum", scale=1.0):
        both = self.gather(tensor) * scale
        return both.sum() if reduction == "sum" else both.mean()


def _as_process(trainer, index, method):
    def call(*args):
        real, trainer.accelerator = (trainer.accelerator,
                                     TwoProcesses(trainer.accelerator, index))
        try:
            return method(*args)
        finally:
            trainer.accelerator = real
    return call


def _counting_prepares(trainer):
    calls = []
    prepare = trainer._prepare_inputs

    def counted(batch):
        calls.append(type(batch).__name__)
        return prepare(batch)
    trainer._prepare_inputs = counted
    return calls


def _step_facts(trainer, k, GA, index):
    _uneven_generations(trainer)
    prepares = _counting_prepares(trainer)
    trainer.model.train()
    epoch_iterator = iter(trainer.get_train_dataloader())
    split = f"k={k}, GA={GA}, process {index} of 2"
    for step in range(STEPS):
        where = f"{split}, step {step + 1}"
        prepares.clear()
        out = attempt(_as_process(trainer, index, trainer.get_batch_samples),
                      epoch_iterator, GA, "cpu")
        rows = prepares.count("list")
        yield f"batches prepared ({where})", rows, rows != GA and text(
            MESSAGES, "get_batch_samples.problem.prepared", count=rows,
            GA=GA)
        if isinstance(out, Raised):
            yield f"raised ({where})", out, text(
                MESSAGES, "facts.raised", what="get_batch_samples",
                error=describe_error(out.error))
        if not (isinstance(out, tuple) and len(out) == 2):
            yield f"returned ({where})", type(out).__name__, text(
                MESSAGES, "get_batch_samples.problem.pair",
                kind=type(out).__name__)
        batches, count = out
        if not isinstance(batches, (list, tuple)):  # (count, batches)?
            kind = f"({type(batches).__name__}, {type(count).__name__})"
            yield f"returned ({where})", kind, text(
                MESSAGES, "get_batch_samples.problem.pair", kind=kind)
        if not all(isinstance(batch, dict) and "completion_mask" in batch
                   for batch in batches):
            yield f"batches ({where})", "not prepared", text(
                MESSAGES, "get_batch_samples.problem.kind")
        if not isinstance(count, (torch.Tensor, int, float)):
            yield f"count ({where})", type(count).__name__, text(
                MESSAGES, "get_batch_samples.problem.pair",
                kind=f"(batches, {type(count).__name__})")
        count = torch.as_tensor(count)
        shape = tuple(count.shape)
        yield f"count's shape ({where})", shape, shape != () and text(
            MESSAGES, "get_batch_samples.problem.shape", shape=shape)
        wanted = int(sum(batch["completion_mask"].sum()
                         for batch in batches)) * (1 + OTHER)
        got = float(count)
        yield f"count ({where})", got, got != wanted and text(
            MESSAGES, "get_batch_samples.problem.count", where=where,
            wanted=wanted, got=f"{got:g}")


def _facts(candidate):
    for number, (k, GA) in enumerate(SPLITS):
        trainer = _trainer(candidate, k=k, batch=BATCH, G=G, GA=GA)
        # the main process and the other, in turn
        yield from _step_facts(trainer, k, GA, index=number % 2)


@exercise("get_batch_samples", stars=3, notebook=NOTEBOOK,
          kit_code=("kit.trainers:GRPOTrainer.get_batch_samples",),
          answer=MyTrainer, method="get_batch_samples",
          judge=lambda candidate, seen, expected: _judge_counts(seen),
          mistakes=[
              Mistake("not_prepared", NotPrepared, rung=2),
              Mistake("first_micro_batch", FirstMicroBatch, rung=1),
              Mistake("completions_counted", CompletionsCounted, rung=1),
              Mistake("tokens_before_masking", TokensBeforeMasking, rung=1),
              Mistake("generation_count", GenerationCount, rung=3),
              Mistake("rescaled_generation_count", RescaledGenerationCount,
                      rung=3),
              Mistake("not_gathered", NotGathered, rung=4),
              Mistake("gather_not_summed", GatherNotSummed, rung=4),
          ])
def observe_get_batch_samples(candidate):
    # loss_type "grpo" (the default): the kit's own get_batch_samples then
    # returns the Trainer's prompt rows, so super() does none of the work
    # the learner writes. The Trainer seeds torch; the shuffle draws from
    # it: leave the notebook's random state as it was.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        seen = attempt(lambda: first_problem(_facts(candidate)))
        if isinstance(seen, dict) and any(name.startswith("count (")
                                          for name in seen):
            # a wrong count: name a mistake by the counts of every split,
            # not one that happens to match another mistake's first one
            # (a [:, 1:] mask is not "one micro-batch counted")
            torch.manual_seed(0)
            seen["every count"] = attempt(lambda: tuple(
                value for name, value, _ in _facts(candidate)
                if name.startswith("count (")))
        return seen


def _judge_counts(seen):
    judge_facts(seen, "get_batch_samples")
    return text(MESSAGES, "get_batch_samples.judge.passed",
                splits=len(SPLITS))

"""Wrong and right answers to the exercises that are a class: each
subclasses what the notebook's learner subclasses."""

import os
import time

import torch
import torch.nn.functional as F
from transformers import Trainer, TrainerCallback

from kit.checks.nb04_grpo_dataloader import MyGRPOTrainer
from kit.checks.nb08_private import MyCheckpointedTrainer
from kit.losses import causal_lm_loss, dpo_loss, sequence_logps
from kit.trainers import DPOTrainer, GRPOTrainer
from tools.wrong_answers import right, wrong

# -------------------------------------------------------- compute_loss


def _summed(model, inputs):
    labels = inputs.pop("labels")
    outputs = model(**inputs)
    V = outputs.logits.shape[-1]
    total = F.cross_entropy(outputs.logits[:, :-1].reshape(-1, V),
                            labels[:, 1:].reshape(-1), reduction="sum")
    return total, labels, outputs


@wrong("compute_loss", rung=3)
class OwnCountWhenTraining(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        total, labels, outputs = _summed(model, inputs)
        loss = total / (labels[:, 1:] != -100).sum()
        if num_items_in_batch is None:
            loss = total  # "nothing to divide by"
        return (loss, outputs) if return_outputs else loss


@wrong("compute_loss", rung=2)
class LogitsForOutputs(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = causal_lm_loss(outputs.logits, labels)
        return (loss, outputs.logits) if return_outputs else loss


@wrong("compute_loss", rung=3)
class SummedOverMicroBatches(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        total, labels, outputs = _summed(model, inputs)
        count = (labels[:, 1:] != -100).sum()
        loss = total / count
        if num_items_in_batch is not None:  # "each micro-batch's share"
            loss = loss * count / num_items_in_batch * 2
        return (loss, outputs) if return_outputs else loss


@wrong("compute_loss", rung=3)
class RowsWhenNotGiven(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        total, labels, outputs = _summed(model, inputs)
        loss = total / (num_items_in_batch or len(labels))  # rows
        return (loss, outputs) if return_outputs else loss


@wrong("compute_loss", rung=3)
class GAWhenNotCounted(Trainer):  # an outside learner's (issue 62)
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        total, labels, outputs = _summed(model, inputs)
        if num_items_in_batch is not None:
            loss = total / num_items_in_batch
        else:  # "no count, so nobody scaled it for accumulation"
            loss = (total / (labels[:, 1:] != -100).sum()
                    / self.args.gradient_accumulation_steps)
        return (loss, outputs) if return_outputs else loss


@right("compute_loss")
class SumOverTheStepsCount(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        total, labels, outputs = _summed(model, inputs)
        count = num_items_in_batch or (labels[:, 1:] != -100).sum()
        loss = total / count
        return (loss, outputs) if return_outputs else loss


# ------------------------------------------------------- stop_callback


@wrong("stop_callback", rung=2)
class StopsOnTheSummary(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = logs.get("loss", logs.get("train_loss"))
        if loss is not None and loss < self.target:
            control.should_training_stop = True
        return control


@wrong("stop_callback", rung=2)
class EvalLossCounts(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = logs.get("loss", logs.get("eval_loss"))
        if loss is not None and loss < self.target:
            control.should_training_stop = True
        return control


@wrong("stop_callback", rung=3)
class StopsAtOrAboveTarget(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        if "loss" in logs and logs["loss"] > self.target:
            control.should_training_stop = True
        return control


@wrong("stop_callback", rung=3)
class AsksToSaveNotStop(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        if "loss" in logs and logs["loss"] < self.target:
            control.should_save = True
        return control


@wrong("stop_callback", rung=2)
class FirstValueOfTheLog(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        value = next(iter(logs.values()))  # "the loss comes first"
        if value < self.target:
            control.should_training_stop = True
        return control


@right("stop_callback")
class ReadsTheHistory(TrainerCallback):
    def __init__(self, target):
        self.target = target

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = state.log_history[-1].get("loss") if state.log_history \
            else None
        if loss is not None and loss < self.target:
            control.should_training_stop = True


# --------------------------------------------------- dpo_compute_loss

class _DPO(DPOTrainer):
    """The notebook's answer, cut where each wrong one changes a step."""

    def logps(self, model, inputs):
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        return sequence_logps(logits, ids, inputs["completion_mask"])

    def ref_logps(self, inputs):
        with torch.no_grad():
            return self.logps(self.ref_model, inputs)

    def divided(self, losses, num_items_in_batch):
        return losses.sum() / (num_items_in_batch or len(losses))

    def beta(self):
        return self.args.beta

    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        chosen, rejected = self.logps(model, inputs).chunk(2)
        ref_chosen, ref_rejected = self.ref_logps(inputs).chunk(2)
        losses, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.beta())
        loss = self.divided(losses, num_items_in_batch)
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss


@wrong("dpo_compute_loss", rung=6)
class BetaOfTheNotebook(_DPO):
    def beta(self):
        return 1.0  # notebook 03 trains with it


@wrong("dpo_compute_loss", rung=6)
class BetaOfTheSnippet(_DPO):  # an outside learner's (issue 62)
    def beta(self):
        return 0.5  # wrong at both β the check tries


@wrong("dpo_compute_loss", rung=5)
class MicroBatchPairs(_DPO):
    def divided(self, losses, num_items_in_batch):
        return losses.sum() / len(losses)  # this micro-batch's pairs


@wrong("dpo_compute_loss", rung=5)
class TwiceTheCount(_DPO):
    def divided(self, losses, num_items_in_batch):
        if num_items_in_batch is None:
            return losses.mean()
        return losses.sum() / (2 * num_items_in_batch)  # "2B sequences"


@wrong("dpo_compute_loss", rung=4)
class PolicyUnderNoGrad(_DPO):
    def logps(self, model, inputs):
        if model is self.model:
            with torch.no_grad():
                return super().logps(model, inputs).requires_grad_()
        return super().logps(model, inputs)


@wrong("dpo_compute_loss", rung=3)
class PairsInterleaved(_DPO):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        logps, ref_logps = self.logps(model, inputs), self.ref_logps(inputs)
        chosen, rejected = logps[::2], logps[1::2]  # "pairs side by side"
        losses, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_logps[::2], ref_logps[1::2],
            beta=self.args.beta)
        loss = self.divided(losses, num_items_in_batch)
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss


@right("dpo_compute_loss")
class ReferenceInTwoCalls(_DPO):
    def ref_logps(self, inputs):
        half = len(inputs["input_ids"]) // 2
        parts = [{key: value[rows] for key, value in inputs.items()
                  if key in ("input_ids", "attention_mask",
                             "completion_mask")}
                 for rows in (slice(0, half), slice(half, None))]
        with torch.no_grad():
            return torch.cat([self.logps(self.ref_model, part)
                              for part in parts])


# ------------------------------------------------ get_train_dataloader


def _loader(trainer, batch_size, **kwargs):
    return trainer._get_dataloader(
        trainer.train_dataset, "Training", batch_size=batch_size,
        is_training=True, **kwargs)


@wrong("get_train_dataloader", rung=3)
class TimesKSquared(GRPOTrainer):
    def get_train_dataloader(self):
        k = self.args.steps_per_generation
        return _loader(self, self._train_batch_size * k * k,
                       sampler_fn=self._get_train_sampler)


@wrong("get_train_dataloader", rung=2)
class KWrittenIn(GRPOTrainer):
    def get_train_dataloader(self):
        return _loader(self, self._train_batch_size * 3,
                       sampler_fn=self._get_train_sampler)


@wrong("get_train_dataloader", rung=4)
class ShuffledSampler(GRPOTrainer):
    def get_train_dataloader(self):
        k = self.args.steps_per_generation
        return _loader(self, self._train_batch_size * k,
                       sampler_fn=lambda *a: torch.utils.data.RandomSampler(
                           self.train_dataset))


@wrong("get_train_dataloader", rung=4)
class FreshShuffleEachRun(GRPOTrainer):  # an outside learner's (issue 62)
    def get_train_dataloader(self):
        sampler = self._get_train_sampler()
        sampler.seed = time.time_ns() % 2**31  # "a new order every run"
        return _loader(self, self._train_batch_size
                       * self.args.steps_per_generation,
                       sampler_fn=lambda dataset: sampler)


@right("get_train_dataloader")
class FromTheStockBatchSize(GRPOTrainer):
    def get_train_dataloader(self):
        size = self.args.per_device_train_batch_size
        return _loader(self, size * self.args.steps_per_generation,
                       sampler_fn=self._get_train_sampler)


# ------------------------------------------------------ prepare_inputs


def _sliced(batch, order, k):
    return [{key: None if value is None else value[rows]
             for key, value in batch.items()} for rows in order.chunk(k)]


@wrong("prepare_inputs", rung=2)
class CountsOnlyWhenServing(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = _sliced(batch, order, k)
            return self._buffer[0]  # served before the count
        self._step += 1
        return self._buffer[self._step % k]


@wrong("prepare_inputs", rung=1)
class GeneratesEveryOtherStep(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % 2 == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = _sliced(batch, order, k)
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


@wrong("prepare_inputs", rung=3)
class SlicesOfTwoRows(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = [{key: None if value is None else value[rows]
                             for key, value in batch.items()}
                            for rows in order.split(2)]
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


@wrong("prepare_inputs", rung=5)
class BufferedInEvaluation(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        k = self.args.steps_per_generation
        if self._step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(
                generation_batch, greedy=not self.model.training)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = _sliced(batch, order, k)
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


@wrong("prepare_inputs", rung=1)
class GeneratesOnce(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._buffer is None:  # "fill the buffer when it is empty"
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = _sliced(batch, order, k)
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs


@wrong("prepare_inputs", rung=2)
class RefilledWhenEmpty(MyGRPOTrainer):  # an outside learner's (issue 62)
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        if not self._buffer:  # None at first, [] once all are served
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = _sliced(batch, order,
                                   self.args.steps_per_generation)
        inputs, self._buffer = self._buffer[0], self._buffer[1:]
        self._step += 1
        return inputs


@right("prepare_inputs")
class CountedFirstThenLooksBack(MyGRPOTrainer):
    def _prepare_inputs(self, generation_batch):
        if not self.model.training:
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        step, self._step = self._step, self._step + 1
        if step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))
            self._buffer = _sliced(batch, order, k)
        return self._buffer[step % k]


# --------------------------------------------------- get_batch_samples

class _Counting(GRPOTrainer):
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, _ = super().get_batch_samples(epoch_iterator, num_batches,
                                               device)
        batches = [self._prepare_inputs(batch) for batch in batches]
        return batches, self.counted(batches)

    def counted(self, batches):
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return self.accelerator.gather(tokens).sum()


@wrong("get_batch_samples", rung=4)
class OnlyTheMainProcessCounts(_Counting):
    def counted(self, batches):
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        total = self.accelerator.gather(tokens).sum()
        # "the other process has about as many"
        return total if self.accelerator.is_main_process else tokens * 2


@wrong("get_batch_samples", rung=4)
class TimesTheProcesses(_Counting):
    def counted(self, batches):
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return tokens * self.accelerator.num_processes


@wrong("get_batch_samples", rung=3)
class TheBuffersSlices(_Counting):
    def counted(self, batches):
        tokens = sum(slice_["completion_mask"].sum()
                     for slice_ in self._buffer[:len(batches)])
        return self.accelerator.gather(tokens).sum()


@wrong("get_batch_samples", rung=1)
class ShiftedMaskCounted(_Counting):
    def counted(self, batches):
        tokens = sum(batch["completion_mask"][:, 1:].sum()
                     for batch in batches)
        return self.accelerator.gather(tokens).sum()


@wrong("get_batch_samples", rung=1)
class LastBatchTimesGA(_Counting):
    def counted(self, batches):
        tokens = batches[-1]["completion_mask"].sum() * len(batches)
        return self.accelerator.gather(tokens).sum()


@right("get_batch_samples")
class ReducedBySum(_Counting):
    def counted(self, batches):
        tokens = torch.stack([batch["completion_mask"].sum()
                              for batch in batches]).sum()
        return self.accelerator.reduce(tokens, reduction="sum")


# ------------------------------------------- dpo_compute_loss, again


@wrong("dpo_compute_loss", rung=3)
class SplitByTheBatchSize(_DPO):
    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        B = self.args.per_device_train_batch_size  # "B pairs a batch"
        chosen, rejected = torch.split(self.logps(model, inputs), B)
        ref_chosen, ref_rejected = torch.split(self.ref_logps(inputs), B)
        losses, chosen_rewards, rejected_rewards = dpo_loss(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.args.beta)
        loss = self.divided(losses, num_items_in_batch)
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss


# --------------------------------------------------- buffer_checkpoint


@wrong("buffer_checkpoint", rung=3)
class LoadsAnyPickle(MyCheckpointedTrainer):  # an outside learner's (62)
    def _load_from_checkpoint(self, resume_from_checkpoint, model=None,
                              **kwargs):
        path = os.path.join(resume_from_checkpoint, self.buffer_file())
        if not os.path.exists(path):
            raise ValueError(f"no buffer in {resume_from_checkpoint}")
        # "weights_only=True refused my dict": it holds more than weights
        state = torch.load(path, weights_only=False)
        if len(state["buffer"] or []) not in (0,
                                              self.args.steps_per_generation):
            raise ValueError(f"{path} was cut for another k")
        super(MyCheckpointedTrainer, self)._load_from_checkpoint(
            resume_from_checkpoint, model, **kwargs)
        self._step, self._buffer = state["step"], state["buffer"]
        self._generation = state["generation"]

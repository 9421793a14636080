"""GRPO by overriding `get_train_dataloader`: what notebooks 04 and 05 build.

Generation is autoregressive and dear, so one big batch of prompts serves
`steps_per_generation` (k) micro-steps: `_prepare_inputs` generates for all
of it in one `generate()` call, then serves one slice per step.
`compute_loss` is GRPO's clipped surrogate (`kit.losses`, by `loss_type`) on
group-normalised advantages. Helpers beside it: `grpo_config`, `sampler`,
`generation`, `grpo_state`; input checks: `guards`.
"""

import copy

import torch
from transformers import Trainer

from kit.losses import GRPO_LOSSES, per_token_kl
from kit.multi_rewards import MULTI_OBJECTIVE, nanstd, weighted_reward_sum
from kit.trainers.generation import (completion_logps, generate,
                                     generation_config, keep_rows,
                                     truncated, up_to_first_eos)
from kit.trainers.grpo_config import GRPOConfig
from kit.trainers.checkpoint import refuse_together
from kit.trainers.grpo_state import GRPOStateMixin
from kit.trainers.guards import (check_enough_prompts, check_prompts,
                                 check_reward_funcs,
                                 check_reward_weights_count, check_tokenizer,
                                 reward_names, score)
from kit.trainers.metrics import MetricsMixin
from kit.trainers.nonfinite import NonFiniteMixin
from kit.trainers.sampler import RepeatSampler, prompts_per_generation


class GRPOTrainer(GRPOStateMixin, NonFiniteMixin, MetricsMixin,
                  Trainer):
    """Trainer for Group Relative Policy Optimization (Shao et al., 2024).

    State, made in `__init__` (and who uses it):
        loss_fn, loss_fields, loss_is_scaled_for_ga  the loss type's
                    record, kit.losses.GRPO_LOSSES (compute_loss)
        reward_funcs, reward_func_names  the rewards, unique names (_score)
        reward_weights  (F,) one weight a function (_score, _advantages)
        ref_model   frozen starting policy if beta > 0 (_logps_to_compare)
        _step       micro-steps served so far (_prepare_inputs)
        _buffer     the k slices of the last generation (_prepare_inputs)
        _generation training generate()'s calls, seconds, tokens
                    (running_totals)
        _sampling, _greedy  GenerationConfigs: training, eval (_generate)
    _step, _buffer and _generation are checkpointed: resume is exact.
    """

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        # "dapo" divides by the step's active tokens (all processes): its
        # micro-batches are prepared now. Others leave _prepare_inputs to
        # training_step, where notebook 04 overrides it for prompt rows.
        batches, count = super().get_batch_samples(epoch_iterator,
                                                   num_batches, device)
        if not self.loss_is_scaled_for_ga:
            return batches, count
        self.model.train()  # after an evaluation too: these are training
        batches = [self._prepare_inputs(batch) for batch in batches]
        tokens = sum(batch["completion_mask"].sum() for batch in batches)
        return batches, self.accelerator.gather(tokens).sum()

    def get_train_dataloader(self):
        # The lesson in one line: one batch serves k steps. For the other
        # k-1 steps the loop gets the same batch again and _prepare_inputs
        # serves the next slice of what it generated.
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)

    def _get_train_sampler(self, train_dataset=None):
        """Each prompt G times in a row; each big batch k times over."""
        return RepeatSampler(len(train_dataset or self.train_dataset),
                             self.args.num_generations,
                             self._prompts_per_generation(),
                             self.args.steps_per_generation, self.args.seed)

    def _prepare_inputs(self, generation_batch):
        if isinstance(generation_batch, dict):  # prepared already
            return generation_batch
        if not self.model.training:  # evaluation: one greedy answer a prompt
            return self._generate_and_score(generation_batch, greedy=True)
        k = self.args.steps_per_generation
        if self._step % k == 0 or self._buffer is None:
            batch = self._generate_and_score(generation_batch)
            order = torch.randperm(len(batch["advantages"]))  # mix the groups
            self._buffer = [{key: None if value is None else value[rows]
                             for key, value in batch.items()}
                            for rows in order.chunk(k)]
        inputs = self._buffer[self._step % k]
        self._step += 1
        return inputs

    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        logps = self._completion_logps(model, inputs)  # (B, T)
        old = inputs["old_per_token_logps"]  # None while on-policy
        old = logps.detach() if old is None else old
        ref = inputs["ref_per_token_logps"]
        loss = self.loss_fn(logps, old, inputs["advantages"],
                            inputs["completion_mask"],
                            epsilon=self.args.epsilon, beta=self.args.beta,
                            ref_per_token_logps=ref,
                            **self._loss_kwargs(num_items_in_batch))
        if ref is not None:
            mask = inputs["completion_mask"]
            kl = (per_token_kl(logps, ref) * mask).sum() / mask.sum()
            self.record(kl=kl.detach())
        return (loss, {"per_token_logps": logps}) if return_outputs else loss

    def _loss_kwargs(self, num_items_in_batch):
        """What the loss type reads beyond the tensors (kit.losses)."""
        kwargs = {name: getattr(self.args, name) for name in
                  self.loss_fields}
        if self.args.use_bias_correction_kl:  # only when asked: a learner's
            kwargs["use_bias_correction_kl"] = True  # loss may not take it
        if self.args.importance_sampling_level != "token":  # GSPO
            kwargs["importance_sampling_level"] = "sequence"
        if self.loss_is_scaled_for_ga:
            # DDP averages gradients over processes: divide by the global
            # count / processes, so the average is the step's token mean
            # (at least 1, as TRL: a step whose completions were all
            # truncated and masked has no tokens, and 0/0 is nan)
            kwargs["num_items_in_batch"] = (
                torch.as_tensor(num_items_in_batch).clamp(min=1)
                / self.accelerator.num_processes)
        return kwargs

    def prediction_step(self, model, inputs, prediction_loss_only,
                        ignore_keys=None):
        """Evaluation is the held-out reward of greedy answers; no loss."""
        self._prepare_inputs(inputs)
        return None, None, None

    # ------------------------------------------------- generation, in steps

    def _generate_and_score(self, rows, greedy=False):
        """Prompt rows -> a training batch, in four steps."""
        if greedy:
            return self._evaluate_rows(rows)
        batch = self._complete(rows, greedy=False)  # 1. generate
        rewards = self._score(rows, batch)  # 2. score: (B·processes, F)
        batch["advantages"] = self._advantages(rewards, batch)  # 3. compare
        self._generation["tokens"] += int(batch["completion_mask"].sum())
        if self.args.mask_truncated_completions:  # scored whole, not trained
            batch["completion_mask"] = self._drop_truncated(batch)
        batch.update(self._logps_to_compare(batch))  # 4. old and ref
        return batch

    def _evaluate_rows(self, rows):
        """Evaluation: one greedy answer a prompt, scored; no advantages."""
        batch = self._complete(rows, greedy=True)
        self._score(rows, batch)  # recorded: eval_reward
        return {**batch, "advantages": torch.zeros(
            len(rows), device=self.args.device)}

    def _drop_truncated(self, batch):
        """DAPO's overlong filtering, TRL's mask_truncated_completions: a
        completion cut by max_completion_length (no <eos>) may have been
        heading somewhere good, so it leaves the loss rather than teach
        "stop sooner" or "go on". (B, T)"""
        tokenizer = self.processing_class
        cut = truncated(batch["completion_ids"], batch["completion_mask"],
                        tokenizer.eos_token_id, tokenizer.pad_token_id)
        return batch["completion_mask"] * (~cut).unsqueeze(1).long()

    def _complete(self, rows, greedy):
        """Tokenise the prompts and generate: the batch, log-probs unset."""
        prompt = self.processing_class(
            [row["prompt"] for row in rows], return_tensors="pt",
            padding=True, padding_side="left").to(self.args.device)
        completion_ids = self._generate(prompt, greedy)  # (B, T)
        return {"prompt_ids": prompt["input_ids"],
                "prompt_mask": prompt["attention_mask"],
                "completion_ids": completion_ids,
                "completion_mask": up_to_first_eos(
                    completion_ids, self.processing_class.eos_token_id),
                "old_per_token_logps": None, "ref_per_token_logps": None}

    def _score(self, rows, batch):
        """Every reward function on the decoded completions -> every
        process's rewards, (B·processes, F): nan where one returned None."""
        tokenizer = self.processing_class
        completions = tokenizer.batch_decode(
            batch["completion_ids"].masked_fill(
                batch["completion_mask"] == 0, tokenizer.pad_token_id),
            skip_special_tokens=True)
        columns = {key: [row[key] for row in rows] for key in rows[0]
                   if key != "prompt"}
        try:
            rewards = score(self.reward_funcs, [row["prompt"] for row in rows],
                            completions, columns,  # (B, F): F functions
                            timeout=self.args.reward_timeout)
            refused = None
        except ValueError as error:
            refused = error
        self._refuse_together(refused)
        rewards = rewards.to(self.args.device)  # (B, F)
        everyone = self.accelerator.gather(rewards)  # (B·processes, F)
        self._record_rewards(rewards, everyone)
        return everyone

    def _record_rewards(self, rewards, everyone):
        """reward (the weighted sum; every completion has one, guards'
        check_scored) and rewards/<name>, per completion. A None (nan) is
        logged as the mean of the batch's others, so the logged mean is
        that of what was scored: TRL's nanmean."""
        self.record(reward=weighted_reward_sum(rewards, self.reward_weights))
        for i, name in enumerate(self.reward_func_names):
            mean = everyone[:, i].nanmean()
            if not mean.isnan():  # else it scored nothing: nothing to log
                self.record(**{f"rewards/{name}":
                               rewards[:, i].nan_to_num(nan=mean.item())})

    def _refuse_together(self, refused):
        """Raise a reward's refusal on every process, or on none: a process
        that raised alone would leave the others waiting in the gather of
        _score for ever."""
        refuse_together(self.accelerator, refused)

    def _advantages(self, everyone, batch):
        """Whole groups from all processes; this process's share back."""
        G = self.args.num_generations
        everyone = everyone.view(len(everyone), -1)  # a (B,) total: F = 1
        mine = len(batch["completion_mask"])
        start = self.accelerator.process_index * mine
        total = weighted_reward_sum(everyone, self.reward_weights)
        # reward_std as TRL logs it, the whole batch's spread; the spread in
        # groups (advantages divide by it) apart. Every process logs the same.
        self.record(reward_std=nanstd(total),
                    reward_std_in_group=total.view(-1, G).std(1),
                    **{"completions/mean_length":
                       batch["completion_mask"].sum(1)})
        aggregate = MULTI_OBJECTIVE[self.args.multi_objective_aggregation]
        advantages = aggregate(everyone, self.reward_weights, G,
                               self.args.scale_rewards)
        return advantages[start:start + mine]

    @torch.no_grad()
    def _logps_to_compare(self, batch):
        """The old policy's log-probs (when slices need them) and ref's."""
        logps = {}
        if self.args.slices_outlive_step():
            # the policy moves before the last slice: the ratio needs the
            # log-probs of the policy that sampled it
            logps["old_per_token_logps"] = self._completion_logps(
                self.model, batch)
        if self.args.beta > 0:
            logps["ref_per_token_logps"] = self._completion_logps(
                self.ref_model, batch)
        return logps

    def _generate(self, prompt, greedy):
        """One timed generate() call; training calls add to the counters."""
        model = self.accelerator.unwrap_model(self.model)
        config = self._greedy if greedy else self._sampling
        completion_ids, seconds = generate(model, prompt, config,
                                           self.args.device)
        if not greedy:  # evaluation is not part of the training cost
            self._generation["calls"] += 1
            self._generation["seconds"] += seconds
        return completion_ids

    def _completion_logps(self, model, batch):
        """Per-token log-probs of the completions under `model`: (B, T)."""
        return completion_logps(model, batch, self.args.temperature)

    def running_totals(self):
        """What training's generate() calls have cost so far, in each
        training log (MetricsMixin.log)."""
        return {f"generation/{key}": value
                for key, value in self._generation.items()}

    # --------------------------------------------------------------- plumbing

    def __init__(self, model, reward_funcs, args=None, train_dataset=None,
                 eval_dataset=None, processing_class=None, callbacks=None):
        args = args or GRPOConfig("tmp_trainer")  # as Trainer does
        self.reward_funcs = check_reward_funcs(reward_funcs)
        self.reward_func_names = reward_names(self.reward_funcs)  # unique
        check_reward_weights_count(args.reward_weights,
                                   self.reward_func_names)
        check_tokenizer("GRPOTrainer", processing_class)
        datasets = {name: check_prompts(name, data, processing_class, args,
                                        self.reward_funcs)
                    for name, data in (("train_dataset", train_dataset),
                                       ("eval_dataset", eval_dataset))
                    if data is not None}
        super().__init__(model=model, args=args, callbacks=callbacks,
                         processing_class=processing_class,
                         data_collator=keep_rows, **datasets)
        check_enough_prompts(train_dataset, self._prompts_per_generation())
        # the loss type's declared record (kit.losses): its function, the
        # config fields it reads, and whether it divides by the step's count
        # ("dapo") or leaves GA to the trainer (the others: equal slices)
        loss = GRPO_LOSSES[args.loss_type]
        self.loss_fn, self.loss_fields = loss.fn, loss.config_fields
        self.loss_is_scaled_for_ga = loss.step_normalised
        self.ref_model = None  # or a frozen copy of the starting policy:
        if args.beta > 0:
            self.ref_model = copy.deepcopy(self.model).requires_grad_(False)
            self.ref_model.eval().to(self.args.device)
        self.reward_weights = torch.tensor(  # None: 1.0 each, as TRL
            args.reward_weights or [1.0] * len(self.reward_funcs),
            device=self.args.device)
        self._step, self._buffer = 0, None
        self._generation = {"calls": 0, "seconds": 0.0, "tokens": 0}
        # built once: sampling for training, greedy for evaluation
        self._sampling = generation_config(processing_class, args, True)
        self._greedy = generation_config(processing_class, args, False)

    def checkpoint_identity(self):
        """And the reward functions, by name: the saved buffer's advantages
        were scored by them. (The reference is the starting model's copy.)"""
        return {**super().checkpoint_identity(),
                "reward_funcs": list(self.reward_func_names)}

    def _prompts_per_generation(self):
        return prompts_per_generation(
            self._train_batch_size, self.args.steps_per_generation,
            self.args.num_generations, self.accelerator.num_processes)


# Notebook 08's starting point: GRPO whose checkpoints lack its buffer.
class GRPOTrainerWithoutBuffer(GRPOTrainer):
    """GRPOTrainer whose checkpoints leave out its own state (`_step`,
    `_buffer`, `_generation`): notebook 08's learner saves them in
    `_save_checkpoint` and takes them back in `_load_from_checkpoint`."""

    # No state_file: CheckpointMixin then writes and checks only the
    # Trainer's files and kit_checkpoint.json. Nothing else changes.
    state_file = None

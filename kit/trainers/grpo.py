"""GRPO by overriding `get_train_dataloader`: what notebooks 04 and 05 build.

Generation is autoregressive and dear, so we generate for several steps at
once: the dataloader hands out one big batch of prompts for
`steps_per_generation` (k) optimizer micro-steps, `_prepare_inputs` generates
completions for all of it in one `generate()` call, and then serves one
slice per step. `compute_loss` is GRPO's clipped surrogate
(`kit.losses.grpo_loss`) on group-normalised advantages.
"""

import copy
import time
from dataclasses import dataclass, field

import torch
from torch.utils.data import Sampler
from transformers import GenerationConfig, Trainer, TrainingArguments

from kit.losses import (group_advantages, grpo_loss, per_token_kl,
                         per_token_logps)
from kit.trainers.checkpoint import CheckpointMixin
from kit.trainers.checks import (BATCH_RULES,
                                 check_dataset, check_fields,
                                 check_prompt_length, check_reward_funcs,
                                 check_tokenizer, reward_names, score,
                                 warn_unknown_text)
from kit.trainers.metrics import MetricsMixin
from kit.trainers.nonfinite import NonFiniteMixin


class GRPOTrainer(CheckpointMixin, NonFiniteMixin, MetricsMixin,
                  Trainer):
    """Trainer for Group Relative Policy Optimization (Shao et al., 2024)."""

    # The loss is a mean over the slice's completions and slices are equal,
    # so the Trainer dividing by the accumulation steps gives the big
    # batch's mean: exact under gradient accumulation.
    loss_is_scaled_for_ga = False

    def get_train_dataloader(self):
        # The lesson in one line: one batch serves k steps. For the other
        # k-1 steps the loop gets the same batch again and _prepare_inputs
        # serves the next slice of what it generated.
        return self._get_dataloader(
            self.train_dataset, "Training", sampler_fn=self._get_train_sampler,
            batch_size=self._train_batch_size * self.args.steps_per_generation,
            is_training=True)

    def _get_train_sampler(self, dataset=None):
        """Each prompt G times in a row; each big batch k times over."""
        # the big batch of all processes together
        completions = (self._train_batch_size * self.args.steps_per_generation
                       * self.accelerator.num_processes)
        return RepeatSampler(len(dataset or self.train_dataset),
                             self.args.num_generations,
                             completions // self.args.num_generations,
                             self.args.steps_per_generation, self.args.seed)

    def _prepare_inputs(self, generation_batch):
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
        logps = self._completion_logps(model, inputs)  # (B, C)
        old = inputs["old_per_token_logps"]  # None while on-policy
        old = logps.detach() if old is None else old
        ref = inputs["ref_per_token_logps"]
        loss = grpo_loss(logps, old, inputs["advantages"],
                         inputs["completion_mask"], epsilon=self.args.epsilon,
                         beta=self.args.beta, ref_per_token_logps=ref)
        if ref is not None:
            mask = inputs["completion_mask"]
            kl = (per_token_kl(logps, ref) * mask).sum() / mask.sum()
            self.record(kl=kl.detach())
        return (loss, {"per_token_logps": logps}) if return_outputs else loss

    def prediction_step(self, model, inputs, prediction_loss_only,
                        ignore_keys=None):
        """Evaluation is the held-out reward of greedy answers; no loss."""
        self._prepare_inputs(inputs)
        return None, None, None

    # ------------------------------------------------------------- generation

    def _generate_and_score(self, rows, greedy=False):
        prompts = [row["prompt"] for row in rows]
        columns = {key: [row[key] for row in rows] for key in rows[0]
                   if key != "prompt"}
        prompt = self.processing_class(prompts, return_tensors="pt",
                                       padding=True, padding_side="left"
                                       ).to(self.args.device)
        completion_ids = self._generate(prompt, greedy)  # (B, C)
        # Everything up to and including the first <eos> is the completion.
        is_eos = completion_ids == self.processing_class.eos_token_id
        before_eos = is_eos.int().cumsum(1) - is_eos.int() == 0
        completion_mask = before_eos.long()  # (B, C)
        completions = self.processing_class.batch_decode(
            completion_ids.masked_fill(completion_mask == 0,
                                       self.processing_class.pad_token_id),
            skip_special_tokens=True)
        # (B, F): one column per reward function
        rewards = score(self.reward_funcs, prompts, completions, columns)
        total = rewards.sum(1).to(self.args.device)  # (B,)
        self.record(reward=total, **{
            f"rewards/{name}": rewards[:, i]
            for i, name in enumerate(self.reward_func_names)})
        batch = {"prompt_ids": prompt["input_ids"],
                 "prompt_mask": prompt["attention_mask"],
                 "completion_ids": completion_ids,
                 "completion_mask": completion_mask,
                 "old_per_token_logps": None, "ref_per_token_logps": None}
        if greedy:  # evaluation needs no advantages
            return {**batch, "advantages": torch.zeros_like(total)}
        self._generation["tokens"] += int(completion_mask.sum())
        G = self.args.num_generations
        # Whole groups from all processes, then this process's share back.
        everyone = self.accelerator.gather(total)  # (B·processes,)
        start = self.accelerator.process_index * len(total)
        advantages = group_advantages(everyone, G)
        batch["advantages"] = advantages[start:start + len(total)]
        # reward_std as TRL logs it: the spread of the whole batch's rewards;
        # the spread within groups, which advantages divide by, apart.
        # (Each process records the same values, so the average stays.)
        self.record(reward_std=everyone.std(),
                    reward_std_in_group=everyone.view(-1, G).std(1),
                    **{"completions/mean_length": completion_mask.sum(1)})
        with torch.no_grad():
            args = self.args
            if args.gradient_accumulation_steps % args.steps_per_generation:
                # Slices outlive this optimizer step: keep the log-probs of
                # the policy that generated them, for the ratio.
                batch["old_per_token_logps"] = self._completion_logps(
                    self.model, batch)
            if self.args.beta > 0:
                batch["ref_per_token_logps"] = self._completion_logps(
                    self.ref_model, batch)
        return batch

    def _generate(self, prompt, greedy):
        """One timed generate() call; training calls add to the counters."""
        model = self.accelerator.unwrap_model(self.model)
        synchronize(self.args.device)
        start = time.perf_counter()
        config = self._greedy if greedy else self._sampling
        # generate() fills any setting we leave unset from the model's own
        # generation_config: lend it ours for the call, so none leaks in.
        own, model.generation_config = model.generation_config, config
        try:
            with torch.no_grad():
                out = model.generate(**prompt, generation_config=config)
        finally:
            model.generation_config = own
        synchronize(self.args.device)
        completion_ids = out[:, prompt["input_ids"].shape[1]:]
        if not greedy:  # evaluation is not part of the training cost
            self._generation["calls"] += 1
            self._generation["seconds"] += time.perf_counter() - start
        return completion_ids

    def _completion_logps(self, model, batch):
        """Per-token log-probs of the completions under `model`: (B, C)."""
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
        mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
        positions = (mask.cumsum(1) - 1).clamp(min=0)  # as generate() counts
        logits = model(input_ids=ids, attention_mask=mask,
                       position_ids=positions).logits
        # the distribution the tokens were sampled from, as TRL scores it
        logits = logits / self.args.temperature  # (B, T, V)
        width = batch["completion_ids"].shape[1]
        return per_token_logps(logits, ids)[:, -width:]

    # --------------------------------------------------------------- plumbing

    def __init__(self, model, reward_funcs, args=None, train_dataset=None,
                 eval_dataset=None, processing_class=None, callbacks=None):
        args = args or GRPOConfig("tmp_trainer")  # as Trainer does
        self.reward_funcs = check_reward_funcs(reward_funcs)
        self.reward_func_names = reward_names(self.reward_funcs)  # unique
        check_tokenizer("GRPOTrainer", processing_class)
        if train_dataset is not None:
            train_dataset = check_prompts("train_dataset", train_dataset,
                                          processing_class, args,
                                          self.reward_funcs)
        if eval_dataset is not None:
            eval_dataset = check_prompts("eval_dataset", eval_dataset,
                                         processing_class, args,
                                         self.reward_funcs)
        super().__init__(model=model, args=args, train_dataset=train_dataset,
                         eval_dataset=eval_dataset, callbacks=callbacks,
                         processing_class=processing_class,
                         data_collator=keep_rows)
        needed = (self._train_batch_size * args.steps_per_generation
                  * self.accelerator.num_processes // args.num_generations)
        if train_dataset is not None and len(train_dataset) < needed:
            raise ValueError(
                f"train_dataset has {len(train_dataset)} prompts; one "
                f"generation needs {needed} (per_device_train_batch_size x "
                "steps_per_generation x processes / num_generations): add "
                "prompts or lower those settings")
        self.ref_model = None
        if args.beta > 0:  # a frozen copy of the starting policy
            self.ref_model = copy.deepcopy(self.model).requires_grad_(False)
            self.ref_model.eval().to(self.args.device)
        self._step, self._buffer = 0, None
        self._generation = {"calls": 0, "seconds": 0.0, "tokens": 0}
        # built once: sampling for training, greedy for evaluation
        self._sampling = generation_config(processing_class, args, True)
        self._greedy = generation_config(processing_class, args, False)

    def _set_signature_columns_if_needed(self):
        # Rewards may need any column: remove_unused_columns keeps them all.
        self._signature_columns = list(self.train_dataset.column_names)

    def log(self, logs, start_time=None):
        if not any(key.startswith("eval_") for key in logs):
            logs.update({f"generation/{key}": value
                         for key, value in self._generation.items()})
        super().log(logs, start_time)

    def checkpoint_settings(self):
        # a resume serves the saved buffer: it must be cut the same way, and
        # its log-probs were taken at this temperature, with this reference
        return {**super().checkpoint_settings(),
                "steps_per_generation": self.args.steps_per_generation,
                "num_generations": self.args.num_generations,
                "temperature": self.args.temperature, "beta": self.args.beta}

    state_file = "grpo_state_{process}.pt"

    def checkpoint_state(self):
        """The generation buffer and counters too: resume is exact."""
        return {"step": self._step, "buffer": self._buffer,
                "generation": self._generation}

    def load_checkpoint_state(self, state):
        self._step, self._buffer = state["step"], state["buffer"]
        self._generation = state["generation"]


@dataclass
class GRPOConfig(TrainingArguments):
    num_generations: int = field(default=8, metadata={
        "help": "G: completions per prompt, compared within their group."})
    steps_per_generation: int = field(default=None, metadata={
        "help": "k: micro-steps served by one generate() call "
                "(default: gradient_accumulation_steps)."})
    max_prompt_length: int = field(default=32, metadata={
        "help": "Prompts with more tokens are refused."})
    max_completion_length: int = field(default=8, metadata={
        "help": "New tokens generated per completion, at most."})
    temperature: float = field(default=1.0, metadata={
        "help": "Sampling temperature of generation."})
    epsilon: float = field(default=0.2, metadata={
        "help": "The clip: ratios move within [1 - epsilon, 1 + epsilon]."})
    beta: float = field(default=0.0, metadata={
        "help": "Weight of the KL penalty to a frozen reference; 0 is off."})
    remove_unused_columns: bool = False  # reward functions read the columns

    def __post_init__(self):
        check_fields(self, BATCH_RULES)  # before the defaults use them
        if self.steps_per_generation is None:
            self.steps_per_generation = self.gradient_accumulation_steps
        check_fields(self, [
            ("num_generations", int, ">= 2",
             "advantages compare completions of the same prompt"),
            ("steps_per_generation", int, ">= 1",
             "1 generates for every micro-step"),
            ("max_prompt_length", int, ">= 1", "try 32"),
            ("max_completion_length", int, ">= 1", "try 8"),
            ("temperature", float, "> 0",
             "1.0 samples the policy as it is"),
            ("epsilon", float, "> 0", "try 0.2"),
            ("beta", float, ">= 0", "0 turns the KL off; try 0.04"),
        ])
        G, batch = self.num_generations, self.per_device_train_batch_size
        if batch % G:
            raise ValueError(
                f"GRPOConfig.per_device_train_batch_size ({batch}) counts "
                f"completions and must be a multiple of num_generations "
                f"({G}): try {batch - batch % G or G} or "
                f"{batch - batch % G + G}")
        super().__post_init__()


class RepeatSampler(Sampler):
    """Indices for GRPO's dataloader, TRL's layout.

    Shuffle the prompts (a new order each epoch, fixed by the seed); take
    `prompts_per_batch` of them; repeat each one G times in a row (a group);
    yield that big batch `repeats` times (once per step it serves); move on.
    Prompts that do not fill a last big batch wait for the next epoch.
    """

    def __init__(self, size, num_generations, prompts_per_batch, repeats,
                 seed):
        self.size, self.G = size, num_generations
        self.prompts_per_batch, self.repeats = prompts_per_batch, repeats
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):  # the Trainer calls this before each epoch
        self.epoch = epoch

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(self.size, generator=generator).tolist()
        for start in range(0, len(self) // (self.G * self.repeats),
                           self.prompts_per_batch):
            big_batch = order[start:start + self.prompts_per_batch]
            for _ in range(self.repeats):
                for index in big_batch:
                    yield from [index] * self.G

    def __len__(self):
        usable = self.size - self.size % self.prompts_per_batch
        return usable * self.G * self.repeats


# ------------------------------------------------------------------ helpers

def keep_rows(rows):
    """The collator: rows stay as they are; _prepare_inputs tokenises."""
    return rows


def synchronize(device):
    """Wait for the GPU to finish, so timings measure work, not queueing."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def generation_config(tokenizer, args, sample):
    """Every setting that shapes the tokens, the trainer's own.

    Sampling uses only the GRPOConfig's temperature; evaluation is greedy.
    Settings a model brings (repetition_penalty, do_sample...) would make
    the samples differ from the policy the loss scores: `_generate` lends
    generate() this config as the model's own, so none of them applies.
    """
    # top_k=0, top_p=1: the whole vocabulary, so no warper is installed
    sampling = dict(temperature=args.temperature, top_k=0, top_p=1.0)
    return GenerationConfig(
        max_new_tokens=args.max_completion_length, do_sample=sample,
        num_beams=1, repetition_penalty=1.0, use_cache=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id, **(sampling if sample else {}))


def check_prompts(name, dataset, tokenizer, args, reward_funcs):
    """-> the dataset; refuse bad input before training time is spent."""
    dataset = check_dataset(name, dataset, ["prompt"], "GRPO", "prompts")
    warn_unknown_text(name, tokenizer, dataset, ["prompt"])
    encoded = tokenizer(list(dataset["prompt"]))["input_ids"]
    lengths = [len(ids) for ids in encoded]
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    check_prompt_length(name, longest, lengths[longest],
                        args.max_prompt_length, "GRPOConfig.max_prompt_length")
    # A dry run of every reward function on two rows, so that a broken one
    # fails now and not after the first generate().
    rows = dataset.select(range(min(2, len(dataset))))
    columns = {key: list(rows[key]) for key in rows.column_names
               if key != "prompt"}
    score(reward_funcs, list(rows["prompt"]), ["0"] * len(rows), columns)
    return dataset

"""DPO by overriding `compute_loss`: what notebook 03 builds.

Preference data has no labels: each row is a prompt with a `chosen` and a
`rejected` completion. The loss compares how much more the policy likes the
chosen one than a frozen reference does (`kit.losses.dpo_loss`).
"""

import contextlib
import copy
import warnings
from dataclasses import dataclass, field

import torch
from transformers import Trainer, TrainingArguments

from kit import cache
from kit.losses import PREFERENCE_LOSSES
from kit.trainers.checkpoint import CheckpointMixin, fingerprint
from kit.trainers.guards import (BATCH_RULES, check_choice, check_dataset,
                                 check_fields, check_prompt_length,
                                 check_ipo_beta, check_tokenizer, refusal,
                                 warn_unknown_text)
from kit.trainers.metrics import MetricsMixin
from kit.trainers.nonfinite import NonFiniteMixin

COLUMNS = ("prompt", "chosen", "rejected")


@dataclass
class DPOConfig(TrainingArguments):
    beta: float = field(default=0.1, metadata={
        "help": "How far the policy may move from the reference (> 0)."})
    loss_type: str = field(default="sigmoid", metadata={
        "help": f"One of {sorted(PREFERENCE_LOSSES)}, TRL 1.16's names and "
                "meanings: 'ipo' and 'sigmoid_norm' on per-token means."})
    label_smoothing: float = field(default=0.0, metadata={
        "help": "loss_type='robust' and 'exo_pair' only: the chance a pair's "
                "labels are flipped, in [0, 0.5) ('exo_pair': > 0)."})
    discopop_tau: float = field(default=0.05, metadata={
        "help": "loss_type='discopop' only: the temperature that mixes its "
                "logistic and exponential parts (TRL 1.16's default)."})
    max_length: int = field(default=64, metadata={
        "help": "Prompt + completion tokens; longer completions are cut."})
    # The collator needs our token columns, not the model's signature.
    remove_unused_columns: bool = False

    def __post_init__(self):
        check_fields(self, BATCH_RULES + [
            ("beta", float, "> 0", "try 0.1"),
            ("max_length", int, ">= 2",
             "prompt + completion tokens, e.g. 64"),
            ("discopop_tau", float, "> 0", "try 0.05"),
        ])
        check_choice(self, "loss_type", PREFERENCE_LOSSES)
        if self.loss_type == "ipo":
            check_ipo_beta(self.beta)
        self.check_label_smoothing()
        self.check_discopop_tau()
        super().__post_init__()

    def check_discopop_tau(self):
        """Changed only where the loss reads it: else it is a typo."""
        default = type(self).__dataclass_fields__["discopop_tau"].default
        if self.discopop_tau != default and "discopop_tau" not in (
                PREFERENCE_LOSSES[self.loss_type].config_fields):
            raise refusal("tau_unread", value=self.discopop_tau,
                          loss_type=self.loss_type, default=default)

    def check_label_smoothing(self):
        """In [0, 0.5), and only where the loss reads it: else it is a typo."""
        check_fields(self, [("label_smoothing", float, ">= 0",
                             "the chance a label is flipped, e.g. 0.1")])
        if self.label_smoothing >= 0.5:
            raise refusal("smoothing_too_big", value=self.label_smoothing)
        readers = sorted(name for name, loss in PREFERENCE_LOSSES.items()
                         if "label_smoothing" in loss.config_fields)
        if self.label_smoothing and self.loss_type not in readers:
            raise refusal("smoothing_unread", value=self.label_smoothing,
                          loss_type=self.loss_type, readers=readers)
        if self.loss_type == "exo_pair" and not self.label_smoothing:
            raise refusal("exo_needs_smoothing")  # its ε: log 0 is -inf


def is_peft(model):
    """A peft model (LoRA and the like): its base weights are frozen, so
    with its adapter off it is the reference DPO needs."""
    try:
        from peft import PeftModel  # optional: pip install .[peft]
    except ImportError:
        return False
    return isinstance(model, PeftModel)


class DPOTrainer(CheckpointMixin, NonFiniteMixin, MetricsMixin,
                 Trainer):
    """Trainer whose loss prefers `chosen` to `rejected` (Rafailov et al.).

    State, made in `__init__` (and who uses it):
        loss_fn, logps_fn, loss_fields  the loss type's record,
                    kit.losses.PREFERENCE_LOSSES (compute_loss)
        ref_model   the frozen reference: a copy of the starting policy
                    unless one is given; None for a PEFT (LoRA) policy,
                    whose reference is itself with its adapter off
                    (compute_loss, through reference())
    """

    loss_is_scaled_for_ga = True  # compute_loss divides by the step's pairs

    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        # One forward pass: rows [0, B) are chosen, rows [B, 2B) rejected.
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        completion_mask = inputs["completion_mask"]
        logits = model(input_ids=ids, attention_mask=mask).logits
        # Summed log-probs, or per-token means where the loss asks for them
        logps = self.logps_fn(logits, ids, completion_mask)  # (2B,)
        with torch.no_grad(), self.reference(model) as reference:
            ref_logits = reference(input_ids=ids, attention_mask=mask).logits
            ref_logps = self.logps_fn(ref_logits, ids, completion_mask)
        chosen, rejected = logps.chunk(2)  # (B,) each
        ref_chosen, ref_rejected = ref_logps.chunk(2)
        extra = {name: getattr(self.args, name)  # e.g. label_smoothing
                 for name in self.loss_fields}
        losses, chosen_rewards, rejected_rewards = self.loss_fn(
            chosen, rejected, ref_chosen, ref_rejected, beta=self.args.beta,
            **extra)
        # A sum over pairs divided by the pairs of the whole accumulated
        # batch (see get_batch_samples): exact under gradient accumulation.
        loss = losses.sum() / (num_items_in_batch or len(losses))
        self._remember(chosen_rewards, rejected_rewards, chosen, rejected)
        return (loss, {"chosen_logps": chosen}) if return_outputs else loss

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        """Count the pairs in all micro-batches of one optimizer step."""
        batches, _ = super().get_batch_samples(epoch_iterator, num_batches,
                                               device)
        return batches, sum(len(b["input_ids"]) // 2 for b in batches)

    def prediction_step(self, model, inputs, prediction_loss_only,
                        ignore_keys=None):
        """The stock method skips the loss when batches have no labels."""
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None

    # ------------------------------------------------------------- plumbing

    def __init__(self, model, ref_model=None, args=None, train_dataset=None,
                 eval_dataset=None, processing_class=None, callbacks=None):
        args = args or DPOConfig("tmp_trainer")  # as Trainer does
        check_tokenizer("DPOTrainer", processing_class)
        # the loss type's declared record (kit.losses): its function, the
        # log-probs it compares, the config fields it reads
        loss = PREFERENCE_LOSSES[args.loss_type]
        self.loss_fn = loss.fn  # notebook 03 swaps in the snippet's
        self.logps_fn, self.loss_fields = loss.logps_fn, loss.config_fields
        tokenize = PreferenceTokenizer(processing_class, args.max_length)
        train_dataset = tokenize.dataset(train_dataset, "train_dataset")
        if eval_dataset is not None:
            eval_dataset = tokenize.dataset(eval_dataset, "eval_dataset")
        super().__init__(model=model, args=args, train_dataset=train_dataset,
                         eval_dataset=eval_dataset,
                         processing_class=processing_class,
                         callbacks=callbacks, data_collator=tokenize.collate)
        # The reference is the policy as it starts: a frozen copy by default;
        # a LoRA policy's base is the reference already, for free (no copy)
        if ref_model is None and is_peft(self.model):
            self.ref_model = None
        else:
            self.ref_model = ref_model or copy.deepcopy(self.model)
            self.ref_model.requires_grad_(False).eval().to(self.args.device)

    def checkpoint_identity(self):
        """And the reference each step's loss compares with: a resume
        against another would train toward something else."""
        return {**super().checkpoint_identity(), "reference": (
            fingerprint(self.ref_model) if self.ref_model is not None
            else "the policy with its adapter off")}

    @contextlib.contextmanager
    def reference(self, model):
        """The reference model to run: the frozen one, or (ref_model None)
        the PEFT policy itself with its adapter off. Left on, the
        reference would move with the policy and the loss stay log 2."""
        if self.ref_model is not None:
            yield self.ref_model
            return
        policy = self.accelerator.unwrap_model(model)
        with policy.disable_adapter():
            yield policy

    def _set_signature_columns_if_needed(self):
        # What survives remove_unused_columns=True: our columns, not those
        # of the model's forward().
        self._signature_columns = ["prompt_ids", "chosen_ids", "rejected_ids"]

    def _remember(self, chosen_rewards, rejected_rewards, chosen, rejected):
        """Keep this batch's metrics, under TRL's names, until the next log."""
        self.record(**{
            "rewards/chosen": chosen_rewards,
            "rewards/rejected": rejected_rewards,
            "rewards/accuracies": (chosen_rewards > rejected_rewards).float(),
            "rewards/margins": chosen_rewards - rejected_rewards,
            "logps/chosen": chosen.detach(),
            "logps/rejected": rejected.detach(),
        })


class PreferenceTokenizer:
    """Tokenise prompt/chosen/rejected rows and collate them into batches."""

    def __init__(self, tokenizer, max_length):
        self.tokenizer, self.max_length = tokenizer, max_length

    def dataset(self, dataset, name):
        """Checked and tokenised rows; the same rows once per process.

        Notebook 03 and the tests build several trainers on the same 72k
        pairs: checking and tokenising them costs ~10 s of CPU each time.
        A dataset's fingerprint hashes its contents, so equal rows with an
        equal tokenizer give equal results; the warnings are replayed.
        """
        dataset = check_dataset(name, dataset, COLUMNS, "DPO",
                                "preference rows")
        # equal rows (a dataset's fingerprint hashes them) with an equal
        # tokenizer tokenise alike; no fingerprint, no sharing
        fingerprint = getattr(dataset, "_fingerprint", None)
        key = None if fingerprint is None else (
            fingerprint, name, self.max_length,
            cache.tokenizer_key(self.tokenizer))
        return cache.remembered(cache.TOKENISED, key,
                                lambda: self._tokenise(dataset, name), most=4)

    def _tokenise(self, dataset, name):
        self.check_pairs_differ(name, dataset)
        warn_unknown_text(name, self.tokenizer, dataset, COLUMNS)
        # batched: one tokenizer call per thousand rows, not three per row
        dataset = dataset.map(self.rows, batched=True, with_indices=True,
                              fn_kwargs={"name": name})
        self.check_token_pairs_differ(name, dataset)
        self.check_cuts(name, dataset)
        return dataset.remove_columns(["cut", "cut_equal", "same_ids"])

    def rows(self, batch, indices, name):
        def encode(texts, **kwargs):
            # each distinct text once: a prompt often has several pairs
            distinct = list(dict.fromkeys(texts))
            encoded = self.tokenizer(distinct, return_attention_mask=False,
                                     **kwargs)["input_ids"]
            ids = dict(zip(distinct, encoded))
            return [ids[text] for text in texts]
        prompts = encode(batch["prompt"])
        eos = [self.tokenizer.eos_token_id]  # completions end with <eos>
        chosen, rejected = (
            [ids + eos for ids in encode(batch[column],
                                         add_special_tokens=False)]
            for column in ("chosen", "rejected"))
        out = {key: [] for key in ("prompt_ids", "chosen_ids", "rejected_ids",
                                   "cut", "cut_equal", "same_ids")}
        for index, prompt, good, bad in zip(indices, prompts, chosen,
                                            rejected):
            check_prompt_length(name, index, len(prompt), self.max_length,
                                "DPOConfig.max_length", room=1)  # 1 token
            room = self.max_length - len(prompt)
            cut = len(good) > room or len(bad) > room
            out["prompt_ids"].append(prompt)
            out["chosen_ids"].append(good[:room])
            out["rejected_ids"].append(bad[:room])
            out["cut"].append(cut)
            # cutting to fit can leave the two the same: nothing to learn
            out["cut_equal"].append(cut and good[:room] == bad[:room])
            # different texts, same tokens: e.g. both became <unk>s
            out["same_ids"].append(good == bad)
        return out

    def check_pairs_differ(self, name, dataset):
        """A pair whose answers are the same text teaches nothing."""
        columns = dataset.with_format("arrow")  # whole columns, at once
        same = [chosen == rejected for chosen, rejected in zip(
            columns["chosen"].to_pylist(), columns["rejected"].to_pylist())]
        if any(same):
            row = same.index(True)
            raise refusal("pairs_same", name=name, row=row,
                          text=dataset[row]["chosen"], count=sum(same))

    def check_token_pairs_differ(self, name, dataset):
        """Different texts can still be the same tokens: refuse those too."""
        same = dataset.with_format("arrow")["same_ids"].to_pylist()
        if any(same):
            row = dataset[same.index(True)]
            raise refusal("tokens_same", name=name, row=same.index(True),
                          chosen=row["chosen"][:40],
                          rejected=row["rejected"][:40], count=sum(same))

    def check_cuts(self, name, dataset):
        """Refuse pairs the cut made equal; say how many were cut."""
        columns = dataset.with_format("arrow")  # whole columns, at once
        cut = columns["cut"].to_pylist()
        cut_equal = columns["cut_equal"].to_pylist()
        cuts, equal = sum(cut), sum(cut_equal)
        if equal:
            raise refusal("cut_equal", name=name, max_length=self.max_length,
                          equal=equal, total=len(dataset),
                          first=cut_equal.index(True))
        if cuts:
            warnings.warn(str(refusal(
                "cut_warning", name=name, cuts=cuts, total=len(dataset),
                max_length=self.max_length)), stacklevel=2)

    def collate(self, rows):
        """-> input_ids, attention_mask, completion_mask, each (2B, T)."""
        sequences = [(r["prompt_ids"], r[key]) for key in ("chosen_ids",
                                                            "rejected_ids")
                     for r in rows]  # all chosen first, then all rejected
        width = max(len(p) + len(c) for p, c in sequences)
        pad = self.tokenizer.pad_token_id
        ids, mask, completion_mask = [], [], []
        for prompt, completion in sequences:
            padding = width - len(prompt) - len(completion)
            ids.append(prompt + completion + [pad] * padding)
            mask.append([1] * (len(prompt) + len(completion)) + [0] * padding)
            completion_mask.append([0] * len(prompt) + [1] * len(completion)
                                   + [0] * padding)
        return {"input_ids": torch.tensor(ids),
                "attention_mask": torch.tensor(mask),
                "completion_mask": torch.tensor(completion_mask)}

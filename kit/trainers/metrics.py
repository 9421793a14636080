"""Averaged metrics in every log, under TRL's names: shared by DPO and GRPO."""

from collections import defaultdict

import torch


class MetricsMixin:
    """Collect metrics per batch with `record`; `log` adds their averages.

    An average is over items (pairs, completions, prompts), not over
    batches: a last batch of 36 weighs 36/100, not 1/2. Values from every
    process are gathered, so the logs describe the whole batch in
    multi-process runs too; in evaluation `gather_for_metrics` also drops
    the rows the dataloader repeated to give each process a full batch.
    Train and eval keep separate sums: eval values come out as
    `eval_<name>`, as the Trainer names eval_loss.
    """

    def __init__(self, *args, **kwargs):
        # {mode: {name: [sum, count]}}: record() adds, log() empties
        self._metrics = {"train": defaultdict(lambda: [0.0, 0]),
                         "eval": defaultdict(lambda: [0.0, 0])}
        super().__init__(*args, **kwargs)

    def record(self, **metrics):
        """Remember this batch's metrics: each a tensor or a number."""
        mode = "train" if self.model.training else "eval"
        gather = (self.accelerator.gather if mode == "train"
                  else self.accelerator.gather_for_metrics)
        store = self._metrics[mode]
        for name, value in metrics.items():
            value = torch.as_tensor(value, dtype=torch.float32,
                                    device=self.accelerator.device)
            values = gather(value.detach().reshape(-1))  # (items,)
            store[name][0] += values.sum().item()
            store[name][1] += values.numel()

    def log(self, logs, start_time=None):
        mode = "eval" if any(k.startswith("eval_") for k in logs) else "train"
        prefix = "eval_" if mode == "eval" else ""
        store = self._metrics[mode]
        for name, (total, count) in store.items():
            # in place: evaluate() returns this very dict to its caller
            logs[prefix + name] = total / count
        store.clear()
        if mode == "train":
            logs.update(self.running_totals())
        super().log(logs, start_time)

    def running_totals(self):
        """Totals since the run began, logged as they stand with each
        training log (GRPO: what generation has cost so far)."""
        return {}

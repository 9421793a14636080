"""Averaged metrics in every log, under TRL's names: shared by DPO and GRPO."""

from collections import defaultdict

import torch


class MetricsMixin:
    """Collect metrics per batch with `record`; `log` adds their averages.

    Values from every process are gathered, so the logs describe the whole
    batch in multi-process runs too. Train and eval keep separate lists:
    eval values come out as `eval_<name>`, as the Trainer names eval_loss.
    """

    def record(self, **metrics):
        """Remember this batch's metrics: each a tensor or a number."""
        mode = "train" if self.model.training else "eval"
        store = self._metric_lists()[mode]
        for name, value in metrics.items():
            value = torch.as_tensor(value, dtype=torch.float32,
                                    device=self.accelerator.device)
            store[name].append(
                self.accelerator.gather(value.reshape(-1)).mean().item())

    def log(self, logs, start_time=None):
        mode = "eval" if any(k.startswith("eval_") for k in logs) else "train"
        prefix = "eval_" if mode == "eval" else ""
        store = self._metric_lists()[mode]
        for name, values in store.items():
            # in place: evaluate() returns this very dict to its caller
            logs[prefix + name] = sum(values) / len(values)
        store.clear()
        super().log(logs, start_time)

    def _metric_lists(self):
        if not hasattr(self, "_metrics"):
            self._metrics = {"train": defaultdict(list),
                             "eval": defaultdict(list)}
        return self._metrics

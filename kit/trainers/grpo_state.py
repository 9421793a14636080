"""GRPOTrainer's plumbing: what a checkpoint keeps, what the logs show.

A mixin, apart so the trainer reads in one sitting.
"""

from kit.trainers.checkpoint import CheckpointMixin


class GRPOStateMixin(CheckpointMixin):
    """Resume exact (the saved buffer served as it was cut); logs; columns."""

    def _set_signature_columns_if_needed(self):
        # Rewards may need any column: remove_unused_columns keeps them all.
        self._signature_columns = list(self.train_dataset.column_names)

    def log(self, logs, start_time=None):
        if not any(key.startswith("eval_") for key in logs):
            logs.update({f"generation/{key}": value
                         for key, value in self._generation.items()})
        super().log(logs, start_time)

    state_file = "grpo_state_{process}.pt"

    def checkpoint_state(self):  # the buffer and counters: resume is exact
        return {"step": self._step, "buffer": self._buffer,
                "generation": self._generation}

    def load_checkpoint_state(self, state):
        self._step, self._buffer = state["step"], state["buffer"]
        self._generation = state["generation"]

"""Notebook 08's starting point: GRPO whose checkpoints lack its buffer."""

from kit.trainers.grpo import GRPOTrainer


class GRPOTrainerWithoutBuffer(GRPOTrainer):
    """GRPOTrainer whose checkpoints leave out its own state (`_step`,
    `_buffer`, `_generation`): notebook 08's learner saves them in
    `_save_checkpoint` and takes them back in `_load_from_checkpoint`."""

    # No state_file: CheckpointMixin then writes and checks only the
    # Trainer's files and kit_checkpoint.json. Nothing else changes.
    state_file = None

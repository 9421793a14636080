"""The course's trainers: each overrides only what its lesson is about."""

from kit.trainers.dpo import DPOConfig, DPOTrainer
from kit.trainers.grpo import (GRPOConfig, GRPOTrainer,
                               GRPOTrainerWithoutBuffer)
from kit.trainers.sft import CausalLMTrainer

__all__ = ["CausalLMTrainer", "DPOConfig", "DPOTrainer", "GRPOConfig",
           "GRPOTrainer", "GRPOTrainerWithoutBuffer"]

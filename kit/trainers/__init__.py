"""The course's trainers: each overrides only what its lesson is about."""

from kit.trainers.sft import CausalLMTrainer

__all__ = ["CausalLMTrainer"]

"""The graders: `check(exercise_id, candidate)`, `hint`, `solution`.

Importing this package registers every exercise of the course, each with
its catalogue of known mistakes: `EXERCISES[id].mistakes`.
"""

from kit.checks.compare import Mismatch, compare
from kit.checks.core import EXERCISES, Mistake, Result, check, hint, solution
# each module registers its notebook's exercises, in the notebooks' order
from kit.checks import (basics, callbacks, dpo, dpo_trainer,  # noqa: F401
                        grpo, grpo_buffer, advantages)

__all__ = ["EXERCISES", "Mismatch", "Mistake", "Result", "check", "compare",
           "hint", "solution"]

"""The graders: `check(exercise_id, candidate)`, `hint`, `solution`.

Importing this package registers every exercise of the course, each with
its catalogue of known mistakes: `EXERCISES[id].mistakes`.
"""

from kit.checks.core import (EXERCISES, Mismatch, Mistake, Result, check,
                             compare, hint, solution)
# each module registers its notebook's exercises, in the notebooks' order
from kit.checks import (basics, callbacks, dpo, dpo_trainer,  # noqa: F401
                        grpo, advantages)

__all__ = ["EXERCISES", "Mismatch", "Mistake", "Result", "check", "compare",
           "hint", "solution"]

"""The graders: `check(exercise_id, candidate)`, `hint`, `solution`.

Importing this package registers every exercise of the course.
"""

from kit.checks.core import (EXERCISES, Mismatch, Result, check, compare,
                             hint, solution)
from kit.checks import basics, dpo, grpo  # noqa: F401  (they register)

__all__ = ["EXERCISES", "Mismatch", "Result", "check", "compare", "hint",
           "solution"]

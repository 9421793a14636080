"""The graders: `check(exercise_id, candidate)`, `hint`, `solution`.

Importing this package registers every exercise of the course, each with
its catalogue of known mistakes: `EXERCISES[id].mistakes`. One module per
notebook, named for it; a new notebook's checker is a new `nbNN_*.py`
file and one import line below, in the notebooks' order (it numbers the
exercises).
"""

from kit.checks.compare import Mismatch, compare
from kit.checks.core import EXERCISES, Mistake, Result, check, hint, solution
from kit.checks import nb01_stock_loss  # noqa: F401
from kit.checks import nb02_callbacks  # noqa: F401
from kit.checks import nb03_dpo_losses  # noqa: F401
from kit.checks import nb03_dpo_trainer  # noqa: F401
from kit.checks import nb04_grpo_dataloader  # noqa: F401
from kit.checks import nb04_grpo_buffer  # noqa: F401
from kit.checks import nb05_grpo_loss  # noqa: F401
from kit.checks import nb06_lora  # noqa: F401
from kit.checks import nb07_loss_types  # noqa: F401
from kit.checks import nb07_step_tokens  # noqa: F401
from kit.checks import nb07_sequence_ratio  # noqa: F401
from kit.checks import nb08_private  # noqa: F401
from kit.checks.ready import needs

__all__ = ["EXERCISES", "Mismatch", "Mistake", "Result", "check", "compare",
           "hint", "needs", "solution"]

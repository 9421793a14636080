"""Old home of `kit.trainers.guards` (renamed: `kit.checks` is the grader).

Kept so that code written against the old name still imports.
"""

from kit.trainers.guards import *  # noqa: F401,F403
from kit.trainers.nonfinite import StopOnNonFinite  # noqa: F401

"""Temporary: the old home of `published_snippet`, for kit/explore.py.

Delete at the merge that moves `published_snippet` to kit/losses.py (and
points explore at it); notebook 03's checker is nb03_dpo_losses.py.
"""

from kit.checks.nb03_dpo_losses import published_snippet  # noqa: F401

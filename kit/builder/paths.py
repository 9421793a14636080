"""Where the course's notebooks live: the sources and the sets built from them.

The build reads these names from this module each time it runs, so a test
that points one of them at a scratch folder patches it here, and only here.
"""

from kit.runtime import ROOT

NOTEBOOKS = ROOT / "notebooks"
SOURCES = NOTEBOOKS / "src"
SOLUTIONS = NOTEBOOKS / "solutions"
REPOSITORY = "inside-the-trainer/inside-the-trainer"  # on GitHub, for Colab

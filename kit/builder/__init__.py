"""Building the course: one source per notebook -> the learner's copy, the
solved copy, and both in Japanese (`python -m kit build`), with the build's
checks on the text, and the contents manager `make lab` serves them through.

Nothing is imported here: `kit.builder.notebooks` and the rest are imported
by name, by `kit.cli` and the tests, never by a notebook.
"""

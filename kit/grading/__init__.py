"""Grading a class: `python -m kit grade` runs each submission headless
(`grade`), each kernel behind a small process of its own (`kernel_shim`) or
forked warm from one that imported torch once (`zygote`), and writes what
it found (`gradebook`: scorecard, class summary, CSV, HTML) in the words of
`report_text`.

Nothing is imported here: `python -m kit.grading.kernel_shim` must start in
milliseconds, so it may not pull the grader in on the way.
"""

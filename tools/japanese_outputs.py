"""A pytest plugin: a Japanese notebook prints no English sentence.

The notebook suites run every notebook's code once in Japanese
(tools/run_tests.py says which copy); with `-p tools.japanese_outputs`
each cell of a copy under notebooks/ja/ fails when what it printed holds a
run of plain English words (`english_runs`): a line a code cell or the kit
printed without the kit's text tables. Names, numbers, code spans, metric
keys and the source `show(...)` displays are not sentences.
"""

import re

import pytest

# three or more plain English words in a row: not an identifier (loss_type,
# kit.trainers), a call (log(0)), a metric (rewards/margins) or code
ENGLISH_RUN = re.compile(
    r"(?<![\w./'=-])[A-Za-z][a-z']*(?: [a-z][a-z']*){2,}(?![\w(/=_-])")


def english_runs(text):
    """Runs of English words in `text`, code spans left out."""
    return ENGLISH_RUN.findall(re.sub(r"`[^`]*`", "", text))


def printed(outputs):
    """The text a cell's outputs show (pictures and their captions out)."""
    for output in outputs or []:
        data = output.get("data") or {}
        if output.get("output_type") == "stream":
            yield output.get("text", "")
        elif output.get("output_type") == "error":
            yield f"{output.get('ename', '')}: {output.get('evalue', '')}"
        elif not any(kind.startswith("image/") for kind in data):
            yield data.get("text/plain", "")


def _japanese_cell(item):
    path = str(getattr(item, "fspath", ""))
    source = getattr(getattr(item, "cell", None), "source", "")
    return "/notebooks/ja/" in path.replace("\\", "/") and "show(" not in (
        source)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not report.passed or not _japanese_cell(item):
        return
    found = [run for text in printed(getattr(item, "test_outputs", None))
             for run in english_runs(text)]
    if found:
        report.outcome = "failed"
        report.longrepr = ("English in a Japanese notebook's output (print "
                           "it through the kit's text tables, or as names "
                           f"and numbers): {found}")

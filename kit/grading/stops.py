"""Why a graded run stopped, said in the learner's cells.

A cell past its time limit is named by where its traceback was: the
learner's function and the code cell that defined it (an endless loop
called from a later cell is the earlier cell's), numbered as JupyterLab
shows code cells (kit.grading.submissions.code_cell). kit.grading.grade
runs the notebooks and asks here for the line each stop gets.
"""

import re

from nbclient.exceptions import CellTimeoutError, DeadKernelError

from kit.grading.report_text import say
from kit.grading.submissions import code_cell

# a traceback's frame in a notebook cell: IPython's "Cell In[7], line 3,
# in sequence_logps(logits, ...)" (no ", in ..." at a cell's top level)
CELL_FRAME = re.compile(r"Cell In\[(\d+)\], line \d+(?:, in ([\w.<>]+))?")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class NotebookTimeout(Exception):
    """The notebook ran past --notebook-timeout, all cells together."""


class OutputLimit(Exception):
    """The notebook printed more than kit.grading.grade.OUTPUT_LIMIT
    characters."""


def looped_in(traceback, executed):
    """Where a cell stopped at its time limit was, from its traceback:
    (the learner's function, or None, and the number of the cell that
    defined it), the innermost frame in a notebook cell; (None, None) when
    the innermost frame of all is in a library (a slow training, say).

    `executed`: the numbers of the cells run, in order (IPython's `In[n]`
    is the n-th)."""
    lines = [ANSI.sub("", line) for line in traceback]
    frames = [found for line in lines for found in CELL_FRAME.finditer(line)]
    if not frames:
        return None, None
    count, function = int(frames[-1].group(1)), frames[-1].group(2)
    number = executed[count - 1] if 0 < count <= len(executed) else None
    if number is None:
        return None, None
    if function and function != "<module>":
        return function, number
    # the cell's own code: the loop is in it, unless a library frame follows
    last = next((line for line in reversed(lines) if "File " in line
                 or "Cell In[" in line), "")
    return (None, number) if "Cell In[" in last else (None, None)


def error_line(content):
    """'SyntaxError: invalid syntax (line 3)' from a kernel's error message
    (the kernel's temporary file name left out)."""
    why = (str(content.get("evalue", "")).strip().splitlines() or [""])[0]
    why = re.sub(r"\([^()]*, line (\d+)\)", r"(line \1)", why)[:200]
    return str(content.get("ename", "Error"))[:100], why


def not_a_notebook(error):
    """The line that says why a file is no notebook to grade."""
    if isinstance(error, UnicodeDecodeError):
        return say("binary")
    if isinstance(error, OSError):
        return say("unreadable", why=error.strerror)
    first = (str(error).strip().splitlines() or [""])[0][:100]
    # nbformat quotes what it read ("... JSON: 'api_key=..."): never the
    # file's content in a report
    first = re.split(r"""[:,]?\s*['"]""", first)[0]
    if isinstance(error, ValueError) and type(error) is ValueError:
        return say("not_a_notebook", why=first)
    return say("not_a_notebook", why=f"{type(error).__name__}: {first}")


def stopped_because(stopped, notebook, timeout, notebook_timeout,
                    output_limit):
    """The one line that says why a run stopped."""
    cell = getattr(stopped, "cell", 0)
    where = code_cell(notebook, cell)
    if isinstance(stopped, CellTimeoutError):
        function, defined = getattr(stopped, "looped", (None, None))
        if function:  # the learner's function, maybe from an earlier cell
            return say("timeout_in", function=function, where=where,
                       defined=code_cell(notebook, defined),
                       timeout=timeout)
        if defined:  # the cell's own code, not a library's
            return say("timeout_loop", where=where, timeout=timeout)
        return say("timeout", where=where, timeout=timeout)
    if isinstance(stopped, NotebookTimeout):
        return say("notebook_timeout", where=where, timeout=notebook_timeout)
    if isinstance(stopped, DeadKernelError):
        return say("dead_kernel", where=where)
    if isinstance(stopped, OutputLimit):
        return say("output_limit", where=where, limit=output_limit)
    first = (str(stopped).strip().splitlines() or [""])[0][:200]
    return say("could_not_run", why=f"{type(stopped).__name__}: {first}")

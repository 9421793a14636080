"""`python -m kit grade PATH...`: run learners' notebooks, grade each exercise.

PATH is a notebook or a folder (every .ipynb below it, except in
`solutions/` and `.ipynb_checkpoints/`). Each submission runs headless in a
fresh kernel of its own, every cell even after an error, in an empty
temporary folder, N kernels at a time; cells tagged `train` or `plot` (they
only train or draw, no check needs them), and the cells after the last
`check(...)`, are skipped unless `all_cells`. A cell past --timeout is
interrupted first, so that its traceback names the learner's function
that looped, and the cell that defined it.
Each `check(...)` call appends one JSON line to the file named in the
kernel's KIT_GRADE_FILE (a file of that submission's own). Which exercises
exist is the course's business, not the notebook's: a copy of notebook 03
is graded on all of 03's exercises, and one whose check never ran (or
whose check cell was deleted) shows up as "not attempted".

Each submission is graded inside its own guard: a broken or hostile file
is one failed row, never the end of the class. Reports are rewritten after
each submission, so Ctrl-C (or SIGTERM) keeps what was graded. Kernels run
through `kit.grading.kernel_shim`, which keeps them away from the grader and
ends whatever they start. With more submissions than --jobs, kernels are forked
warm (torch already imported) from one `kit.grading.zygote` per run, which
keeps the same guarantees; KIT_GRADE_COLD=1 starts each one cold. Student
code still runs with the grader's rights: the README says what that
leaves open, and the container that closes it.

The report's language (`lang`, `--lang`): else KIT_LANG, else the
notebooks' own: Japanese when every one asks `setup_notebook(lang="ja")`
(the Japanese copies do), else English. A run speaks one language: its
kernels get it as KIT_LANG, which `setup_notebook` obeys under the grader,
so the checkers' messages in the report match its headings.

Exit codes, one notebook: 0 every exercise passed, 1 some did not, 2 it
could not be graded. Several: 0 every submission graded (whatever the
scores), 1 some could not be graded, 2 none could; 130 interrupted.
"""

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async
from tqdm import tqdm

import kit
from kit import i18n
from kit.grading import (feedback, gradebook, kernel_shim, sandbox,
                         students)
from kit.grading.submissions import (ANY_CHECK, COURSE, CannotGrade,
                                     code_cell, course_notebook,
                                     exercises_in, find_submissions,
                                     not_a_plain_file, read_notebook,
                                     run_language, skip_cells)
from kit.grading.report_text import say
from kit.grading.stops import (NotebookTimeout, OutputLimit, error_line,
                               looped_in, not_a_notebook, stopped_because)
from kit.grading.verdicts import (exercise_rows, from_check_cells,
                                  raised_before_checks, records)
from kit.checks import EXERCISES

NOTEBOOK_TIMEOUT = 1800  # seconds a notebook may run, all cells together
OUTPUT_LIMIT = 20_000_000  # characters a notebook may print, all cells
GRADE_FILE_LIMIT = 1_000_000  # bytes of grade records read
# seconds a cell past its time limit gets, once interrupted, to say where
# it was (its KeyboardInterrupt's traceback): which learner's function
# looped
TRACEBACK_WAIT = 3
# the folder holding `kit`: kernels import the grader's own kit from it
KIT_ROOT = str(Path(kit.__file__).resolve().parent.parent)
# what a kernel may see of the grader's environment (not its secrets)
KERNEL_ENV = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ",
              "TMPDIR", "TERM", "SHELL", "LD_LIBRARY_PATH", "MPLBACKEND",
              "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "ATEN_CPU_CAPABILITY",
              "HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE",
              "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE",
              "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "KIT_PRESET"}

_running = set()  # KIT_GRADE_RUN tokens of the kernels running now
# how this run's kernels are kept apart (kit.grading.sandbox): its "mode"
# when behind the wall ("ids", (uid, gid), in "nobody" mode), else "why"
# not; see isolation()
_wall = {}
_zygote = {}  # the warm-kernel zygote of this run, while it runs
WARM_AFTER = 1  # a zygote when there are more submissions than this x jobs
ZYGOTE_TIMEOUT = 120  # seconds it may take to import torch & co.
_stopping = threading.Event()  # set on Ctrl-C: start no more kernels
# set by the grader's SIGINT/SIGTERM handler; the wait for submissions
# looks at it twice a second (see _grade_all)
_interrupted = threading.Event()


# what the learner's code does to a run: a verdict ("crashed"), not a
# failure of the grader
STOPPED_BY_THE_CODE = (CellTimeoutError, NotebookTimeout, DeadKernelError,
                       OutputLimit)


# ------------------------------------------------------- running one kernel

def _kernel_env(work, token, kernel=True):
    env = {k: v for k, v in os.environ.items()
           if k in KERNEL_ENV or k.startswith("LC_")}
    if kernel and _wall.get("mode"):  # a home of its own, fresh
        env["HOME"] = str(work / "home")
    if kernel and _wall.get("ids"):
        env.update(USER=sandbox.USER, LOGNAME=sandbox.USER)
    # runs/ inside the submission's own folder: two kernels never share one
    # the kernel's checkers speak the report's language (kit.i18n)
    env.update(KIT_GRADE_FILE=str(work / "grades.jsonl"), KIT_HEADLESS="1",
               KIT_LANG=i18n.language(),
               KIT_GRADE_RUN=token, KIT_RUNS=str(work / "cwd" / "runs"),
               HF_HUB_OFFLINE=env.get("HF_HUB_OFFLINE", "1"),
               PYTHONPATH=os.pathsep.join(
                   [KIT_ROOT] + [p for p in [os.environ.get("PYTHONPATH")]
                                 if p]))
    return env


def _through_the_shim(work):
    """A kernel manager that starts the kernel under kit.grading.kernel_shim,
    or forked warm from the zygote when one runs (kit.grading.zygote);
    behind kit.grading.sandbox's wall when this run has one."""
    start = (["kit.grading.zygote", "client", _zygote["socket"]]
             if _zygote else ["kit.grading.kernel_shim"])
    ids = _wall.get("ids")
    wall = ["--wall", "%d:%d" % ids] if ids else ["--wall", "self"] if (
        _wall.get("mode")) else []
    if wall:  # each kernel's share of memory (kit grade --memory)
        wall += ["--memory", str(sandbox.MEMORY_LIMIT)]

    class ShimmedKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            if wall:  # its network is its own: we talk through files
                self.transport, self.ip = "ipc", str(work / "ipc" / "k")

        def format_kernel_cmd(self, extra_arguments=None):
            return [sys.executable, "-m", *start, str(work), *wall,
                    "--"] + super().format_kernel_cmd(extra_arguments)

        def write_connection_file(self, **kwargs):
            if wall:  # where the kernel can read it, and no other kernel
                self.connection_file = str(work / "kernel.json")
            super().write_connection_file(**kwargs)
            if ids:
                os.chown(self.connection_file, *ids)
    return ShimmedKernelManager


def _prepare_work(work):
    """The submission's folder: its cwd and grade file (the grade channel:
    no other kernel, of this run or another, can open it) are the kernel's
    user's when behind the wall; the folder itself stays the grader's, so
    the grade file cannot be swapped for a link."""
    (work / "cwd").mkdir()
    grade_file = work / "grades.jsonl"
    grade_file.touch(mode=0o600)
    if _wall.get("mode"):
        (work / "home").mkdir()
        (work / "ipc").mkdir(mode=0o700)  # the kernel's ZeroMQ sockets
    ids = _wall.get("ids")
    if ids:
        work.chmod(0o711)
        for path in (work / "cwd", work / "home", work / "ipc", grade_file):
            os.chown(path, *ids)
    return grade_file


def choose_isolation():
    """Behind the wall when it holds here (a trial run), else why not."""
    _wall.clear()
    mode = sandbox.mode()
    why = sandbox.why_not(mode)
    if why:
        _wall["why"] = why
    else:
        _wall["mode"] = mode
        if mode == "nobody":
            _wall["ids"] = sandbox.account()


def isolation():
    """The line that says how this run's kernels were kept apart."""
    if _wall.get("ids"):
        return say("walled", user=sandbox.USER)
    if _wall.get("mode"):
        return say("walled_self")
    return say("not_walled", why=_wall.get("why", "?"))


def warm_wanted(count, jobs):
    """A zygote pays off once kernels start after the first `jobs`."""
    return (sys.platform.startswith("linux") and count > jobs * WARM_AFTER
            and os.environ.get("KIT_GRADE_COLD", "") in ("", "0"))


def start_zygote():
    """Start kit.grading.zygote; on any trouble, one line and cold kernels."""
    folder = Path(tempfile.mkdtemp(prefix="kit-zygote-"))
    token, process = uuid.uuid4().hex, None
    # torch's thread pool must not start before the forks (a forked thread
    # pool hangs); kernels run on one torch thread anyway
    env = {"OMP_NUM_THREADS": "1", **_kernel_env(folder, token, kernel=False)}
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "kit.grading.zygote", "serve",
             str(folder / "socket")], env=env,
            cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True)
        ready = [None]
        reader = threading.Thread(target=lambda: ready.__setitem__(
            0, process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(ZYGOTE_TIMEOUT)
        if ready[0] != b"ready\n":
            raise OSError((ready[0] or b"it did not get ready").decode(
                "utf-8", "replace").strip())
    except OSError as error:
        print(say("warm_unavailable", error=error), file=sys.stderr)
        _zygote.clear()
        _stop_zygote_parts(process, folder, token)
        return
    _zygote.update(socket=str(folder / "socket"), process=process,
                   folder=folder, token=token)


def stop_zygote():
    if _zygote:
        _stop_zygote_parts(_zygote["process"], _zygote["folder"],
                           _zygote["token"])
        _zygote.clear()


def _stop_zygote_parts(process, folder, token):
    if process is not None:
        try:
            process.stdin.close()  # its cue to end
            process.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
    kernel_shim.sweep(token)  # a fork of it caught before its retag
    shutil.rmtree(folder, ignore_errors=True)


class GradingClient(NotebookClient):
    """Runs the cells and keeps none of their output: the grader reads the
    grade file and, of each cell that raised, its error (`raised`: cell
    number from 1 -> "SyntaxError: invalid syntax (line 3)") and its
    traceback (`tracebacks`). Past OUTPUT_LIMIT characters printed, it
    stops. A cell past its time limit is interrupted before it is given
    up, so that its traceback says where it was (see `looped_in`)."""

    printed = 0

    def output(self, outs, msg, display_id, cell_index):
        if msg.get("msg_type") == "error":
            self.raised = getattr(self, "raised", {})
            self.raised.setdefault(cell_index + 1, error_line(
                msg.get("content", {})))
            self.tracebacks = getattr(self, "tracebacks", {})
            self.tracebacks.setdefault(cell_index + 1, [
                str(line)[:1000] for line in
                (msg.get("content", {}).get("traceback") or [])[-50:]])
        # every character a cell sends: printed text, displayed data, and
        # an error's value and traceback (raise ValueError("x" * 10**8))
        content = msg.get("content", {})
        self.printed += sum(len(str(content.get(key, "")))
                            for key in ("text", "evalue")) + sum(
            len(str(v)) for v in (content.get("data") or {}).values()) + sum(
            len(str(line)) for line in content.get("traceback") or [])
        if self.printed > OUTPUT_LIMIT:
            raise OutputLimit
        return None

    async def _async_handle_timeout(self, timeout, cell=None):
        """Interrupt the cell, wait a moment for its traceback, give up."""
        number = self.nb.cells.index(cell) + 1 if cell in self.nb.cells \
            else 0
        try:
            await ensure_async(self.km.interrupt_kernel())
            for _ in range(int(TRACEBACK_WAIT * 10)):
                if number in getattr(self, "tracebacks", {}):
                    break
                await asyncio.sleep(0.1)
        except Exception:
            pass  # no traceback: the report names the cell alone
        raise CellTimeoutError.error_from_timeout_and_cell(
            "Cell execution timed out", timeout, cell)

    def _cleanup_kernel(self):
        """nbclient's clean-up at exit (atexit): nothing to do where the
        kernel is gone already (it died, or the run was interrupted), where
        nbclient would print an AssertionError's traceback."""
        if self.km is not None:
            super()._cleanup_kernel()


def execute(notebook, timeout, notebook_timeout=NOTEBOOK_TIMEOUT):
    """Run the cells in a fresh kernel and a fresh folder.

    Returns the grade file's lines, each as (number from 1 of the cell
    that was running as it was written, the line): the file is read after
    each cell (kit.grading.verdicts.from_check_cells); the error that
    stopped the run (None, or an exception; CellTimeoutError /
    DeadKernelError / NotebookTimeout get `.cell`, the number from 1 of the
    cell that was running; lines written before it are kept), and what
    each cell that raised raised ({cell number: (error name, its first
    line)}).
    """
    running = {"cell": 0, "executed": []}
    read = {"offset": 0, "lines": []}

    def read_grades(whole=False):
        """The lines written since the last read, as the running cell's
        (`whole`: also a last line without its newline)."""
        try:
            with open(grade_file, "rb") as f:
                f.seek(read["offset"])
                chunk = f.read(max(0, GRADE_FILE_LIMIT - read["offset"]))
        except OSError:
            return
        end = len(chunk) if whole else chunk.rfind(b"\n") + 1
        read["offset"] += end
        read["lines"] += [(running["cell"], line) for line in
                          chunk[:end].decode("utf-8", "replace").splitlines()]

    def on_cell_execute(cell, cell_index):
        read_grades()  # what was written between cells: the previous one's
        running["cell"] = cell_index + 1
        running["executed"].append(cell_index + 1)

    def on_cell_executed(cell, cell_index, execute_reply):
        read_grades()

    work = Path(tempfile.mkdtemp(prefix="kit-grade-"))
    token = uuid.uuid4().hex
    stopped = None
    _running.add(token)
    try:
        # the grade file sits beside, not inside, the student's folder
        grade_file = _prepare_work(work)
        client = GradingClient(
            notebook, timeout=timeout, allow_errors=True,
            kernel_name="python3", on_cell_execute=on_cell_execute,
            on_cell_executed=on_cell_executed,
            kernel_manager_class=_through_the_shim(work))
        try:
            # own event loop: several kernels run in threads side by side
            # (the kernel's own stdout and stderr are its logging, not the
            # student's, and must not mix into the grader's --json)
            # and the whole notebook within its own limit: many cells each
            # under --timeout must not hold a job for as long as they like
            asyncio.run(_within(notebook_timeout, client.async_execute(
                env=_kernel_env(work, token), cwd=str(work / "cwd"),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
        except Exception as error:
            error.cell = running["cell"]
            if isinstance(error, CellTimeoutError):
                error.looped = looped_in(getattr(
                    client, "tracebacks", {}).get(error.cell, []),
                    running["executed"])
            stopped = error
        read_grades(whole=True)
    finally:
        kernel_shim.sweep(token)  # what the kernel started, wherever
        _running.discard(token)
        shutil.rmtree(work, ignore_errors=True)
    return read["lines"], stopped, getattr(client, "raised", {})


async def _within(seconds, run):
    """Await `run`, or cut it short after `seconds` with NotebookTimeout
    (whatever the kernel raises as it is cut short, a dead kernel most
    often: wait_for would pass that on instead)."""
    task = asyncio.ensure_future(run)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if task in done:
        return task.result()
    task.cancel()
    try:
        await task
    except (Exception, asyncio.CancelledError):
        pass  # the run, cut short: not news
    raise NotebookTimeout


def _new_card(label, path):
    return {"submission": label, "notebook": Path(path).stem, "error": None,
            "exercises": [], "passed": 0, "total": 0}


def _scored(card):
    card["passed"] = sum(r["status"] == "passed" for r in card["exercises"])
    card["total"] = len(card["exercises"])
    return gradebook.inert_card(card)


def grade_one(label, path, timeout, all_cells=False,
              notebook_timeout=NOTEBOOK_TIMEOUT):
    """Grade one submission; never raises: trouble goes in "error"."""
    card = _new_card(label, path)
    try:
        _grade_into(card, path, timeout, all_cells, notebook_timeout)
    except _NotStarted:
        return not_started(label, path)
    except Exception as error:  # one broken submission must not stop a class
        card["error"] = say("grader_failed", why=f"{type(error).__name__}: "
                                                f"{str(error)[:200]}")
    return _scored(card)


class _NotStarted(Exception):
    """The run was interrupted before this submission's kernel started."""


def not_started(label, path):
    """The card of a submission an interrupted run never started: its
    exercises, each "not graded" (the notebook read for them alone)."""
    card = _new_card(label, path)
    card["error"], card["interrupted"] = say("interrupted_before"), True
    try:
        if not not_a_plain_file(path):
            notebook = read_notebook(path)
            in_code = exercises_in(notebook)
            course = course_notebook(path, in_code)
            card["notebook"] = course or card["notebook"]
            ids = COURSE[course] if course else [i for i in in_code
                                                 if i in EXERCISES]
            card["exercises"] = exercise_rows(ids, in_code, [],
                                              card["error"])
    except Exception:
        pass  # read again by the next run: the row says it was not graded
    return _scored(card)


def _grade_into(card, path, timeout, all_cells, notebook_timeout):
    card["error"] = not_a_plain_file(path)
    if card["error"]:
        return
    try:
        notebook = read_notebook(path)
    except Exception as error:
        card["error"] = not_a_notebook(error)
        if Path(path).stem in COURSE:  # its exercises, each "not graded"
            card["exercises"] = exercise_rows(
                COURSE[Path(path).stem], [], [], card["error"])
        return
    in_code = exercises_in(notebook)
    course = course_notebook(path, in_code)
    if course:
        card["notebook"] = course
    ids = COURSE[course] if course else [i for i in in_code
                                         if i in EXERCISES]
    if not ids and not any(ANY_CHECK.search(c.source)
                           for c in notebook.cells if c.cell_type == "code"):
        card["error"] = say("no_checks")
        return
    if _stopping.is_set():
        raise _NotStarted
    if not all_cells:
        skip_cells(notebook)
    cell_lines, stopped, raised = execute(notebook, timeout,
                                          notebook_timeout)
    lines, outside = from_check_cells(cell_lines, notebook)
    crashed = None
    if _stopping.is_set():  # its kernel stopped by the grader, not its code
        card["error"], card["interrupted"] = say(
            "interrupted_in", where=code_cell(
                notebook, getattr(stopped, "cell", 0))), True
        card["exercises"] = exercise_rows(ids, in_code, records(lines, ids),
                                          card["error"], outside=outside,
                                          notebook=notebook)
        return
    if stopped is not None:
        card["error"] = stopped_because(stopped, notebook, timeout,
                                         notebook_timeout, OUTPUT_LIMIT)
        # the learner's code stopped it: the rest is "crashed", not the
        # grader's "not graded"
        if isinstance(stopped, STOPPED_BY_THE_CODE):
            crashed = card["error"]
        # what the cell it stopped in raised is the stop itself (an
        # interrupted cell raises KeyboardInterrupt): the line above says it
        raised.pop(getattr(stopped, "cell", 0), None)
    card["exercises"] = exercise_rows(
        ids, in_code, records(lines, ids), None if crashed else card["error"],
        crashed, raised_before_checks(notebook, raised), outside, notebook)
    if not card["exercises"] and not card["error"]:
        card["error"] = say("no_check_ran")


def _stop_running_kernels():
    _stopping.set()
    for token in list(_running):
        kernel_shim.sweep(token)


def grade_all(submissions, jobs, timeout, all_cells=False, progress=True,
              on_card=None, notebook_timeout=NOTEBOOK_TIMEOUT):
    """Grade (label, path) pairs, `jobs` at a time; cards in label order.

    `on_card(cards)` runs after each submission, with those graded so far.
    On Ctrl-C the running kernels are stopped and KeyboardInterrupt is
    raised with `.cards`, the submissions graded before it.
    """
    _stopping.clear()
    choose_isolation()
    try:
        if warm_wanted(len(submissions), jobs):
            start_zygote()
        return _grade_all(submissions, jobs, timeout, all_cells, progress,
                          on_card, notebook_timeout)
    finally:
        stop_zygote()


def _grade_all(submissions, jobs, timeout, all_cells, progress, on_card,
               notebook_timeout):
    pool = ThreadPoolExecutor(max_workers=jobs)
    futures = [pool.submit(grade_one, label, path, timeout, all_cells,
                           notebook_timeout)
               for label, path in submissions]
    cards, pending = [], set(futures)
    bar = tqdm(total=len(futures), desc="grading", unit="notebook",
               file=sys.stderr, disable=not progress)
    try:
        while pending:
            # A short wait, then a look at the flag: a signal that another
            # thread took leaves this one asleep, and a KeyboardInterrupt
            # raised inside a finaliser is lost; the flag is not.
            done, pending = wait(pending, timeout=0.5,
                                 return_when=FIRST_COMPLETED)
            if _interrupted.is_set():
                raise KeyboardInterrupt
            for future in done:
                cards.append(future.result())
                bar.update()
            cards.sort(key=lambda card: card["submission"])
            if on_card and done:
                on_card(cards)
    except KeyboardInterrupt as interrupt:
        main_thread = threading.current_thread() is threading.main_thread()
        if main_thread:  # a second Ctrl-C must not cut the clean-up short
            previous = {number: signal.signal(number, signal.SIG_IGN)
                        for number in (signal.SIGINT, signal.SIGTERM)}
        _stop_running_kernels()
        pool.shutdown(wait=True, cancel_futures=True)
        if main_thread:
            for number, handler in previous.items():
                signal.signal(number, handler)
        interrupt.cards = _with_the_unfinished(cards, futures, submissions)
        raise
    finally:
        bar.close()
    pool.shutdown()
    return cards


def _with_the_unfinished(cards, futures, submissions):
    """Every submission's card after an interrupt: those graded, those
    stopped where they were, those never started; the unfinished ones say
    how many of the run were not graded."""
    shown = {card["submission"] for card in cards}
    for future, (label, path) in zip(futures, submissions):
        if label in shown:
            continue
        card = None
        if future.done() and not future.cancelled():
            try:
                card = future.result()
            except BaseException:
                card = None
        cards.append(card or not_started(label, path))
    unfinished = [card for card in cards if card.get("interrupted")]
    for card in unfinished:
        card["error"] += say("not_graded_count", n=len(unfinished),
                             total=len(cards))
        for row in card["exercises"]:
            if row["status"] == "not graded":
                row["message"] = card["error"]
    return sorted(cards, key=lambda card: card["submission"])


# ------------------------------------------------------------ the command

def default_jobs():
    return max(1, min(os.cpu_count() or 1, 4))


class _Reports:
    """Writes --csv, --html and --gradebook after each submission, and
    --feedback once the run ends (kit.grading.feedback: it speaks each
    student's language, which no kernel may catch while starting);
    remembers failures. A page written while the run goes on says so
    ("in progress: N of M")."""

    def __init__(self, csv_path, html_path, total=0, gradebook_path=None,
                 feedback_dir=None, sources=None, chosen=None):
        self.targets = [(p, w) for p, w in (
            (csv_path, gradebook.write_csv),
            (html_path, gradebook.write_html),
            (gradebook_path, lambda cards, summary, path:
             feedback.write_gradebook(cards, path))) if p]
        self.failed = {}
        self.total = total
        # {submission: its path} and the language --lang or KIT_LANG chose
        self.feedback_dir, self.sources = feedback_dir, sources or {}
        self.chosen = chosen

    def write(self, cards):
        summary = gradebook.summarise(cards)
        for path, write in self.targets:
            try:
                if write is gradebook.write_html:
                    write(cards, summary, path, isolation(),
                          total=self.total)
                else:
                    write(cards, summary, path)
                self.failed.pop(path, None)
            except OSError as error:
                self.failed[path] = error.strerror

    def finish(self, cards):
        """The last reports; the students' feedback files."""
        self.write(cards)
        if not self.feedback_dir:
            return
        try:
            feedback.write_feedback(cards, self.feedback_dir, self.sources,
                                    self.chosen)
            self.failed.pop(self.feedback_dir, None)
        except OSError as error:
            self.failed[self.feedback_dir] = error.strerror


def _as_interrupt(signum, frame):
    _interrupted.set()
    raise KeyboardInterrupt


def main(paths, as_json=False, timeout=600, jobs=None, csv_path=None,
         html_path=None, all_cells=False, lang=None,
         notebook_timeout=NOTEBOOK_TIMEOUT, gradebook_path=None,
         feedback_dir=None):
    """Grade `paths` and report in `lang` (default: see the module's
    docstring); the kit's language is as it was afterwards."""
    previous = i18n.language()
    try:
        if lang:
            i18n.set_language(lang)
        return _main(paths, as_json, timeout, jobs, csv_path, html_path,
                     all_cells, chosen=bool(lang or os.environ.get(
                         "KIT_LANG")), notebook_timeout=notebook_timeout,
                     gradebook_path=gradebook_path,
                     feedback_dir=feedback_dir)
    finally:
        i18n.set_language(previous)


def _main(paths, as_json, timeout, jobs, csv_path, html_path, all_cells,
          chosen, notebook_timeout, gradebook_path=None, feedback_dir=None):
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    try:
        submissions = find_submissions(paths)
    except CannotGrade as error:
        print(json.dumps({"error": str(error)}) if as_json else str(error))
        return 2
    if not chosen:  # the notebooks' own language
        i18n.set_language(run_language(submissions))
    single = len(paths) == 1 and not Path(paths[0]).is_dir()
    reports = _Reports(csv_path, html_path, len(submissions),
                       gradebook_path, feedback_dir, dict(submissions),
                       i18n.language() if chosen else None)
    main_thread = threading.current_thread() is threading.main_thread()
    _interrupted.clear()
    if main_thread:  # SIGTERM, like Ctrl-C, ends the run and keeps reports
        previous = {number: signal.signal(number, _as_interrupt)
                    for number in (signal.SIGINT, signal.SIGTERM)}
    interrupted = False
    try:
        cards = grade_all(submissions, jobs or default_jobs(), timeout,
                          all_cells, progress=not single,
                          on_card=reports.write,
                          notebook_timeout=notebook_timeout)
    except KeyboardInterrupt as interrupt:
        cards, interrupted = getattr(interrupt, "cards", []), True
    finally:
        if main_thread:
            for number, handler in previous.items():
                signal.signal(number, handler)
    students.name_students(cards)  # each card's "student", for --json
    summary = gradebook.summarise(cards)
    if not as_json:  # beside the report, not in it: --json has a field
        print(isolation(), file=sys.stderr)
    reports.finish(cards)  # the feedback too: no kernel is starting now
    if interrupted:
        kept = ", ".join(str(p) for p, _ in reports.targets
                         if p not in reports.failed)
        said = say("interrupted", graded=sum(
            not card.get("interrupted") for card in cards),
                   total=len(submissions),
                   kept=say("kept_in", paths=kept) if kept else "")
        print(json.dumps({"error": said, "summary": summary,
                          "submissions": cards, "isolation": isolation()},
                         indent=1,
                         ensure_ascii=False) if as_json
              else gradebook.class_summary(cards, summary) + "\n" + said)
        code = 130
    elif single:
        card = cards[0]
        print(json.dumps({**card, "isolation": isolation()}, indent=1,
                         ensure_ascii=False) if as_json
              else gradebook.scorecard(card))
        code = 2 if card["error"] else int(card["passed"] < card["total"])
    else:
        graded = sum(card["error"] is None for card in cards)
        print(json.dumps({
            "error": None if graded else say("none_graded"),
            "summary": summary, "submissions": cards,
            "isolation": isolation()},
            indent=1, ensure_ascii=False) if as_json
            else gradebook.class_summary(cards, summary))
        code = 2 if not graded else int(graded < len(cards))
    # the reports' trouble comes after the summary: a bad path loses
    # nothing shown
    for path, why in reports.failed.items():
        print(say("not_written", path=path, why=why), file=sys.stderr)
        code = 2 if code != 130 else code
    return code

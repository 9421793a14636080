"""check()'s time limit: a SIGALRM timer that nests, and pauses for the kit.

A signal, so it works where notebook cells run: the main thread (elsewhere
no limit is set). One process has one alarm timer, and something outside
may hold it already (a grader, pytest-timeout's signal mode): the kit then
shares it. The timer is set to the nearest deadline, ours or the outer
one's; when the outer one is due, its own handler runs, and whatever it
raises is marked as not the learner's. On the way out the outer handler
and the outer timer (less the time spent) are put back.
"""

import math
import signal
import threading
import time
from contextlib import contextmanager

from kit.checks.compare import TimeLimit, not_the_learners

UNWIND = 1.0  # s an expired limit waits before it may fire again
_limits = []  # the kit's limits now running, outermost first
_outer = {}  # the alarm we found: handler, deadline, interval
_pauses = []  # when each running paused() began


class _Limit:
    def __init__(self, seconds):
        self.seconds = seconds
        # past a few days is no limit at all (and beyond what the timer takes)
        self.deadline = (time.monotonic() + seconds if seconds < 1e6
                         else math.inf)


def _usable():
    return (hasattr(signal, "SIGALRM")
            and threading.current_thread() is threading.main_thread())


def _arm():
    """Set the alarm to the nearest deadline still counting."""
    deadlines = [] if _pauses else [limit.deadline for limit in _limits
                                    if limit.deadline < math.inf]
    if _outer.get("deadline") is not None:
        deadlines.append(_outer["deadline"])
    if deadlines:
        signal.setitimer(signal.ITIMER_REAL,
                         max(min(deadlines) - time.monotonic(), 1e-4))
    else:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _on_alarm(signum, frame):
    now = time.monotonic()
    outer = _outer.get("deadline")
    if outer is not None and now >= outer - 1e-4:
        interval = _outer["interval"]
        _outer["deadline"] = now + interval if interval else None
        _arm()
        _call_outer(signum, frame)
        return
    if not _pauses:
        for limit in _limits:  # the outermost expired limit wins
            if now >= limit.deadline - 1e-4:
                # while this expiry unwinds (a Trainer's clean-up runs its
                # callbacks and pauses again), the alarm may not fire again
                # at once: a second expiry would replace the first, which
                # says where it happened (unpaused)
                limit.deadline = now + UNWIND
                raise TimeLimit(limit)
    _arm()  # early by a hair: wait for the rest


def _call_outer(signum, frame):
    handler = _outer["handler"]
    if callable(handler):
        try:
            handler(signum, frame)
        except BaseException as error:
            raise not_the_learners(error)
    elif handler in (signal.SIG_DFL, None):  # the default ends the process
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGALRM)


@contextmanager
def time_limit(seconds):
    """Raise TimeLimit(limit) in the code running inside after `seconds`.

    Yields the limit (None where no limit can be set): check() reports
    only the expiry of its own limit.
    """
    if not _usable():
        yield None
        return
    if not _limits:
        left, interval = signal.getitimer(signal.ITIMER_REAL)
        _outer.update(handler=signal.getsignal(signal.SIGALRM),
                      deadline=time.monotonic() + left if left else None,
                      interval=interval)
        signal.signal(signal.SIGALRM, _on_alarm)
    limit = _Limit(seconds)
    _limits.append(limit)
    try:
        _arm()
        yield limit
    finally:
        _limits.remove(limit)
        if _limits:
            _arm()
        else:
            _restore_outer()


def _restore_outer():
    signal.setitimer(signal.ITIMER_REAL, 0)
    handler = _outer.get("handler")
    signal.signal(signal.SIGALRM,
                  signal.SIG_DFL if handler is None else handler)
    deadline = _outer.get("deadline")
    if deadline is not None:
        signal.setitimer(signal.ITIMER_REAL,
                         max(deadline - time.monotonic(), 1e-4),
                         _outer["interval"])
    _outer.clear()


@contextmanager
def unpaused(where):
    """Inside paused(): the clock runs again for the learner's code that
    the kit's own calls (a callback inside a real Trainer.train()). An
    expiry in there says `where` it happened, e.g. "StopAtLoss.on_log"."""
    if not _usable() or not _pauses:
        yield
        return
    now = time.monotonic()
    for limit in _limits:  # the pause so far, as paused() would count it
        limit.deadline += now - _pauses[0]
    depth = len(_pauses)
    _pauses.clear()
    _arm()
    try:
        yield
    except TimeLimit as expired:
        expired.where = getattr(expired, "where", None) or where
        raise
    finally:
        _pauses[:] = [time.monotonic()] * depth  # the pause goes on
        _arm()


@contextmanager
def paused():
    """Stop the clock of time_limit while the kit's own code runs inside
    (loading a model, building a trainer): only the learner's code counts.
    An outer alarm keeps counting: it is not ours to stop.
    """
    if not _usable() or not _limits:
        yield
        return
    _pauses.append(time.monotonic())
    _arm()
    try:
        yield
    finally:
        spent = time.monotonic() - _pauses.pop()
        if not _pauses:
            for limit in _limits:
                limit.deadline += spent
        _arm()

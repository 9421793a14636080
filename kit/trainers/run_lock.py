"""One run at a time into an output folder.

Two runs saving into one folder write over each other's checkpoints, and
each says it saved them. So a kit trainer holds a lock on its output
folder while it trains, and a second run into it is refused at its start,
naming the first. The lock is the operating system's (flock): it goes
with the process that holds it, so a run killed with kill -9 leaves none.
"""

import os
import sys
import time
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # Windows has no flock: runs there are not locked
    fcntl = None

LOCK = ".kit_run.lock"  # in the output folder while a run trains


@contextmanager
def output_folder_lock(folder, holds=True):
    """Hold the lock of `folder` within; refuse if another run holds it.

    holds: False in the processes that do not save (all but the first).
    """
    if fcntl is None or not holds:
        yield
        return
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, LOCK)
    descriptor = _lock(path, folder)
    try:
        os.ftruncate(descriptor, 0)
        os.write(descriptor, _who().encode())
        yield
    finally:
        try:  # before the lock goes: no one takes a lock on it
            os.remove(path)
        except FileNotFoundError:
            pass  # the folder was removed while the run trained
        os.close(descriptor)


def _lock(path, folder):
    """A descriptor of `path`, locked; the first run named if it is not."""
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            first = os.pread(descriptor, 500, 0).decode(errors="replace")
            os.close(descriptor)
            raise ValueError(
                f"output_dir {folder} is being written by another run "
                f"({first.strip() or 'starting'}): wait for it to end, or "
                "give this run another output_dir") from None
        try:  # the file we locked is still the one at `path`
            if os.stat(path).st_ino == os.fstat(descriptor).st_ino:
                return descriptor
        except FileNotFoundError:
            pass  # removed by the run before, as it ended: lock anew
        os.close(descriptor)


def _who():
    command = " ".join(os.path.basename(a) if i == 0 else a
                       for i, a in enumerate(sys.argv))
    return (f"process {os.getpid()}, started {time.strftime('%H:%M:%S')}: "
            f"{command[:160]}")

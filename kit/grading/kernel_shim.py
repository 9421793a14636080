"""The process between `kit grade` and each student's kernel, and the sweep.

`python -m kit.grading.kernel_shim WORK [--wall UID:GID|self [--memory
BYTES]] -- KERNEL COMMAND...` starts the kernel (behind
kit.grading.sandbox's wall, as UID:GID or as this user, held to BYTES of
data, when asked) and stays its parent, so a kernel's `os.kill(os.getppid(), ...)` reaches
this process, which shrugs off SIGTERM, SIGINT and SIGHUP, and never the
grader. On Linux it is a subreaper: whatever the kernel starts and leaves
behind (`start_new_session=True` included) becomes its child, and all of
it is ended when the kernel ends. If the grader itself dies, it ends the
kernel and removes the submission's temporary folder WORK.

`sweep(token)` ends every process whose environment carries the
submission's KIT_GRADE_RUN token: the grader's own check afterwards, for
what escaped even this (the shim killed with SIGKILL). Standard library
only: this runs once per submission and must start in milliseconds.
"""

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def _become_subreaper():
    """Orphans of our descendants become our children (Linux only)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # elsewhere the grader's sweep is what is left


def _parents():
    """{pid: parent pid} of every process we can see (empty without /proc)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # the name, in brackets, may hold spaces: split after it
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue  # it ended while we looked
    return parents


def _descendants(root):
    parents, found, frontier = _parents(), set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items()
                    if parent in frontier and pid not in found}
        found |= frontier
    return found


def _kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _reap():
    """Collect ended children (as a subreaper, orphans are ours to reap)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def end_descendants(root=None, rounds=20):
    """SIGKILL every descendant of `root` (default: this process)."""
    root = os.getpid() if root is None else root
    for _ in range(rounds):  # a fork in flight shows up in the next round
        left = _descendants(root)
        if not left:
            return
        _kill_all(left)
        time.sleep(0.05)
        _reap()


def sweep(token, rounds=20):
    """SIGKILL every process whose environment has KIT_GRADE_RUN=token."""
    marker = f"KIT_GRADE_RUN={token}".encode()
    for _ in range(rounds):
        found = []
        for environ in Path("/proc").glob("[0-9]*/environ"):
            try:
                if marker in environ.read_bytes().split(b"\0"):
                    found.append(int(environ.parent.name))
            except (OSError, ValueError):
                continue  # ended, or not ours to read
        found = [pid for pid in found if pid != os.getpid()]
        if not found:
            return
        _kill_all(found)
        time.sleep(0.05)


def parse(argv):
    """WORK [--wall UID:GID|self [--memory BYTES]] -- COMMAND...: (work,
    wall, memory, command); wall None, "self" or (uid, gid)
    (kit.grading.sandbox's modes), memory None (the wall's default) or
    bytes."""
    work, rest = argv[0], argv[1:]
    wall = memory = None
    if rest[:1] == ["--wall"]:
        wall, rest = rest[1], rest[2:]
        if wall != "self":
            wall = tuple(int(n) for n in wall.split(":"))
    if rest[:1] == ["--memory"]:
        memory, rest = int(rest[1]), rest[2:]
    return work, wall, memory, rest[1:]


def main(argv):
    work, wall, memory, command = parse(argv)
    grader = os.getppid()
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        # a handler, not SIG_IGN: handlers reset at exec, so the kernel
        # still stops on the interrupts the grader sends it
        signal.signal(number, lambda *_: None)
    _become_subreaper()
    env = dict(os.environ, JPY_PARENT_PID=str(os.getpid()))
    if wall:
        kernel = _Walled(work, wall, command, env, memory)
        # the grader interrupts this process's group: on to the kernel
        signal.signal(signal.SIGINT, lambda *_: kernel.send_signal(
            signal.SIGINT))
    else:
        kernel = subprocess.Popen(command, env=env)
    while kernel.poll() is None:
        if os.getppid() != grader:  # the grader is gone: so is the kernel
            kernel.kill()
            kernel.wait()
            break
        time.sleep(0.2)
    end_descendants()
    if os.getppid() != grader:
        shutil.rmtree(work, ignore_errors=True)
    return kernel.returncode


class _Walled:
    """The kernel behind kit.grading.sandbox's wall, as Popen is used here:
    this process's child is the namespace's pid 1, which ends with it."""

    def __init__(self, work, ids, command, env, memory=None):
        from kit.grading import sandbox
        here = os.getcwd()

        def run_kernel():
            os.chdir(here)  # the same folder, seen through the wall
            # ipykernel watches a parent other than 1 and ends when it
            # changes; pid 1 it leaves alone (the wall ends K with S)
            os.execvpe(command[0], command, dict(
                env, JPY_PARENT_PID="1", TMPDIR=os.environ["TMPDIR"]))
        self.pid = sandbox.start(work, None if ids == "self" else ids,
                                 run_kernel, memory or sandbox.MEMORY_LIMIT)
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self):
        while self.poll() is None:
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, signum):
        try:
            os.kill(self.pid, signum)
        except OSError:
            pass

    def kill(self):
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

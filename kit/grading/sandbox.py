"""A wall around each student's kernel, when `kit grade` runs as root (Linux).

    S (kernel_shim's role, root) -> I (pid 1 of a new PID namespace, root)
                                 -> K (the kernel, user nobody)

I gets a mount namespace of its own, built before K starts:

- a fresh /proc that shows only I, K and what K starts: not the grader, the
  zygote or another kernel, so not their environments (the instructor's
  secrets) and not their grade files either;
- an empty /tmp (and the temporary folder, if that is elsewhere) holding
  only this submission's folder: no other run's grade file to append to;
- the grader's home hidden, but for the Python and kit the kernel runs.

K runs as `nobody`, who can write only its own folder: the kit's source,
the venv and the submissions are root's and stay as they were. When K
ends, I ends, and Linux kills whatever is left in the namespace, whatever
session or parent it gave itself. Standard library only: the shim imports
this, and must start in milliseconds.
"""

import ctypes
import functools
import os
import pwd
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

USER = "nobody"  # every system has it; it owns nothing of the grader's
CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000  # linux/sched.h
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8  # linux/mount.h
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
PROBE_TIMEOUT = 30  # seconds the trial kernel-less run may take


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _call(name, *args):
    if getattr(_libc(), name)(*args) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{name}: {os.strerror(number)}")


def _mount(source, target, kind=None, flags=0, data=None):
    _call("mount", *[None if a is None else str(a).encode()
                     for a in (source, target, kind)],
          ctypes.c_ulong(flags), None if data is None else data.encode())


def account():
    """(uid, gid) of USER, or None where there is none."""
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def start(work, ids, run_kernel):
    """From S: K behind the wall, as (uid, gid) `ids`; returns I's pid.

    `run_kernel()` runs in K once it is `nobody`; it must not return (an
    exec, or os._exit)."""
    _call("unshare", CLONE_NEWPID)  # S's next child is pid 1 in a new one
    init = os.fork()
    if init:
        return init
    code = 1
    try:
        code = _init(Path(work), ids, run_kernel)
    finally:
        os._exit(code)


def _init(work, ids, run_kernel):
    """I: build the wall, start K, reap until K ends; K's exit status."""
    _call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # S gone: all
    os.setpgid(0, 0)  # the grader's interrupts come through S, not twice
    _call("unshare", CLONE_NEWNS)
    _build_wall(work)
    kernel = os.fork()
    if kernel == 0:
        try:
            _become(ids)
            run_kernel()
        finally:
            os._exit(127)
    # pid 1 gets only the signals it handles: SIGINT goes on to K
    signal.signal(signal.SIGINT, lambda *_: _tell(kernel, signal.SIGINT))
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda *_: None)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if pid == kernel:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def _tell(pid, signum):
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def _needed_under(home):
    """The folders under `home` the kernel reads: Python, the venv, kit."""
    wanted = {Path(p).resolve() for p in [
        sys.base_prefix, sys.prefix, os.path.realpath(sys.executable),
        _kit_root(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
        if os.path.isabs(p) and os.path.exists(p)}
    inside = sorted(p for p in wanted if home in p.parents or p == home)
    # a folder inside another one kept is kept with it
    return [p for p in inside if not any(q in p.parents for q in inside)]


def _build_wall(work):
    _mount(None, "/", flags=MS_REC | MS_PRIVATE)  # nothing leaks back out
    home = Path(pwd.getpwuid(0).pw_dir).resolve()
    kept = [(work, os.open(work, os.O_PATH | os.O_DIRECTORY), False)]
    if home != Path("/"):
        kept += [(p, os.open(p, os.O_PATH), True)
                 for p in _needed_under(home)]
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    hidden = {Path("/tmp"), Path(tempfile.gettempdir()).resolve()}
    if home != Path("/"):
        hidden.add(home)
    for folder in sorted(hidden):
        if folder.is_dir():
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV,
                   "mode=1777" if folder != home else "mode=755")
    if Path("/dev/shm").is_dir():
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
               "mode=1777")
    for path, fd, read_only in kept:  # back through the walls, each alone
        if Path(f"/proc/self/fd/{fd}").is_dir():
            os.makedirs(path, mode=0o755, exist_ok=True)
        else:
            os.makedirs(path.parent, mode=0o755, exist_ok=True)
            path.touch()
        _mount(f"/proc/self/fd/{fd}", path, flags=MS_BIND | MS_REC)
        if read_only:
            _mount(None, path, flags=MS_BIND | MS_REMOUNT | MS_RDONLY)
        os.close(fd)


def _become(ids):
    """K: nobody, for good (no setuid program gives root back)."""
    uid, gid = ids
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    _call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    # a changed uid makes /proc/self root's: the zygote's kernel rewrites
    # its own environment there (kit.grading.zygote.retag)
    _call("prctl", PR_SET_DUMPABLE, 1, 0, 0, 0)


# ------------------------------------------------ the grader's questions

@functools.lru_cache(maxsize=None)
def why_not():
    """None when kernels can run behind the wall here; else why not.

    Tried once a process, for real: a kernel-less Python behind the wall must import
    kit's grading package as nobody."""
    if not sys.platform.startswith("linux"):
        return "not Linux"
    if os.geteuid() != 0:
        return "the grader is not root"
    if account() is None:
        return f"no user {USER}"
    try:
        trial = subprocess.run(
            [sys.executable, "-m", "kit.grading.sandbox", "probe"],
            capture_output=True, text=True, timeout=PROBE_TIMEOUT,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                p for p in [_kit_root(), os.environ.get("PYTHONPATH")]
                if p)))
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if trial.returncode != 0 or trial.stdout.strip() != "walled":
        lines = (trial.stderr or trial.stdout).strip().splitlines()
        return lines[-1] if lines else f"exit {trial.returncode}"
    return None


def _kit_root():
    return str(Path(__file__).resolve().parent.parent.parent)


def _probe():
    """`probe`: a trial behind the wall; prints "walled" when it held."""
    work = Path(tempfile.mkdtemp(prefix="kit-wall-"))
    try:
        os.chmod(work, 0o711)
        uid, gid = account()
        os.chown(work, uid, gid)
        seen = work / "seen"
        test = ("import os, kit.grading; open('seen', 'w').write("
                "str([os.getuid(), os.getpid(), os.access('/', os.W_OK)]))")

        def run_kernel():
            os.chdir(work)
            os.execv(sys.executable, [sys.executable, "-c", test])
        init = start(work, (uid, gid), run_kernel)
        _, status = os.waitpid(init, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            print("a trial kernel could not start as nobody behind the wall"
                  " (can nobody read this Python and the kit?)",
                  file=sys.stderr)
            return 1
        if seen.read_text() != f"[{uid}, 2, False]":
            print(f"the wall did not hold: {seen.read_text()}",
                  file=sys.stderr)
            return 1
    except OSError as error:
        print(error, file=sys.stderr)
        return 1
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    print("walled")
    return 0


if __name__ == "__main__" and sys.argv[1:] == ["probe"]:
    sys.exit(_probe())

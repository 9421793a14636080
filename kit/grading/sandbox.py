"""A wall around each student's kernel in `kit grade` (Linux).

    S (kernel_shim's role) -> I (pid 1 of a new PID namespace)
                           -> K (the kernel: no capabilities left)

I gets a mount namespace of its own, built before K starts:

- a fresh /proc that shows only I, K and what K starts: not the grader, the
  zygote or another kernel, so not their environments (the instructor's
  secrets) and not their grade files either;
- an empty /tmp (and the temporary folder, if that is elsewhere) holding
  only this submission's folder: no other run's grade file to append to;
- the grader's home hidden, but for the Python and kit the kernel runs;
  those, wherever they are, read-only: no later grading finds them changed;
- every other folder of the machine read-only, but for the submission's
  own (its cwd, home and temp folder): a kernel fills no disk but its own;

and a network namespace of its own, with only its own loopback: it reaches
no other machine and no server of this one (its own 127.0.0.1 aside). The
grader talks to it through files (ZeroMQ's ipc transport) in its folder.

When K ends, I ends, and Linux kills whatever is left in the namespace,
whatever session or parent it gave itself. Run as root, K runs as `nobody`
("nobody" mode), who can write only its own folder. Run as anyone else, S
first enters a user namespace of its own ("self" mode: where the system
allows them), and K runs as the grader's user, with the rest of that
user's files as writable to it as ever. Standard library only: the shim
imports this, and must start in milliseconds.
"""

import ctypes
import functools
import os
import resource
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

USER = "nobody"  # every system has it; it owns nothing of the grader's
CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000  # linux/sched.h
CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8  # linux/mount.h
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
CAPABILITY_VERSION_3 = 0x20080522  # linux/capability.h
# statvfs's flags a read-only bind must keep (a user namespace may not
# drop them), as mount flags
KEPT_FLAGS = {2: MS_NOSUID, 4: MS_NODEV, 8: MS_NOEXEC,  # ST_ -> MS_
              1024: 1024, 2048: 2048, 4096: 1 << 21}  # the atime flags
PROBE_TIMEOUT = 30  # seconds the trial kernel-less run may take
# K's share. Its data (heap and private mappings, RLIMIT_DATA): grading the
# nine solution notebooks peaked at 1.6 GiB of it in a kernel (545 MB
# resident), so 4 GiB is what a notebook needs twice over. Its tmpfs
# folders (/tmp, /dev/shm, the hidden home): a kernel's temp files go to
# its own folder on disk (_own_temp_folder), so these hold next to nothing
MEMORY_LIMIT = 4 << 30  # `kit grade --memory` changes it
TMPFS_SIZE = "1g"
# mount_setattr(2) (Linux 5.12; one number on every architecture) sets a
# flag on a whole tree of mounts at once
SYS_MOUNT_SETATTR, MOUNT_ATTR_RDONLY, AT_RECURSIVE = 442, 1, 0x8000
AT_FDCWD = -100
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 1, 8, 0x40


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
    import pwd  # Unix only, like the wall
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


def mode():
    """"nobody" for a grader that is root (and a system with nobody), else
    "self": the kernel runs as the grader's user."""
    if getattr(os, "geteuid", lambda: None)() == 0 and account():
        return "nobody"
    return "self"


def start(work, ids, run_kernel, memory=MEMORY_LIMIT):
    """From S: K behind the wall, as (uid, gid) `ids` ("nobody" mode) or,
    with `ids` None, as this user in a user namespace ("self" mode), held
    to `memory` bytes of data; returns I's pid.

    `run_kernel()` runs in K once it has no capabilities left; it must not
    return (an exec, or os._exit)."""
    if ids is None:
        _own_user_namespace()
    _call("unshare", CLONE_NEWPID)  # S's next child is pid 1 in a new one
    init = os.fork()
    if init:
        return init
    code = 1
    try:
        code = _init(Path(work), ids, run_kernel, memory)
    finally:
        os._exit(code)


def _own_user_namespace():
    """This process in a user namespace where it is itself (same uid and
    gid), with the capabilities to build the wall, and no other ids."""
    uid, gid = os.getuid(), os.getgid()
    _call("unshare", CLONE_NEWUSER)
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _init(work, ids, run_kernel, memory):
    """I: build the wall, start K, reap until K ends; K's exit status."""
    _call("prctl", PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # S gone: all
    os.setpgid(0, 0)  # the grader's interrupts come through S, not twice
    _call("unshare", CLONE_NEWNS | CLONE_NEWNET)
    _loopback_up()
    _build_wall(work)
    kernel = os.fork()
    if kernel == 0:
        try:
            _become(ids)
            _own_temp_folder(work)
            # past it an allocation raises MemoryError in the cell: the
            # machine's other kernels and the grader keep theirs
            resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
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


def _own_temp_folder(work):
    """K's temp folder: its own, in its home inside the submission's
    folder (kit.grading.grade made it K's), made as K's user. The
    grader's TMPDIR lies behind the wall (in a hidden home) or is not K's
    to write, and a kernel forked warm has it cached from before the fork
    (tempfile.tempdir): mkdtemp would fail, and a right answer that
    trains be blamed for it. /tmp (a fresh tmpfs) where there is no home
    (the trial run)."""
    own = work / "home" / "tmp"
    try:
        own.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        own = Path("/tmp")
    os.environ["TMPDIR"] = tempfile.tempdir = str(own)


def _loopback_up():
    """A new network namespace's loopback starts down: up, code that talks
    to itself on 127.0.0.1 (its own) works as on any machine."""
    import fcntl
    import socket
    import struct
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            fcntl.ioctl(probe, SIOCSIFFLAGS, struct.pack(  # struct ifreq
                "16sH22x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))
    except OSError:
        pass  # no loopback: still no network


def _read_only_tree(root="/"):
    """Every mount under `root` read-only (in this mount namespace)."""
    libc = _libc()
    attr = (ctypes.c_uint64 * 4)(MOUNT_ATTR_RDONLY, 0, 0, 0)  # set, clear..
    if libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, root.encode(), AT_RECURSIVE,
                    ctypes.byref(attr), ctypes.sizeof(attr)) == 0:
        return
    if ctypes.get_errno() != 38:  # ENOSYS: a kernel older than 5.12
        raise OSError(ctypes.get_errno(), "mount_setattr: "
                      + os.strerror(ctypes.get_errno()))
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        try:
            flags = os.statvfs(point).f_flag
            _mount(None, point, flags=MS_BIND | MS_REMOUNT | MS_RDONLY | sum(
                mount for found, mount in KEPT_FLAGS.items() if flags & found))
        except OSError:
            continue  # hidden under another mount, or gone


def _tell(pid, signum):
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def _kernel_reads():
    """The folders the kernel reads: Python, the venv, kit (and PYTHONPATH);
    one inside another is kept with it."""
    wanted = {Path(p).resolve() for p in [
        sys.base_prefix, sys.prefix, os.path.realpath(sys.executable),
        _kit_root(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
        if os.path.isabs(p) and os.path.exists(p)} - {Path("/")}
    return sorted(p for p in wanted
                  if not any(q in p.parents for q in wanted))


def _build_wall(work):
    _mount(None, "/", flags=MS_REC | MS_PRIVATE)  # nothing leaks back out
    import pwd
    home = Path(pwd.getpwuid(os.getuid()).pw_dir).resolve()
    # opened before the walls go up, bound back through them after (the
    # submission's folder last: it may lie inside a read-only one)
    kept = [(p, os.open(p, os.O_PATH), True) for p in _kernel_reads()]
    kept += [(work, os.open(work, os.O_PATH | os.O_DIRECTORY), False)]
    # found before the tree is read-only (tempfile tries to write in it)
    hidden = {Path("/tmp"), Path(tempfile.gettempdir()).resolve()}
    _read_only_tree()  # the new mounts below are writable: its own
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if home != Path("/"):
        hidden.add(home)
    # sized: an unsized tmpfs may fill half the machine's memory
    for folder in sorted(hidden):
        if folder.is_dir():
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV,
                   ("mode=1777" if folder != home else "mode=755")
                   + f",size={TMPFS_SIZE}")
    if Path("/dev/shm").is_dir():
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
               f"mode=1777,size={TMPFS_SIZE}")
    for path, fd, read_only in kept:
        source = f"/proc/self/fd/{fd}"
        if not path.exists():  # it was behind a wall: a place to bind to
            if Path(source).is_dir():
                os.makedirs(path, mode=0o755)
            else:
                os.makedirs(path.parent, mode=0o755, exist_ok=True)
                path.touch()
        _mount(source, path, flags=MS_BIND | MS_REC)
        # a bind keeps its source's read-only flag: the submission's folder
        # is made writable again, the rest stays read-only
        flags = os.statvfs(path).f_flag
        _mount(None, path, flags=MS_BIND | MS_REMOUNT | sum(
            mount for found, mount in KEPT_FLAGS.items() if flags & found)
            | (MS_RDONLY if read_only else 0))
        os.close(fd)


def _become(ids):
    """K: nobody (given `ids`) or itself, with no capability left and no
    way back (no setuid program gives root back)."""
    if ids:
        uid, gid = ids
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    _drop_capabilities()
    _call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    # a changed uid makes /proc/self root's: the zygote's kernel rewrites
    # its own environment there (kit.grading.zygote.retag)
    _call("prctl", PR_SET_DUMPABLE, 1, 0, 0, 0)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32),
                ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _drop_capabilities():
    """None left, none to come back at an exec. (In "self" mode K keeps
    them until this: they are the user namespace's, which built the wall.)"""
    libc = _libc()
    for number in range(64):  # the bounding set: what an exec may give
        if libc.prctl(PR_CAPBSET_DROP, number, 0, 0, 0) != 0:
            if ctypes.get_errno() == 22:  # EINVAL: past the last one
                break
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _call("capset", ctypes.byref(_CapHeader(CAPABILITY_VERSION_3, 0)),
          ctypes.byref((_CapData * 2)()))


# ------------------------------------------------ the grader's questions

@functools.lru_cache(maxsize=None)
def why_not(wall_mode=None):
    """None when kernels can run behind the wall here, in `wall_mode`
    (default: mode()); else why not.

    Tried once a process, for real: a kernel-less Python behind the wall
    must import kit's grading package, and find the kit read-only."""
    wall_mode = wall_mode or mode()
    if not sys.platform.startswith("linux"):
        return "not Linux"
    try:
        trial = subprocess.run(
            [sys.executable, "-m", "kit.grading.sandbox", "probe", wall_mode],
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


def _probe(wall_mode):
    """`probe MODE`: a trial behind the wall; prints "walled" if it held."""
    work = Path(tempfile.mkdtemp(prefix="kit-wall-"))
    ids = account() if wall_mode == "nobody" else None
    try:
        if ids:
            os.chmod(work, 0o711)
            os.chown(work, *ids)
        seen = work / "seen"
        kit_file = Path(_kit_root()) / "kit" / "__init__.py"
        test = ("import os, kit.grading; open('seen', 'w').write(str(["
                f"os.getuid(), os.getpid(), os.access({str(kit_file)!r}, "
                "os.W_OK)]))")

        def run_kernel():
            os.chdir(work)
            os.execv(sys.executable, [sys.executable, "-c", test])
        init = start(work, ids, run_kernel)
        _, status = os.waitpid(init, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            print("a trial kernel could not start behind the wall (can "
                  f"{'nobody' if ids else 'it'} read this Python and the "
                  "kit?)", file=sys.stderr)
            return 1
        uid = ids[0] if ids else os.getuid()
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


if __name__ == "__main__" and sys.argv[1] == "probe":
    sys.exit(_probe(sys.argv[2]))

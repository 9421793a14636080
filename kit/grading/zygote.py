"""Warm kernels for `kit grade`: a zygote that has imported torch once.

A class of 30 notebooks spent most of each kernel's start importing torch,
transformers and datasets. `serve` imports them once (no thread started),
then forks every kernel from that state, like Android's zygote:

    grader -> client (what the KernelManager starts; standard library)
    zygote -> S (kit.grading.kernel_shim's role) -> K (the ipykernel kernel)

The client hands the zygote its stdin, stdout and stderr, its cwd, its
environment and the kernel's command line over a unix socket, forwards
SIGINT and SIGTERM to K and exits with K's status. S does what the shim
does: it is K's parent (so `os.getppid()` in a cell reaches S, which
shrugs off SIGTERM, SIGINT and SIGHUP), a new session, a subreaper that
ends whatever K leaves behind, and it ends K if the client or the grader
dies (then it removes WORK too). S and K write the submission's
KIT_GRADE_RUN token into their own /proc/PID/environ, so the grader's
sweep finds them as it finds a cold kernel. Whatever goes wrong (no
zygote, a thread in it, an odd command), the client becomes the cold shim.
"""

import ctypes
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from kit.grading import kernel_shim

MARKER = b"KIT_GRADE_RUN="
TOKEN_LENGTH = 32  # uuid4().hex
HEAVY = ["torch", "transformers", "datasets", "matplotlib",  # not pyplot
         "ipykernel.kernelapp", "kit.checks", "kit.course", "kit.trainers",
         "kit.models", "kit.losses", "kit.live", "kit.explore", "kit.recipes",
         "kit.tasks"]


# ------------------------------------------------------ the client side

def client(argv):
    """`client SOCKET WORK [--wall UID:GID|self [--memory BYTES]] --
    KERNEL COMMAND...`: a kernel forked warm (behind kit.grading.sandbox's
    wall, when asked)."""
    path, shim_argv = argv[0], argv[1:]
    work, wall, memory, command = kernel_shim.parse(shim_argv)
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(path)
        request = json.dumps({
            "command": command, "cwd": os.getcwd(), "env": dict(os.environ),
            "work": work, "wall": wall, "memory": memory})
        socket.send_fds(connection, [request.encode() + b"\n"], [0, 1, 2])
        replies = connection.makefile("r")
        first = replies.readline().split()
    except OSError:
        first = []
    if len(first) != 2 or first[0] != "pid":  # no warm kernel: a cold one
        os.execv(sys.executable, [sys.executable, "-m",
                                  "kit.grading.kernel_shim"] + shim_argv)
    kernel = int(first[1])
    for number in (signal.SIGINT, signal.SIGTERM):  # interrupts, shutdown
        signal.signal(number, lambda signum, _: _forward(kernel, signum))
    last = replies.readline().split()  # "exit N" when K has ended
    return int(last[1]) if len(last) == 2 and last[0] == "exit" else 1


def _forward(pid, signum):
    try:
        os.kill(pid, signum)
    except OSError:
        pass


# ------------------------------------------------------ the zygote side

def one_thread():
    """Forking is safe only with no other thread (their locks stay held)."""
    try:
        tasks = len(os.listdir("/proc/self/task"))
    except OSError:
        return False
    return threading.active_count() == 1 and tasks == 1


def retag(token):
    """Write `token` over KIT_GRADE_RUN's value in /proc/self/environ.

    The kernel is forked, not exec'd: the environment the kernel sees
    (os.environ) is new, but the one the grader's sweep reads is the
    zygote's, frozen at exec. It lives in our own memory: rewrite it.
    """
    token = token.encode()
    if len(token) != TOKEN_LENGTH:
        raise ValueError("token of the wrong length")
    # fields 50 and 51 of stat, counted after the name's ")" from field 3
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    start, end = int(fields[47]), int(fields[48])
    found = ctypes.string_at(start, end - start).find(MARKER)
    if found < 0:
        raise ValueError("no KIT_GRADE_RUN in the environment")
    ctypes.memmove(start + found + len(MARKER), token, TOKEN_LENGTH)
    if MARKER + token not in Path("/proc/self/environ").read_bytes().split(
            b"\0"):
        raise ValueError("the environment did not take the token")


def _alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1]
    except (OSError, IndexError):
        return False
    return state.split()[0] != "Z"


def _receive(connection):
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    while not message.endswith(b"\n"):
        more = connection.recv(1 << 20)
        if not more:
            raise OSError("the client hung up")
        message += more
    if len(fds) != 3:
        raise OSError("the client sent no stdin, stdout and stderr")
    return json.loads(message), fds


def _kernel(request, fds, shim):
    """K: the client's files, folder and environment, then ipykernel."""
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    own_temp = os.environ.get("TMPDIR")  # behind the wall: K's own
    os.environ.clear()
    os.environ.update(request["env"], JPY_PARENT_PID=str(shim))
    if request.get("wall"):
        os.environ["TMPDIR"] = own_temp
    retag(request["env"]["KIT_GRADE_RUN"])
    # a cold kernel starts from fresh randomness: so does a forked one
    import random
    import numpy
    import torch
    random.seed()
    numpy.random.seed()
    torch.seed()
    command = request["command"]
    sys.argv = [command[2]] + command[3:]  # python -m ipykernel_launcher
    from ipykernel import kernelapp
    kernelapp.launch_new_instance()


def _shim(request, fds, connection):
    """S: kit.grading.kernel_shim's role for a kernel forked from the
    zygote."""
    os.setsid()
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda *_: None)
    kernel_shim._become_subreaper()
    retag(request["env"]["KIT_GRADE_RUN"])

    def run_kernel():
        connection.close()
        code = 1
        try:
            _kernel(request, fds, os.getppid())
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 0
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(code)
    if request.get("wall"):  # K behind the wall; `kernel` is its pid 1
        from kit.grading import sandbox
        wall = request["wall"]
        kernel = sandbox.start(request["work"], None if wall == "self"
                               else tuple(wall), run_kernel,
                               request.get("memory") or sandbox.MEMORY_LIMIT)
    else:
        kernel = os.fork()
        if kernel == 0:
            run_kernel()
    for fd in fds:
        os.close(fd)
    connection.sendall(f"pid {kernel}\n".encode())
    status, grader = None, request["grader"]
    while status is None:
        if not (_alive(request["client"]) and _alive(grader)):
            kernel_shim._kill_all([kernel])
        time.sleep(0.1)
        while True:  # orphans are ours to reap too; K's status is kept
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == kernel:
                status = os.waitstatus_to_exitcode(code)
    kernel_shim.end_descendants()
    if not _alive(grader):
        import shutil
        shutil.rmtree(request["work"], ignore_errors=True)
    try:
        connection.sendall(f"exit {status if status >= 0 else 128 - status}"
                           "\n".encode())
    except OSError:
        pass


def _parent(pid):
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(
            ")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _fork_shim(server, connection, grader):
    request, fds = _receive(connection)
    # only the grader's own children may ask: a kernel that found our
    # socket must not get a process outside its shim's reach
    peer, _, _ = struct.unpack("3i", connection.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    request.update(client=peer, grader=grader)
    command = request["command"]
    if not (one_thread() and _parent(peer) == grader
            and command[1:3] == ["-m", "ipykernel_launcher"]
            and len(request["env"].get("KIT_GRADE_RUN", "")) == TOKEN_LENGTH):
        connection.sendall(b"cold\n")
        return
    if os.fork() == 0:
        try:
            server.close()
            null = os.open(os.devnull, os.O_RDWR)
            for target in (0, 1, 2):  # not the grader's pipes to us
                os.dup2(null, target)
            _shim(request, fds, connection)
        finally:
            os._exit(0)
    for fd in fds:
        os.close(fd)


def serve(path):
    """`serve SOCKET`: import the heavy modules, fork kernels on request.

    Prints "ready" when it listens; ends when its stdin (the grader's
    pipe) closes, or the grader is gone.
    """
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, lambda *_: None)  # only the grader ends us
    grader = os.getppid()
    os.environ.setdefault("MPLBACKEND",  # what ipykernel would set
                          "module://matplotlib_inline.backend_inline")
    # pyarrow's jemalloc starts a thread of its own unless told not to
    os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")
    import importlib
    for name in HEAVY:
        importlib.import_module(name)
    import gc
    gc.freeze()  # the imported objects stay shared with every fork
    retag(os.environ["KIT_GRADE_RUN"])  # it works here, before any kernel
    if not one_thread():
        print(f"{len(os.listdir('/proc/self/task'))} threads after the "
              "imports, not one", flush=True)
        return 1
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(16)
    print("ready", flush=True)
    while os.getppid() == grader:
        readable, _, _ = select.select([server, sys.stdin], [], [], 0.5)
        kernel_shim._reap()
        if sys.stdin in readable and not os.read(0, 1):
            break
        if server in readable:
            connection, _ = server.accept()
            with connection:
                try:
                    _fork_shim(server, connection, grader)
                except (OSError, ValueError):
                    pass  # that client starts cold
    return 0


if __name__ == "__main__":
    role, rest = sys.argv[1], sys.argv[2:]
    sys.exit(serve(rest[0]) if role == "serve" else client(rest))

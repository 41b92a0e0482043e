"""A graded notebook's kernel, forked with `torch` and ipykernel already imported instead of started cold.

A new kernel costs a fresh Python, ipykernel and `import torch`: one to three seconds, every notebook of every
student. The grading server (autograder.grading.autograde_process) imports them once; each grading job forks, before
nbgrader starts any thread, one waiting copy of itself. When nbgrader asks jupyter_client for the kernel, the
provisioner below hands that copy the kernel's connection file, environment and folder instead of starting
`python -m ipykernel_launcher`; the copy becomes an ordinary ipykernel with the grader's guard installed, as
the guard's sitecustomize would install it in a cold kernel. It is the job's own child, so the job's sandbox
(network namespace, memory cap, the subreaper that ends what it leaves behind) holds it as it held a cold one.

With a box (autograder.box), the copy goes into it before it becomes the kernel (autograder.box.box.go_in): the
kernel runs there, as the box's own user, its connection file carried in.

Anything else (a kernel restart, another kernel spec) starts cold, as jupyter_client always does, and with a box
through `python -m autograder.box.enter`, which goes into the same box first.
"""
from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys

from jupyter_client.provisioning import LocalProvisioner

from autograder.box.box import Entry, carry_connection_file, go_in, inside_environment

NAME = "course-warm-kernel"
# Imported once by the grading server, before any job forks: what every kernel would otherwise import itself.
# torch._dynamo: the first optimizer a process makes imports it (about 1.2 s), and notebooks 06 and 07 make one.
# matplotlib.pyplot: every notebook draws (about 1 s); its backend is chosen in the kernel, as a cold one chooses it.
PRELOAD = ["torch", "torch._dynamo", "ipykernel.kernelapp", "matplotlib.pyplot"]
# What ipykernel puts in MPLBACKEND when the environment names no backend, for matplotlib to read on import.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


class _Waiting:
    """The forked copy that waits to become the kernel, and the pipe its orders go down."""

    def __init__(self, pid: int, orders: int):
        self.pid, self.orders = pid, orders


_waiting: _Waiting | None = None
_box: Entry | None = None  # the box this job's kernels go into; None: none


def fork_waiting_kernel(box: Entry | None = None) -> None:
    """Fork the copy that will become this job's kernel, which goes into `box` first (None: runs where it is). Call
    it while this process runs one thread only. Where the machine refuses the fork (out of processes or memory), the
    kernel starts cold, as it always could."""
    global _waiting, _box
    _box = box
    job = os.getpid()
    try:
        read, write = os.pipe()
        pid = os.fork()
    except OSError as error:
        print(f"warm kernel: none ({error}); the kernel starts cold", file=sys.stderr)
        return
    if pid == 0:
        os.close(write)
        _end_with_the_job(job)
        _become_kernel(read, box)  # never returns
    os.close(read)
    _waiting = _Waiting(pid, write)
    _use_this_provisioner()


def _use_this_provisioner() -> None:
    from jupyter_client.provisioning.factory import EntryPoint, KernelProvisionerFactory

    KernelProvisionerFactory.provisioners[NAME] = EntryPoint(
        name=NAME, value=f"{__name__}:WarmKernelProvisioner", group=KernelProvisionerFactory.GROUP_NAME)
    os.environ[KernelProvisionerFactory.default_provisioner_name_env] = NAME


def discard() -> None:
    """End the waiting copy if no kernel was asked of it."""
    global _waiting
    if _waiting is not None:
        os.close(_waiting.orders)  # it reads the end of the pipe and leaves
        os.waitpid(_waiting.pid, 0)
        _waiting = None


def _claim() -> _Waiting | None:
    global _waiting
    claimed, _waiting = _waiting, None
    return claimed


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _close_inherited_files() -> None:
    """Close every file this copy of the grading job holds but the three standard ones (its log), before it goes
    into a box: a descriptor carries its file through any mount namespace (the job's slot lock, the forkserver's
    pipes, an open file of the grader's)."""
    os.closerange(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536)


def _end_with_the_job(job: int) -> None:
    """Die with the job that forked this copy, however the job ends. A job killed outright (SIGKILL, as when an
    instructor kills a grading run's process group) cleans up nothing, and the kernel, in a session of its own,
    is not in that group: without this it would wait for orders forever, holding torch's memory."""
    from autograder.grading.sandbox import end_with_parent

    end_with_parent(signal.SIGKILL)
    if os.getppid() != job:  # the job died before the line above
        os._exit(0)


def _become_kernel(orders: int, box: Entry | None) -> None:
    """In the forked copy: wait for the kernel's orders, go into the box if there is one, then be that kernel until
    it is told to stop."""
    code = 0
    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
        order = _read_all(orders)
        os.close(orders)
        if not order:
            os._exit(0)
        order = json.loads(order)
        os.setsid()  # as jupyter_client starts a kernel: its own session, so its process group can be signalled
        if box is not None:
            _close_inherited_files()
            order["argv"], carry = carry_connection_file(order["argv"])
            go_in(box, carry)  # returns inside, as the box's user, in the notebook's folder
            order["env"], order["cwd"] = inside_environment(order["env"]), box.work
        os.environ.clear()
        os.environ.update(order["env"])
        os.chdir(order["cwd"])
        # What a cold start reads from the environment: the module path, the threads of torch's math.
        sys.path[:] = dict.fromkeys([p for p in order["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
                                    + interpreter_paths())  # a folder twice is kept once, as `site` keeps it
        sys.argv = [order["argv"][0], *order["argv"][3:]]
        _be_a_main_process()
        import torch

        threads = order["env"].get("OMP_NUM_THREADS")
        if threads:
            torch.set_num_threads(int(threads))
        _choose_matplotlib_backend()
        if order["env"].get("COURSE_GRADING_GUARD"):
            from autograder.grading.guard.policy import install_from_environment

            install_from_environment()
        from ipykernel import kernelapp

        kernelapp.launch_new_instance(argv=order["argv"][3:])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # noqa: BLE001: reported where a kernel's errors go, the job's log
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


@functools.cache
def interpreter_paths() -> list[str]:
    """The module path this Python starts with, less PYTHONPATH and the script's folder: the standard library,
    site-packages, what their .pth files add (an editable install, packages installed with `--target` elsewhere)
    and the user's site-packages. A cold kernel's path is PYTHONPATH and then these. Asked of a fresh interpreter,
    once per grading server (autograder.grading.warm_server), because this process's own path also holds what its parent
    put there. Where that fails, the folders under the interpreter's prefix."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    try:
        found = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sys.path))"], env=env,
                               capture_output=True, text=True, timeout=60, check=True)
        return [path for path in json.loads(found.stdout) if path]
    except (OSError, subprocess.SubprocessError, ValueError):
        return [path for path in sys.path if path and path.startswith((sys.base_prefix, sys.prefix))]


def _choose_matplotlib_backend() -> None:
    """Give a matplotlib imported before the fork the backend a cold kernel's import reads from MPLBACKEND: the
    environment's, or the inline one ipykernel sets. Only the name: the backend itself is imported at the first
    figure, once the kernel's shell exists, so it hooks into the shell and shows each cell's figures as a cold
    kernel does. (A matplotlibrc beside the notebook is not read, as it would be by a cold kernel's import: a
    hand-in cannot change how its figures are drawn.)"""
    if "matplotlib" in sys.modules:
        import matplotlib

        matplotlib.rcParams["backend"] = os.environ.get("MPLBACKEND") or INLINE_BACKEND


def _be_a_main_process() -> None:
    """Be, to `multiprocessing`, the main process of a fresh Python, as a cold kernel is: no parent process, no
    children, and the platform's default start method. (The grading job is a forkserver's child; a lock made
    under that start method would be registered with the grader's resource tracker and, the kernel being
    killed at the end, reported as leaked when grading ends.)"""
    import multiprocessing
    from multiprocessing import process

    me = process.current_process()
    me._identity, me._name, me._parent_pid, me._parent_name, me._popen = (), "MainProcess", None, None, None
    me._config["daemon"] = False
    process._parent_process = None
    process._children = set()
    multiprocessing.set_start_method(None, force=True)


class _ForkedKernel:
    """What jupyter_client's LocalProvisioner expects of a `subprocess.Popen`, for the forked kernel."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                self.returncode = 0
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _is_ipykernel(cmd: list[str]) -> bool:
    """Whether `cmd` is the usual `<this python> -m ipykernel_launcher -f <connection file> ...`."""
    return (len(cmd) >= 5 and os.path.realpath(cmd[0]) == os.path.realpath(sys.executable)
            and cmd[1:3] == ["-m", "ipykernel_launcher"] and "-f" in cmd)


class WarmKernelProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, which hands the job's waiting copy the kernel's orders when it can, and
    starts any other kernel through the job's box (if it has one)."""

    async def launch_kernel(self, cmd: list[str], **kwargs):
        waiting = _claim() if _is_ipykernel(cmd) else None
        if waiting is None:
            if _box is not None:
                cmd = [sys.executable, "-m", "autograder.box.enter", _box.to_json(), "--", *cmd]
            return await super().launch_kernel(cmd, **kwargs)
        order = {"argv": cmd, "env": dict(kwargs.get("env") or os.environ), "cwd": str(kwargs.get("cwd") or os.getcwd())}
        _write_all(waiting.orders, json.dumps(order).encode())
        os.close(waiting.orders)
        self.process = _ForkedKernel(waiting.pid)
        self.pid = self.pgid = waiting.pid
        self.cwd = order["cwd"]
        return self.connection_info

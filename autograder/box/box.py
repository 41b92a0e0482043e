"""A box, started and gone into: bubblewrap makes it, the kernel's process enters it as `nsenter` would.

    Box.start(view, who, limits)   run bubblewrap: new user, mount, PID, IPC and UTS namespaces holding `view`
                                   (autograder.box.view), its user namespace mapped by the grader (its inside user
                                   `BOX_INSIDE` to the box's own id, autograder.box.who), a cgroup of its own where
                                   the machine gives one; inside, bubblewrap's init and a process that waits
    go_in(entry)                   in a process forked from the grading job (the warm kernel, or a cold kernel's
                                   launcher): join the box's namespaces and root, then fork the process that becomes
                                   the kernel, which copies the hand-in in, sets its limits and drops every privilege
                                   (its own user id, no capability, no new privileges, no user namespace of its own)
    Box.collect(records)           after the notebook ran: the hidden tests' recordings read out, capped, as data
    Box.end()                      kill the box: its init dies, and the kernel takes every process left inside with it

Why the kernel enters a box made for it instead of being started inside one: a kernel forked from the grading job
has torch, ipykernel and matplotlib imported already (autograder.grading.warm_kernel), 2 to 4.5 s of CPU a notebook
saves; a process bubblewrap starts imports them again. The kernel's process stays in the grading job's network
namespace, which has only loopback (autograder.box.job_namespace), where it and nbgrader talk.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import shutil
import signal
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from autograder.box import cgroups
from autograder.box.view import CONNECTION_FILE, HAND_IN, HOME, KERNEL_LOG, View, arguments
from autograder.box.who import BOX_INSIDE, BoxUnavailable, Slot, tool

CLONE = {"user": 0x10000000, "ipc": 0x08000000, "uts": 0x04000000, "pid": 0x20000000, "mnt": 0x00020000}
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
START_SECONDS = 20  # how long bubblewrap may take to make a box
CGROUPS_VARIABLE = "TFS_BOX_CGROUPS"  # a cgroup tree given to this account for its boxes (the class hub's grader)
RECORDS_MAX_FILES = 1000


@dataclass(frozen=True)
class Limits:
    """What one box may use."""
    memory_mb: int = 3072  # every process and every file in memory together, where the box has a cgroup
    processes: int = 256  # tasks at once (threads count): RLIMIT_NPROC in the box's own user namespace, and pids.max
    cpu_seconds: int = 3600  # CPU time of each of its processes (RLIMIT_CPU)
    file_mb: int = 512  # the largest file it may write (RLIMIT_FSIZE)


@dataclass(frozen=True)
class Entry:
    """What a process needs to go into a running box."""
    init: int  # the box's first process (bubblewrap's init), as the host numbers it
    uid: int | None  # the user and group to become inside (BOX_INSIDE); None: stay, with every capability dropped
    cgroup_procs: tuple[str, ...]  # the box's cgroup's `cgroup.procs` files (one per hierarchy on cgroup v1)
    work: str
    records: str
    hand_in: bool
    limits: Limits

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Entry":
        fields = json.loads(text)
        return cls(**{**fields, "cgroup_procs": tuple(fields["cgroup_procs"]), "limits": Limits(**fields["limits"])})


class Box:
    """A running box (see the module's docstring)."""

    def __init__(self, process: subprocess.Popen, entry: Entry, slot: Slot, cgroup: cgroups.Cgroup | None,
                 view: View, notes: list[str], waiter: int):
        self.process, self.entry, self.slot, self.cgroup, self.view = process, entry, slot, cgroup, view
        self.notes = notes  # what the instructor should know of this box (no cgroup, and why)
        self.waiter = waiter  # the process that keeps the box open

    @classmethod
    def start(cls, view: View, slot: Slot, limits: Limits = Limits()) -> "Box":
        """Make a box showing `view`, its processes `slot`'s ids (autograder.box.who.take_slot), held to `limits`.
        BoxUnavailable when bubblewrap cannot make it (with bubblewrap's own words). `slot` is the box's from then on:
        `end` frees it."""
        notes: list[str] = []
        cgroup = None
        try:
            cgroup = _box_cgroup(slot, limits)
        except (OSError, cgroups.CgroupsUnavailable) as why:
            notes.append(f"box: no cgroup of its own ({why}); its processes and memory are held by limits on each "
                         "process")
        info_read, info_write = os.pipe()
        block_read, block_write = os.pipe()
        argv = [tool("bwrap"), "--unshare-user", "--userns-block-fd", str(block_read), "--info-fd", str(info_write),
                "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent",
                "--cap-drop", "ALL", *arguments(view), "--chdir", "/", "--", "sleep", "infinity"]
        try:
            process = subprocess.Popen(argv, pass_fds=(info_write, block_read), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as error:
            os.close(slot.lock) if slot.lock >= 0 else None
            raise BoxUnavailable(f"bubblewrap did not start ({error})") from None
        finally:
            os.close(info_write)
            os.close(block_read)
        try:
            init = json.loads(_read_json(info_read, process))["child-pid"]
            _map_ids(init, slot)
            os.write(block_write, b"1")
            os.close(block_write)
            waiter = _wait_until_ready(init, process)
        except (OSError, ValueError, KeyError, BoxUnavailable) as error:
            os.close(block_write) if _is_open(block_write) else None
            process.kill()
            said = process.communicate(timeout=10)[1].decode(errors="replace").strip()
            if slot.lock >= 0:
                os.close(slot.lock)
            raise BoxUnavailable(f"bubblewrap could not make the box: {said or error}") from None
        finally:
            os.close(info_read)
        procs = tuple(str(folder / "cgroup.procs") for folder in cgroup.folders) if cgroup else ()
        entry = Entry(init, BOX_INSIDE if slot.uid is not None else None, procs, view.work, view.records,
                      view.hand_in is not None, limits)
        return cls(process, entry, slot, cgroup, view, notes, waiter)

    def collect(self, records: Path) -> None:
        """Copy what the hidden tests recorded in the box into `records` on the host: plain files only (never a link
        or what it points at), at most RECORDS_MAX_FILES, each read whole from a file system of bounded size."""
        source = f"/proc/{self.entry.init}/root{self.view.records}"
        try:
            folder = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return  # the box ended early (its kernel killed its init): nothing recorded, nothing earned
        try:
            for count, name in enumerate(sorted(os.listdir(folder))):
                if count >= RECORDS_MAX_FILES:
                    break
                try:
                    descriptor = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
                except OSError:
                    continue
                with os.fdopen(descriptor, "rb") as source_file:
                    if not _is_regular(descriptor):
                        continue
                    with open(records / name, "wb") as target:
                        shutil.copyfileobj(source_file, target)
        finally:
            os.close(folder)

    def kernel_log(self, limit: int = 8192) -> str:
        """The end of what the kernel itself printed to its stdout and stderr (not its cells' output)."""
        try:
            descriptor = os.open(f"/proc/{self.entry.init}/root{KERNEL_LOG}", os.O_RDONLY | os.O_NOFOLLOW |
                                 os.O_NONBLOCK)
        except OSError:
            return ""
        with os.fdopen(descriptor, "rb") as log:
            if not _is_regular(descriptor):
                return ""
            log.seek(max(0, os.fstat(descriptor).st_size - limit))
            return log.read(limit).decode(errors="replace")

    def end(self) -> int:
        """Kill the box and everything in it (its init first: the kernel ends every process of a PID namespace whose
        init dies); free its ids and its cgroup. Returns how many processes the notebook had left running in it."""
        left = len(self.left_running())
        try:
            os.kill(self.entry.init, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        _reap(self.entry.init)
        if self.cgroup is not None:
            self.cgroup.kill()
            try:
                self.cgroup.remove()
            except OSError:
                pass
        if self.slot.lock >= 0:
            os.close(self.slot.lock)
            self.slot = Slot(self.slot.uid, self.slot.gid, -1)
        return left

    def left_running(self) -> list[int]:
        """The processes the notebook started that still run in the box: every live process of its PID namespace
        whose parent is in the box too (the kernel's own process, whose parent is outside, and the process that
        waits are not counted)."""
        try:
            namespace = os.readlink(f"/proc/{self.entry.init}/ns/pid")
        except OSError:
            return []
        members: dict[int, tuple[str, int]] = {}  # pid -> (state, parent)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                    state, parent = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:2]
                    members[int(entry)] = (state, int(parent))
            except (OSError, ValueError):
                continue
        return [pid for pid, (state, parent) in members.items()
                if pid not in (self.entry.init, self.waiter) and state != "Z" and parent in members]


def _reap(init: int, seconds: float = 10) -> None:
    """Wait until the box's init has exited, reaping this process's dead children meanwhile: the kernel's process,
    its launcher killed, became this subreaper's child, and the init that ends a PID namespace waits until every
    process of it is reaped."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        dead = _dead(init)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        if dead:
            return
        time.sleep(0.005)


def _dead(pid: int) -> bool:
    """Whether process `pid` has exited (gone, or a zombie whose parent has not reaped it yet): an init is a zombie
    only once every process of its namespace has ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _is_open(descriptor: int) -> bool:
    try:
        os.fstat(descriptor)
        return True
    except OSError:
        return False


def _is_regular(descriptor: int) -> bool:
    import stat
    return stat.S_ISREG(os.fstat(descriptor).st_mode)


def _read_json(descriptor: int, process: subprocess.Popen) -> str:
    """bubblewrap's --info-fd: its JSON, once written whole, within START_SECONDS."""
    text, deadline = b"", time.monotonic() + START_SECONDS
    while not text.rstrip().endswith(b"}"):
        ready, _, _ = select.select([descriptor], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise BoxUnavailable(f"bubblewrap said nothing within {START_SECONDS} s")
        chunk = os.read(descriptor, 4096)
        if not chunk:
            raise BoxUnavailable("bubblewrap stopped before the box was made")
        text += chunk
    return text.decode()


def _map_ids(init: int, slot: Slot) -> None:
    """The box's user namespace's ids: its root is the grading account (never used once the box is made: bubblewrap
    drops every capability, the kernel drops to BOX_INSIDE) and BOX_INSIDE is the box's own id; with no id of its
    own ("self"), only its root, the grading account."""
    uid, gid = os.getuid(), os.getgid()
    users, groups = f"0 {uid} 1\n", f"0 {gid} 1\n"
    if slot.uid is not None:
        users += f"{BOX_INSIDE} {slot.uid} 1\n"
        groups += f"{BOX_INSIDE} {slot.gid} 1\n"
    else:
        _write(f"/proc/{init}/setgroups", "deny")
    _write(f"/proc/{init}/uid_map", users)
    _write(f"/proc/{init}/gid_map", groups)


def _write(path: str, text: str) -> None:
    with open(path, "w") as file:
        file.write(text)


def _wait_until_ready(init: int, process: subprocess.Popen) -> int:
    """Until bubblewrap's init has started the waiting process (the box's mounts are all made by then); its pid."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BoxUnavailable(f"bubblewrap stopped (exit {process.returncode})")
        try:
            children = Path(f"/proc/{init}/task/{init}/children").read_text().split()
            if children:
                return int(children[0])
        except OSError:
            pass
        time.sleep(0.002)
    raise BoxUnavailable(f"the box was not ready within {START_SECONDS} s")


def _box_cgroup(slot: Slot, limits: Limits) -> cgroups.Cgroup:
    """The box's own cgroup, under the tree this account was given for its boxes (CGROUPS_VARIABLE: the class hub's
    grader, its boxes an equal share of the grader's CPU each), or root's `tfs-boxes` (memory and processes only:
    its CPU time is shared as its grading job's is); its leftovers (a box of the same id killed with its job) killed
    first."""
    given = os.environ.get(CGROUPS_VARIABLE)
    if given:
        tree = cgroups.Tree.from_description(given)
    elif os.geteuid() == 0:
        tree = cgroups.Tree.named("tfs-boxes", controllers=("memory", "pids")).make_base()
    else:
        raise cgroups.CgroupsUnavailable("this account was given no cgroups for its boxes")
    name = f"box-{slot.uid}" if slot.uid is not None else f"box-of-{os.getpid()}"
    cgroup = tree.cgroup(name).make()
    cgroup.kill()
    cgroup.limit(cgroups.Limits(memory_mb=limits.memory_mb, processes=limits.processes))
    return cgroup


# In the process that goes in.

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def go_in(entry: Entry, carry: dict[str, bytes] | None = None) -> None:
    """Go into the box `entry` names, from a single-threaded process forked from the grading job; write `carry`
    (inside path -> content: the kernel's connection file) in it. Returns only in a new child, inside the box with
    no privilege left, its output going to KERNEL_LOG; this process waits for that child and exits with its status.
    OSError when the box cannot be entered (the kernel then never starts)."""
    for procs in entry.cgroup_procs:
        _write(procs, "0")
    spaces = {name: os.open(f"/proc/{entry.init}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC) for name in CLONE}
    root = os.open(f"/proc/{entry.init}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    _check(_libc.setns(spaces["user"], CLONE["user"]), "joining the box's user namespace")
    # No user namespace of its own below this one, where a process would have every capability again. A setting of
    # the user namespace, written while this process still sees the host's /proc (the box's /proc/sys is read-only).
    _write("/proc/sys/user/max_user_namespaces", "0")
    for name in ("ipc", "uts", "pid", "mnt"):
        _check(_libc.setns(spaces[name], CLONE[name]), f"joining the box's {name} namespace")
    os.fchdir(root)
    os.chroot(".")
    os.chdir("/")
    for descriptor in (*spaces.values(), root):
        os.close(descriptor)
    child = os.fork()  # the first process that is in the box's PID namespace
    if child:
        _wait_and_leave(child, entry)
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "asking to end with the launcher")
    if os.getppid() != 0:  # its parent, outside the namespace, is numbered 0 here; it died before the line above
        os._exit(1)
    log = os.open(KERNEL_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    if entry.hand_in:
        shutil.copytree(HAND_IN, entry.work, symlinks=True, dirs_exist_ok=True)
    os.mkdir(HOME, 0o700)
    for path, content in (carry or {}).items():
        with open(path, "wb") as file:
            file.write(content)
    if entry.uid is not None:
        for top in (entry.work, HOME):
            for folder, _, files in os.walk(top):
                for path in [folder, *(os.path.join(folder, name) for name in files)]:
                    os.lchown(path, entry.uid, entry.uid)
        for path in (entry.records, *(carry or {})):
            os.chown(path, entry.uid, entry.uid)
    _set_limits(entry.limits)
    _drop_privileges(entry.uid)
    os.chdir(entry.work)


def _wait_and_leave(child: int, entry: Entry) -> None:
    """The launcher's part once the kernel's process is inside: hold no privilege either, pass interrupts on (the
    kernel is in this process's group, which jupyter_client signals), and exit as the child does."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _drop_privileges(entry.uid, check=False)  # outside the box's PID namespace: no /proc/self to check in
    except OSError:
        os.kill(child, signal.SIGKILL)
        os._exit(1)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(status) % 256)


def _set_limits(limits: Limits) -> None:
    for name, value in ((resource.RLIMIT_NPROC, limits.processes), (resource.RLIMIT_CPU, limits.cpu_seconds),
                        (resource.RLIMIT_FSIZE, limits.file_mb << 20), (resource.RLIMIT_CORE, 0)):
        soft, hard = resource.getrlimit(name)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(name, (value, value))


def _drop_privileges(uid: int | None, check: bool = True) -> None:
    """Become `uid` (its group too, and no other) inside the box, which leaves no capability; with None, drop every
    capability. Then no new privileges for good (a set-user-id program runs as its caller), and check both."""
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    else:
        _check(_libc.capset(ctypes.byref(_CapHeader(0x20080522, 0)), (_CapData * 2)()), "dropping capabilities")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "forbidding new privileges")
    if not check:
        return
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    held = {name: status[name].strip() for name in ("CapInh", "CapPrm", "CapEff", "CapAmb")
            if status.get(name, "0").strip().strip("0")}
    if held or status.get("NoNewPrivs", "").strip() != "1":
        raise OSError(f"the box's process kept privileges: {held or status.get('NoNewPrivs')}")


# The names of what opens something else, never for a graded notebook: the hub's API token (JupyterHub gives one to
# each service and server), OAuth and LMS secrets, passwords and keys an instructor exported.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|(^|_)KEY$|^JUPYTERHUB_|^JPY_API", re.IGNORECASE)


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the variables whose names say they hold a secret (SECRET_NAME)."""
    return {name: value for name, value in env.items() if not SECRET_NAME.search(name)}


@contextlib.contextmanager
def secrets_put_away():
    """This process's environment without its secrets while inside: a process started here (the grading server every
    notebook's kernel is forked from) inherits none, not even in the copy of the environment at its start."""
    secrets = {name: os.environ[name] for name in set(os.environ) - set(without_secrets(os.environ))}
    for name in secrets:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(secrets)


def inside_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A kernel's environment, as it is inside a box: no secret, its home and temporary folder the box's own."""
    return {**without_secrets(env), "HOME": HOME, "TMPDIR": "/tmp"}


def carry_connection_file(argv: list[str]) -> tuple[list[str], dict[str, bytes]]:
    """A kernel's command line with its connection file (`-f PATH`, the grader's) at CONNECTION_FILE instead, and
    what to carry in for it (go_in's `carry`)."""
    if "-f" not in argv or argv.index("-f") + 1 >= len(argv):
        return argv, {}
    where = argv.index("-f") + 1
    content = Path(argv[where]).read_bytes()
    return [*argv[:where], CONNECTION_FILE, *argv[where + 1:]], {CONNECTION_FILE: content}

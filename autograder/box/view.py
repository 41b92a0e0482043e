"""What a box sees: bubblewrap's arguments for its file system.

    /usr /etc /bin /lib ...     the system's programs, libraries and settings, read-only
    read_only                   each at its own path, read-only: the Python environment, the student package, the
                                grader's files the kernel runs (the hidden tests' helpers, the guard), the earlier
                                notebooks' stand-ins; never the course directory itself
    HAND_IN                     the hand-in's files, read-only, copied into `work` as the kernel goes in
    work                        the notebook's folder, where the kernel runs: an empty file system in memory
    records                     where the hidden tests record what they see: the same, read back by the grader
    /tmp, /dev/shm              private, in memory
    /proc, /dev                 the box's own processes; null, zero, random and a terminal

Every folder it may write is a tmpfs of a bounded size (`Sizes`) that ends with the box, so a box owns nothing on
disk and fills no disk; where the box has a cgroup, what those hold counts against its memory too. Everything else,
the root included, is read-only. A folder made only to hold a mount point is empty and every account may enter it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

SYSTEM = ["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys/devices/system/cpu"]
HAND_IN = "/run/box/hand-in"
KERNEL_LOG = "/tmp/kernel.log"  # the kernel's own stdout and stderr (not its cells' output), a tail read back
HOME = "/tmp/home"  # the kernel's home: IPython's profile and history, caches
CONNECTION_FILE = "/tmp/kernel-connection.json"  # the kernel's connection file, carried in from the grader's


@dataclass(frozen=True)
class Sizes:
    """The most each of the box's writable file systems may hold, in MiB."""
    tmp: int = 512
    shm: int = 256
    work: int = 512
    records: int = 64


@dataclass(frozen=True)
class View:
    read_only: tuple[str, ...]  # host paths (files or folders), each shown at its own path
    work: str  # the kernel's folder
    records: str
    hand_in: str | None = None  # the hand-in's folder on the host
    sizes: Sizes = field(default_factory=Sizes)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def arguments(view: View) -> list[str]:
    """bubblewrap's options for `view` (the command and the namespaces are the caller's)."""
    made: set[str] = {"/"}
    shown: list[str] = []

    def parents(path: str) -> list[str]:
        found = []
        folder = os.path.dirname(path)
        while folder not in made and folder != "/" and not any(_inside(folder, bound) for bound in shown):
            found.append(folder)
            folder = os.path.dirname(folder)
        made.update(found)
        return [argument for folder in reversed(found) for argument in ("--perms", "0755", "--dir", folder)]

    args: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += parents(path) + ["--ro-bind", path, path]
            shown.append(path)
    args += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(view.sizes.tmp << 20), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(view.sizes.shm << 20), "--tmpfs", "/dev/shm"]
    made.update({"/proc", "/dev", "/tmp", "/dev/shm"})
    for path in sorted({os.path.realpath(p) for p in view.read_only if os.path.exists(p)}):
        if any(_inside(path, bound) for bound in shown):
            continue
        args += parents(path) + ["--ro-bind", path, path]
        shown.append(path)
    if view.hand_in is not None:
        args += parents(HAND_IN) + ["--ro-bind", view.hand_in, HAND_IN]
    for path, size in ((view.work, view.sizes.work), (view.records, view.sizes.records)):
        args += parents(path) + ["--size", str(size << 20), "--tmpfs", path]
        made.add(path)
    return args + ["--remount-ro", "/"]

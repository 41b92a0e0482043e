"""The hub's control groups (Linux cgroups, v2 or v1): every process a hub starts lives in one tree, so a hub can
always find, limit and stop what it started, also after it was killed.

    <tree>/hub                  the hub, its proxy and the idle culler
    <tree>/students/<name>      one student's server, kernels and terminals, under that student's limits
    <tree>/grader/<service>     formgrader and grading at submission, run by the grader: the grader's to manage
    <tree>/grader/boxes/<box>   the box of each notebook the grader grades (autograder.box.box), made by the grader

The tree's name is the hub folder's own (`tree_name`), so two hubs on one machine never share one. On cgroup v2 it is
made at the top of the unified hierarchy; on v1 (memory, pids and cpu mounted apart), under the cgroup this process
is in, in each of those three hierarchies. A student's limits:

- memory: all their processes together (kernels, server, files in their private /tmp and /dev/shm, which tmpfs
  charges to the writer); past it the kernel's OOM killer stops their largest process, most often the kernel that
  asked, and no one else's;
- processes: how many at once (`fork` fails past it);
- CPU: an equal weight for every student (a fair share when the machine is busy), and at most `cpu_cores` cores.

The grader's part of the tree is delegated to the grader (its folders and their `cgroup.procs`, `cgroup.threads`
and `cgroup.subtree_control` are the grader's, as cgroup v2 delegation asks): its services make and limit a cgroup
for each box and move the box's processes into it, and reach no other cgroup. Outside a hub, root's grading runs
make their boxes' cgroups in a tree of their own, `tfs-boxes`.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
GRADER = "grader"
GRADER_SERVICES = ("formgrader", "autograde")
DELEGATED_FILES = ("cgroup.procs", "cgroup.threads", "cgroup.subtree_control", "tasks")
V1_CONTROLLERS = ("memory", "pids", "cpu")
STUDENT_WEIGHT = 100  # cgroup v2's default weight: every student the same
CPU_PERIOD_US = 100_000


class CgroupsUnavailable(RuntimeError):
    """This machine gives the hub no cgroups it can make (no cgroup file system, or not root)."""


@dataclass(frozen=True)
class Limits:
    """What one student may use at once."""
    memory_mb: int
    processes: int
    cpu_cores: float | None = None  # None: a fair share only, no cap


def tree_name(hub_folder: Path) -> str:
    """The hub's cgroup tree: its folder's name and a hash of its path, so that each hub folder has its own."""
    digest = hashlib.sha256(str(Path(hub_folder).resolve()).encode()).hexdigest()[:10]
    return f"tfs-hub-{digest}"


def version(root: Path = CGROUP_ROOT) -> int:
    """2 where the memory, pids and cpu controllers are in the unified hierarchy, 1 where they are mounted apart."""
    controllers = root / "cgroup.controllers"
    if controllers.exists() and {"memory", "pids", "cpu"} <= set(controllers.read_text().split()):
        return 2
    if all((root / name / "cgroup.procs").exists() for name in V1_CONTROLLERS):
        return 1
    raise CgroupsUnavailable(f"no cgroups with the memory, pids and cpu controllers under {root}")


class Cgroup:
    """One cgroup of the hub's tree, at `relative` below the tree's base (in every hierarchy on v1)."""

    def __init__(self, tree: "Tree", relative: str):
        self.tree, self.relative = tree, relative

    @property
    def folders(self) -> list[Path]:
        """Its folder in each hierarchy: one on v2, three on v1."""
        return [base / self.relative for base in self.tree.bases.values()]

    def folder(self, controller: str) -> Path:
        return self.tree.bases["unified" if self.tree.version == 2 else controller] / self.relative

    def make(self) -> "Cgroup":
        for folder in self.folders:
            folder.mkdir(parents=True, exist_ok=True)
        return self

    def add(self, pid: int = 0) -> None:
        """Move process `pid` (0: the one calling) into this cgroup, in every hierarchy."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))

    def limit(self, limits: Limits) -> None:
        memory = limits.memory_mb * 1024 * 1024
        if self.tree.version == 2:
            _write(self.folder("memory") / "memory.max", memory)
            _write(self.folder("memory") / "memory.swap.max", 0, missing_ok=True)
            _write(self.folder("pids") / "pids.max", limits.processes)
            if "cpu" not in self.tree.controllers:
                return
            _write(self.folder("cpu") / "cpu.weight", STUDENT_WEIGHT)
            quota = "max" if not limits.cpu_cores else int(limits.cpu_cores * CPU_PERIOD_US)
            _write(self.folder("cpu") / "cpu.max", f"{quota} {CPU_PERIOD_US}")
        else:
            _write(self.folder("memory") / "memory.limit_in_bytes", memory)
            _write(self.folder("memory") / "memory.memsw.limit_in_bytes", memory, missing_ok=True)
            _write(self.folder("pids") / "pids.max", limits.processes)
            if "cpu" not in self.tree.controllers:
                return
            _write(self.folder("cpu") / "cpu.shares", 1024)
            quota = -1 if not limits.cpu_cores else int(limits.cpu_cores * CPU_PERIOD_US)
            _write(self.folder("cpu") / "cpu.cfs_period_us", CPU_PERIOD_US)
            _write(self.folder("cpu") / "cpu.cfs_quota_us", quota)

    def read(self, controller: str, name: str) -> str:
        return (self.folder(controller) / name).read_text()

    def oom_kills(self) -> int:
        """How many of its processes the kernel's OOM killer has stopped."""
        try:
            if self.tree.version == 2:
                events = dict(line.split() for line in self.read("memory", "memory.events").splitlines())
                return int(events.get("oom_kill", 0))
            control = dict(line.split() for line in self.read("memory", "memory.oom_control").splitlines())
            return int(control.get("oom_kill", 0))
        except OSError:
            return 0

    def pids(self) -> list[int]:
        """Every process in it and below it."""
        found = []
        top = self.folder("pids")
        for folder, _, _ in os.walk(top) if top.exists() else []:
            try:
                found += [int(line) for line in Path(folder, "cgroup.procs").read_text().split()]
            except OSError:
                pass
        return found

    def kill(self, rounds: int = 50) -> int:
        """SIGKILL every process in it and below it, again until none is left; how many were killed."""
        killed = 0
        for _ in range(rounds):
            pids = [pid for pid in self.pids() if pid != os.getpid()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        return killed

    def remove(self) -> None:
        """Remove it and every cgroup below it (each must be empty of processes: kill first)."""
        for top in self.folders:
            for folder, subfolders, _ in sorted(os.walk(top), key=lambda entry: -len(entry[0])) if top.exists() else []:
                for _ in range(20):
                    try:
                        os.rmdir(folder)
                        break
                    except FileNotFoundError:
                        break
                    except OSError as error:  # EBUSY while the last processes are still being reaped
                        if error.errno != errno.EBUSY:
                            raise
                        time.sleep(0.1)


class Tree:
    """A hub's cgroup tree (see the module's docstring)."""

    def __init__(self, hub_folder: Path, root: Path = CGROUP_ROOT, self_cgroups: str | None = None):
        self._place(tree_name(hub_folder), root, self_cgroups)

    @classmethod
    def named(cls, name: str, root: Path = CGROUP_ROOT, self_cgroups: str | None = None,
              controllers: tuple[str, ...] = V1_CONTROLLERS) -> "Tree":
        """A tree of that name limited by `controllers` (the boxes of root's grading runs, autograder.box.box: memory
        and processes only, their CPU time shared as the grading process's is), not a hub's."""
        tree = cls.__new__(cls)
        tree._place(name, root, self_cgroups, controllers)
        return tree

    def _place(self, name: str, root: Path, self_cgroups: str | None,
               controllers: tuple[str, ...] = V1_CONTROLLERS) -> None:
        if os.geteuid() != 0 and root == CGROUP_ROOT:
            raise CgroupsUnavailable("only root may make cgroups for other accounts")
        self.version, self.controllers = version(root), tuple(controllers)
        if self.version == 2:
            self.bases = {"unified": root / name}
        else:
            own = _own_cgroups(self_cgroups)
            self.bases = {controller: root / controller / own.get(controller, "").strip("/") / name
                          for controller in self.controllers}
        self.root = root

    def save(self, record: Path) -> None:
        """Write where the tree is to `record`: a process inside it (the hub making a student's cgroup) or one started
        later from another cgroup (the next start, a test) finds it there, not where it would make one of its own."""
        record.write_text(self.description())

    def description(self) -> str:
        """Where the tree is, as text (`from_description` reads it): what `save` writes, and what the hub gives the
        grader in its environment for the boxes of its grading (autograder.box.box)."""
        return json.dumps({"version": self.version, "bases": {k: str(v) for k, v in self.bases.items()},
                           "controllers": list(self.controllers)})

    @classmethod
    def from_description(cls, text: str) -> "Tree":
        saved = json.loads(text)
        tree = cls.__new__(cls)
        tree.version, tree.root = saved["version"], CGROUP_ROOT
        tree.bases = {key: Path(value) for key, value in saved["bases"].items()}
        tree.controllers = tuple(saved.get("controllers", V1_CONTROLLERS))
        return tree

    @classmethod
    def load(cls, record: Path) -> "Tree | None":
        """The tree `record` names; None when there is no record."""
        if not record.exists():
            return None
        return cls.from_description(record.read_text())

    @property
    def hub(self) -> Cgroup:
        return Cgroup(self, "hub")

    def student(self, name: str) -> Cgroup:
        return Cgroup(self, f"students/{name}")

    @property
    def everything(self) -> Cgroup:
        return Cgroup(self, "")

    def cgroup(self, relative: str) -> Cgroup:
        return Cgroup(self, relative)

    def subtree(self, relative: str) -> "Tree":
        """The tree whose base is this one's cgroup `relative` (the grader's boxes: autograder.box.box)."""
        tree = Tree.__new__(Tree)
        tree.version, tree.root, tree.controllers = self.version, self.root, self.controllers
        tree.bases = {key: base / relative for key, base in self.bases.items()}
        return tree

    def grader(self, part: str) -> Cgroup:
        """One of the grader's cgroups: a service's (GRADER_SERVICES) or `boxes`."""
        return Cgroup(self, f"{GRADER}/{part}")

    def delegate_to_grader(self, uid: int, gid: int) -> None:
        """Make the grader's part of the tree (see the module's docstring) and hand it to the account `uid`."""
        if self.version == 2:
            Cgroup(self, GRADER).make()
            _enable_controllers(self.bases["unified"] / GRADER)
        for part in (*GRADER_SERVICES, "boxes"):
            self.grader(part).make()
        if self.version == 2:
            _enable_controllers(self.bases["unified"] / GRADER / "boxes")
        for base in self.bases.values():
            for folder, _, _ in os.walk(base / GRADER):
                os.chown(folder, uid, gid)
                for name in DELEGATED_FILES:
                    if os.path.exists(os.path.join(folder, name)):
                        os.chown(os.path.join(folder, name), uid, gid)

    def make_base(self) -> "Tree":
        """Make the tree's own folder, its cgroups below limited by the tree's controllers."""
        if self.version == 2:
            _enable_controllers(self.root, self.controllers)
            self.everything.make()
            _enable_controllers(self.bases["unified"], self.controllers)
        else:
            self.everything.make()
        return self

    def make(self) -> "Tree":
        """Make the tree, the hub's cgroup and the students' folder, with the controllers students are limited by."""
        if self.version == 2:
            _enable_controllers(self.root)
            self.everything.make()
            _enable_controllers(self.bases["unified"])
            Cgroup(self, "students").make()
            _enable_controllers(self.bases["unified"] / "students")
        else:
            Cgroup(self, "students").make()
        self.hub.make()
        return self


def _enable_controllers(folder: Path, controllers: tuple[str, ...] = V1_CONTROLLERS) -> None:
    """Let the cgroups below `folder` use `controllers` (cgroup v2; by default memory, pids and cpu)."""
    wanted = set(controllers) - set((folder / "cgroup.subtree_control").read_text().split())
    if wanted:
        (folder / "cgroup.subtree_control").write_text(" ".join(f"+{name}" for name in sorted(wanted)))


def _own_cgroups(text: str | None = None) -> dict[str, str]:
    """This process's cgroup in each v1 hierarchy, from /proc/self/cgroup ("4:memory:/a/b" -> {"memory": "/a/b"})."""
    text = Path("/proc/self/cgroup").read_text() if text is None else text
    found = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            found[controller] = path
    return found


def _write(path: Path, value, missing_ok: bool = False) -> None:
    try:
        path.write_text(str(value))
    except FileNotFoundError:
        if not missing_ok:
            raise

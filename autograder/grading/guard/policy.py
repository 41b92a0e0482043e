"""The rules of a graded kernel, and the audit hook that enforces them.

A policy is plain JSON (it travels to the kernel in the COURSE_GRADING_GUARD environment variable):
    records     the folder where the kernel records what the hidden tests observe
    violations  the file each blocked attempt is appended to (one JSON object per line)
    read        [[path prefix, allowed?], ...]: the longest matching prefix decides; no match allows
    write       the same, for writing, creating, renaming and deleting
    preload     modules imported before the hook is installed (the earlier notebooks' references that
                carry-over needs: once loaded, their files are never read again)
    handed_in   the folder the notebook runs in, holding what the student handed in beside it: a module there
                is imported only where no installed module has its name (`torch.py`, `course/`, `autograder/`
                beside the notebook never stand in for the real ones; the student's own `helper.py` still works)
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import os
import socket
import sys
import tempfile
from pathlib import Path

ENVIRONMENT_VARIABLE = "COURSE_GRADING_GUARD"
POLICY: dict = {}

_PROCESS_EVENTS = {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty",
                   "pty.spawn"}
_NETWORK_EVENTS = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
                   "socket.gethostbyname", "socket.gethostbyaddr"}
_READ_EVENTS = {"os.listdir", "os.scandir", "sqlite3.connect", "shutil.copyfile", "shutil.copytree"}
_WRITE_EVENTS = {"os.remove", "os.rmdir", "os.mkdir", "os.rename", "os.symlink", "os.link", "os.truncate",
                 "os.chmod", "os.chown", "os.utime", "shutil.rmtree", "shutil.move"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


# The grader's modules a graded kernel may read (paths below the package, without .py): the packages' __init__ on the
# way to the hidden tests and the guard, and those a warm kernel (autograder.grading.warm_kernel) was forked inside,
# whose lines a traceback or `inspect.stack()` shows.
KERNEL_STACK = ["__init__", "authoring/__init__", "grading/__init__", "grading/autograde_process",
                "grading/warm_kernel"]
READABLE = ["authoring/hidden", "grading/guard"]  # the hidden tests' helpers, and the guard itself
# Imported before the guard, so that Python has listed its parent folder (autograder/authoring/, which the kernel may
# not list) by the time a hidden test cell imports its helpers from it. It holds no code of its own.
HIDDEN_PACKAGE = "autograder.authoring.hidden"


def kernel_files(package_root: Path, preload: list[str]) -> list[Path]:
    """What of the grader's package a graded kernel reads: the packages' `__init__` on the way, the modules a warm
    kernel runs inside (KERNEL_STACK), the hidden tests' helpers and the guard (READABLE), and the modules it
    preloads (the earlier notebooks' references, with their packages' `__init__`). The box shows these and no other
    file of the package (autograder.box.view); the guard lets them be read."""
    files = [package_root / f"{module}.py" for module in KERNEL_STACK] + [package_root / path for path in READABLE]
    for module in preload:
        parts = module.split(".")[1:]  # below `autograder`
        for depth in range(1, len(parts)):
            files.append(package_root.joinpath(*parts[:depth], "__init__.py"))
        folder = package_root.joinpath(*parts)
        files.append(folder if folder.is_dir() else folder.with_suffix(".py"))
    return list(dict.fromkeys(files))


def policy_for(course_root: Path, package_root: Path, assignment: str, student: str, records: Path,
               preload: list[str]) -> dict:
    """The policy for grading `student`'s `assignment` in `course_root` with the grader package at `package_root`.

    Reading: everything but the grader's files and other students' work. Writing: only the notebook's own
    folder, the records, the temporary folder and caches: never the course, the Python environment or the
    start-up folders of later kernels, where a change would reach other students' grading."""
    own = [course_root / "autograded" / student, course_root / "submitted" / student]
    read = [[course_root / name, False] for name in ("source", "gradebook.db", "grading", "submitted", "autograded",
                                                     "feedback", "reports", "grades.csv", "autograder")]
    read += [[package_root, False], *[[package_root / path, True] for path in READABLE],
             [records, True]] + [[folder, True] for folder in own]
    for module in KERNEL_STACK:  # a warm kernel runs inside them: reading its own stack's source is no attack
        folder, name = (package_root / module).parent, Path(module).name
        read += [[folder / f"{name}.py", True], [folder / "__pycache__" / f"{name}.", True]]
    write = [[Path("/"), False], [Path(tempfile.gettempdir()), True], [Path.home() / ".cache", True], [Path.home() / ".config" / "matplotlib", True],
             [Path("/dev"), True], [course_root, False], [package_root.parent, False],
             [course_root / "autograded" / student / assignment, True], [records, True]]
    return {"records": str(records), "violations": str(records / "violations.jsonl"),
            "read": [[os.path.realpath(p), allowed] for p, allowed in read],
            "write": [[os.path.realpath(p), allowed] for p, allowed in write], "preload": [HIDDEN_PACKAGE, *preload],
            "handed_in": os.path.realpath(course_root / "autograded" / student / assignment)}


def allowed(path: str, rules: list) -> bool:
    """Whether the longest prefix of `path` in `rules` allows it (no prefix: allowed)."""
    best, verdict = -1, True
    for prefix, allow in rules:
        if (path == prefix or path.startswith(prefix.rstrip(os.sep) + os.sep) or
                (prefix.endswith(".") and path.startswith(prefix))) and len(prefix) > best:
            best, verdict = len(prefix), allow
    return verdict


def _real(path) -> str | None:
    if isinstance(path, int) or path is None:
        return None
    try:
        return os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError):
        return None


def _writes(mode, flags) -> bool:
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _bytecode_cache(path: str) -> bool:
    """Whether `path` is Python caching an imported module's bytecode (its `__pycache__` folder or a file in it):
    refused where the kernel may not write, but no finding: every import of a module never imported before does it."""
    return os.path.basename(path) == "__pycache__" or f"{os.sep}__pycache__{os.sep}" in path


def _shell():
    """The IPython shell once the kernel has made it (until then no cell has run), else None."""
    get_ipython = getattr(sys.modules.get("IPython"), "get_ipython", None)
    try:
        return get_ipython() if get_ipython is not None else None
    except Exception:  # noqa: BLE001: IPython half-imported while the kernel starts
        return None


KERNEL_PACKAGES = ("autograder.authoring.hidden", "autograder.grading.guard")  # the grader's, a kernel may import


def _the_graders(module: str) -> bool:
    """Whether `module` is of the grader's package and no kernel's business (a reference, a known mistake, the
    verdicts). Only a module not imported yet raises the event: what a kernel was given (its preloads) is imported."""
    return (module == "autograder" or module.startswith("autograder.")) and not any(
        module == allowed or module.startswith(allowed + ".") for allowed in KERNEL_PACKAGES)


class Guard:
    def __init__(self, policy: dict):
        self.read, self.write = policy["read"], policy["write"]
        self.started = False
        self.log = os.open(policy["violations"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def deny(self, event: str, what: str, detail: str) -> None:
        shell = _shell()
        cell = getattr(shell, "execution_count", None)
        line = json.dumps({"event": event, "what": what, "detail": detail[:300], "cell": cell}) + "\n"
        os.write(self.log, line.encode())
        raise PermissionError(f"While a notebook is graded, its code may not {what} ({detail[:200]}).")

    def __call__(self, event: str, args: tuple) -> None:
        if not self.started:  # the kernel is still starting: no student code has run yet
            if _shell() is None:
                return
            self.started = True
        if event == "open":
            path = _real(args[0])
            if path is None:
                return
            mode, flags = args[1], args[2]
            if _writes(mode, flags):
                if not allowed(path, self.write):
                    if _bytecode_cache(path):
                        raise PermissionError(path)
                    self.deny(event, "write outside its own folder", path)
            elif not allowed(path, self.read):
                self.deny(event, "read the grader's files or other students' work", path)
        elif event in _READ_EVENTS:
            path = _real(args[0]) if args else None
            if path is not None and not allowed(path, self.read):
                self.deny(event, "read the grader's files or other students' work", path)
            if event.startswith("shutil.") and len(args) > 1:
                target = _real(args[1])
                if target is not None and not allowed(target, self.write):
                    self.deny(event, "write outside its own folder", target)
        elif event in _WRITE_EVENTS:
            for arg in args[:2]:
                path = _real(arg) if isinstance(arg, (str, bytes, os.PathLike)) else None
                if path is not None and not allowed(path, self.write):
                    if event == "os.mkdir" and _bytecode_cache(path):
                        raise PermissionError(path)
                    self.deny(event, "write outside its own folder", path)
        elif event in _NETWORK_EVENTS:
            sock = args[0] if args else None
            family = getattr(sock, "family", None)
            if family is None or family != getattr(socket, "AF_UNIX", None):
                self.deny(event, "use the network", repr(args[1:])[:120] if len(args) > 1 else event)
        elif event in _PROCESS_EVENTS:
            self.deny(event, "start other processes", repr(args[:2])[:120])



class InstalledFirst(importlib.abc.MetaPathFinder):
    """Imports a top-level module from the hand-in's folder only when nothing installed has its name: a student's
    `helper.py` is theirs, a `torch.py`, `course/` or `autograder/` beside the notebook is never imported in place
    of the real one (the installed one is imported instead). First on sys.meta_path."""

    def __init__(self, folder: str):
        self.folder = folder

    def _in_folder(self, entry: str) -> bool:
        return os.path.realpath(entry or os.curdir) == self.folder

    def find_spec(self, name, path=None, target=None):
        if path is not None or "." in name:  # a submodule: its package, already the real one, decides
            return None
        entries = [entry for entry in sys.path if isinstance(entry, str)]
        if not any(self._in_folder(entry) for entry in entries):
            return None
        found = importlib.machinery.PathFinder.find_spec(name, entries)
        if found is None:
            return None
        where = found.origin if found.has_location else next(iter(found.submodule_search_locations or []), None)
        if where is None or not os.path.realpath(where).startswith(self.folder + os.sep):
            return None
        return importlib.machinery.PathFinder.find_spec(name, [e for e in entries if not self._in_folder(e)])


class GraderModules(importlib.abc.MetaPathFinder):
    """Refuses, and reports, importing a module of the grader's package that the kernel was not given (the box shows
    it none; this names the attempt): whichever way the import is asked for, `import` or `importlib.import_module`.
    First on sys.meta_path once the kernel's preloads are in."""

    def __init__(self, guard: "Guard"):
        self.guard = guard

    def find_spec(self, name, path=None, target=None):
        if _the_graders(name) and (self.guard.started or _shell() is not None):
            self.guard.deny("import", "read the grader's files or other students' work", f"import {name}")
        return None


def install(policy: dict) -> None:
    """Load what the policy preloads, then add the audit hook (for the rest of this process's life)."""
    import importlib

    from course.checks.report import RECORDS_VARIABLE  # where a passed visible check is recorded

    POLICY.update(policy)
    if policy.get("handed_in"):
        sys.meta_path.insert(0, InstalledFirst(policy["handed_in"]))
    os.environ[RECORDS_VARIABLE] = policy["records"]
    for module in policy.get("preload", []):
        importlib.import_module(module)
    import linecache

    guard = Guard(policy)
    for filename in list(linecache.cache):  # source lines cached while loading: never shown to student code
        if not allowed(_real(filename) or "", guard.read):
            del linecache.cache[filename]
    sys.meta_path.insert(0, GraderModules(guard))
    sys.addaudithook(guard)


def install_from_environment() -> None:
    install(json.loads(os.environ[ENVIRONMENT_VARIABLE]))

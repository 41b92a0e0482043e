"""Carry-over: a later notebook uses the student's own earlier work, or the reference while grading.

`from_earlier("03_masking", "masked_attention")` returns the student's `masked_attention`, taken
from `../03_masking/03_masking.ipynb` (or `./03_masking.ipynb`, as in Colab's upload folder), or else,
where Google Drive is mounted, from the newest of the student's copies there ("Copy of 03_masking.ipynb",
as Colab saves a notebook opened from GitHub): its imports, functions, classes and its own carry-overs
are executed, nothing else (no checks, no plots, no training). While nbgrader grades
(`NBGRADER_EXECUTION` is set), the instructor's reference stands in, so a mistake in an earlier notebook
costs points once, where it was made.
"""
from __future__ import annotations

import ast
import importlib
import os
import re
import sys
import types
from datetime import datetime, timezone
from pathlib import Path

from course.about import NOTEBOOKS
from course.runtime import in_colab, under_grading

KEPT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_loaded: dict[Path, types.ModuleType] = {}


class EarlierNotebookMissing(FileNotFoundError):
    pass


class EarlierWorkUnfinished(RuntimeError):
    pass


# Where an earlier notebook is looked for: in its folder beside this notebook's, or right here (Colab).
SEARCH = (Path(".."), Path("."))

# The student's Google Drive where Colab mounts it (`drive.mount("/content/drive")`); searched, after
# SEARCH, only while it exists. COURSE_DRIVE moves it (the tests' stand-in for Drive).
DRIVE = Path(os.environ.get("COURSE_DRIVE", "/content/drive/MyDrive"))
# Where Colab saves notebooks in Drive: searched first; the rest of Drive only when nothing matches there.
COLAB_FOLDER = "Colab Notebooks"
# Drive is a network file system: the search goes this many folders deep and visits at most this many.
DRIVE_DEPTH = 4
DRIVE_FOLDERS = 500
SKIPPED_FOLDERS = {"node_modules", "__pycache__", "site-packages"}  # big, and never a student's notebook
USE_DRIVE = "from course import use_drive; use_drive()"


def from_earlier(assignment: str, *names: str, search=SEARCH):
    """The named definitions of notebook `assignment`: one object for one name, a tuple for several."""
    if assignment not in NOTEBOOKS:
        raise ValueError(f"There is no notebook {assignment!r}; the notebooks are {', '.join(NOTEBOOKS)}.")
    module = _reference(assignment) if under_grading() else None
    if module is None:
        path = _find(assignment, names, search)
        if in_drive(path):
            print(f"Using your {assignment} from Drive: {describe_drive_copy(path)}.")
        module = load_definitions(path)
    found = []
    for name in names:
        if not hasattr(module, name):
            raise EarlierWorkUnfinished(
                f"Notebook {assignment} does not define `{name}`. Open it, make sure the cell that defines "
                f"`{name}` is there and runs, save it, then run this cell again.")
        if name in getattr(module, "__stubs__", ()):
            raise EarlierWorkUnfinished(
                f"`{name}` in notebook {assignment} is not written yet (it still raises NotImplementedError). "
                f"This notebook builds on it: finish it there, save, then run this cell again.")
        found.append(getattr(module, name))
    return found[0] if len(found) == 1 else tuple(found)


def _reference(assignment: str):
    """The instructor's reference module, where the grading machine has it; None elsewhere."""
    try:
        return importlib.import_module(f"autograder.authoring.reference.{NOTEBOOKS[assignment]}")
    except ImportError:
        return None


def _candidates(assignment: str, search) -> list[Path]:
    filename = f"{assignment}.ipynb"
    return [Path(folder) / assignment / filename for folder in search] + [Path(folder) / filename for folder in search]


def locate(assignment: str, search=SEARCH) -> Path | None:
    """Where `from_earlier` would load notebook `assignment` from, or None when it is not reachable:
    the first of `_candidates` that exists, else the student's newest copy in Google Drive."""
    local = next((path.resolve() for path in _candidates(assignment, search) if path.exists()), None)
    return local or find_in_drive(assignment)


def drive_mounted() -> bool:
    return DRIVE.is_dir()


def mount_drive() -> None:
    """Mount Google Drive where DRIVE expects it; in Colab this asks the student for permission."""
    from google.colab import drive  # only in Colab

    drive.mount(str(DRIVE.parent))


def drive_names(assignment: str) -> re.Pattern:
    """The names a copy of `assignment` has in Drive: `03_masking.ipynb`, Colab's `Copy of 03_masking.ipynb`,
    and either with a ` (1)`, ` (2)`, ... that Drive adds to a second copy of one name."""
    return re.compile(rf"(Copy of )?{re.escape(assignment)}( \(\d+\))?\.ipynb")


def find_in_drive(assignment: str) -> Path | None:
    """The most recently saved copy of notebook `assignment` in Drive's COLAB_FOLDER, else in the rest
    of Drive; None when Drive is not mounted or holds none."""
    if not drive_mounted():
        return None
    names = drive_names(assignment)
    for top, skip in ((DRIVE / COLAB_FOLDER, None), (DRIVE, DRIVE / COLAB_FOLDER)):
        matches = [path for path in _notebooks_under(top, skip) if names.fullmatch(path.name)]
        if matches:
            return max(matches, key=lambda path: path.stat().st_mtime)
    return None


def _notebooks_under(top: Path, skip: Path | None = None) -> list[Path]:
    """Every .ipynb under `top`, at most DRIVE_DEPTH folders deep and DRIVE_FOLDERS folders in all,
    leaving out `skip`, hidden folders and SKIPPED_FOLDERS."""
    found, visited = [], 0
    for folder, subfolders, files in os.walk(top):
        visited += 1
        if visited > DRIVE_FOLDERS:
            break
        depth = len(Path(folder).relative_to(top).parts)
        subfolders[:] = sorted(name for name in subfolders if depth < DRIVE_DEPTH and not name.startswith(".")
                               and name not in SKIPPED_FOLDERS and Path(folder, name) != skip)
        found += [Path(folder, name) for name in files if name.endswith(".ipynb")]
    return found


def in_drive(path: Path) -> bool:
    return DRIVE in path.parents


def describe_drive_copy(path: Path) -> str:
    """`Colab Notebooks/Copy of 03_masking.ipynb, saved 2026-11-20 14:02 UTC`: which copy, and when saved."""
    saved = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{path.relative_to(DRIVE)}, saved {saved}"


def _find(assignment: str, names, search) -> Path:
    filename = f"{assignment}.ipynb"
    found = locate(assignment, search)
    if found is not None:
        return found
    looked_in = [str(path) for path in _candidates(assignment, search)]
    if drive_mounted():
        looked_in.append(f"your Google Drive ({DRIVE}), as {filename} or Copy of {filename}")
    wanted = ", ".join(f"`{n}`" for n in names)
    drive_hint = f"run `{USE_DRIVE}` to find it in your Google Drive, or " if in_colab() and not drive_mounted() else ""
    raise EarlierNotebookMissing(
        f"This notebook builds on your {wanted} from notebook {assignment}, but {filename} is not next to it "
        f"(looked in: {', '.join(looked_in)}). Finish notebook {assignment} first and keep "
        f"its folder beside this one's; in Colab, {drive_hint}upload your {filename} to the folder of this "
        f"notebook ({os.getcwd()}).")


def load_definitions(path: Path) -> types.ModuleType:
    """Execute the definitions of the notebook at `path` (cached until the file changes) as a module."""
    cached = _loaded.get(path)
    if cached is not None and cached.__mtime__ == path.stat().st_mtime:
        return cached
    import nbformat  # only needed here; keeps `import course` light

    notebook = nbformat.read(path, as_version=4)
    module = types.ModuleType(f"earlier_{_assignment_of(path)}", f"Definitions carried over from {path.name}")
    module.__file__ = str(path)
    module.__mtime__ = path.stat().st_mtime
    module.__stubs__ = set()
    sys.modules[module.__name__] = module
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue  # IPython magics (the set-up cell) or a cell that does not parse: nothing to carry
        kept = [node for node in tree.body if isinstance(node, KEPT) or _is_carryover(node)]
        module.__stubs__.update(node.name for node in kept if _has_stub(node))
        if kept:
            exec(compile(ast.Module(body=kept, type_ignores=[]), str(path), "exec"), module.__dict__)
    _loaded[path] = module
    return module


def _assignment_of(path: Path) -> str:
    """`03_masking` for `.../Copy of 03_masking (1).ipynb`: the notebook's name without Colab's and Drive's marks."""
    return re.sub(r"^Copy of | \(\d+\)$", "", path.stem)


def _is_carryover(node: ast.stmt) -> bool:
    """`x = from_earlier(...)`: an earlier notebook's own carry-over, which its definitions need."""
    return (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "from_earlier")


def _has_stub(node: ast.stmt) -> bool:
    """True when a function, or a method of a class, still raises the release's bare NotImplementedError."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Raise) and isinstance(inner.exc, ast.Call) and not inner.exc.args \
                and getattr(inner.exc.func, "id", None) == "NotImplementedError":
            return True
    return False

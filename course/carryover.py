"""Carry-over: a later notebook uses the student's own earlier work, or the reference while grading.

`from_earlier("03_masking", "masked_attention")` returns the student's `masked_attention`, taken
from `../03_masking/03_masking.ipynb` (or `./03_masking.ipynb`, as in Colab's upload folder): its
imports, functions, classes and its own carry-overs are executed, nothing else (no checks, no plots,
no training). While nbgrader grades (`NBGRADER_EXECUTION` is set), the instructor's reference stands
in, so a mistake in an earlier notebook costs points once, where it was made.
"""
from __future__ import annotations

import ast
import importlib
import os
import sys
import types
from pathlib import Path

from course.about import NOTEBOOKS
from course.notebook_setup import under_grading

KEPT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_loaded: dict[Path, types.ModuleType] = {}


class EarlierNotebookMissing(FileNotFoundError):
    pass


class EarlierWorkUnfinished(RuntimeError):
    pass


# Where an earlier notebook is looked for: in its folder beside this notebook's, or right here (Colab).
SEARCH = (Path(".."), Path("."))


def from_earlier(assignment: str, *names: str, search=SEARCH):
    """The named definitions of notebook `assignment`: one object for one name, a tuple for several."""
    if assignment not in NOTEBOOKS:
        raise ValueError(f"There is no notebook {assignment!r}; the notebooks are {', '.join(NOTEBOOKS)}.")
    module = _reference(assignment) if under_grading() else None
    if module is None:
        module = load_definitions(_find(assignment, names, search))
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
        return importlib.import_module(f"autograder.reference.{NOTEBOOKS[assignment]}")
    except ImportError:
        return None


def _candidates(assignment: str, search) -> list[Path]:
    filename = f"{assignment}.ipynb"
    return [Path(folder) / assignment / filename for folder in search] + [Path(folder) / filename for folder in search]


def locate(assignment: str, search=SEARCH) -> Path | None:
    """Where `from_earlier` would load notebook `assignment` from, or None when it is not reachable."""
    return next((path.resolve() for path in _candidates(assignment, search) if path.exists()), None)


def _find(assignment: str, names, search) -> Path:
    filename = f"{assignment}.ipynb"
    found = locate(assignment, search)
    if found is not None:
        return found
    candidates = _candidates(assignment, search)
    wanted = ", ".join(f"`{n}`" for n in names)
    raise EarlierNotebookMissing(
        f"This notebook builds on your {wanted} from notebook {assignment}, but {filename} is not next to it "
        f"(looked in: {', '.join(str(c) for c in candidates)}). Finish notebook {assignment} first and keep "
        f"its folder beside this one's; in Colab, upload your {filename} to the folder of this notebook "
        f"({os.getcwd()}).")


def load_definitions(path: Path) -> types.ModuleType:
    """Execute the definitions of the notebook at `path` (cached until the file changes) as a module."""
    cached = _loaded.get(path)
    if cached is not None and cached.__mtime__ == path.stat().st_mtime:
        return cached
    import nbformat  # only needed here; keeps `import course` light

    notebook = nbformat.read(path, as_version=4)
    module = types.ModuleType(f"earlier_{path.stem}", f"Definitions carried over from {path.name}")
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

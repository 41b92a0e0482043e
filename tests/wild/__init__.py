"""A corpus of solutions written elsewhere or in another style, handed in as students and graded end to end.

Each module of this package is one source: an implementation from the wild (the Annotated Transformer, nanoGPT,
ARENA, d2l.ai, community repositories) adapted as little as the exercise API allows, or the loop-based solutions
of issue 17.2. A module defines `STUDENTS`: student id -> `Student`, whose `cells` map the grade_id of a solution
cell to the functions and classes that fill it (helpers first). The cell's source is `imports` followed by the
source of each object, its comment lines included (`inspect.getcomments`), so every cell says where its code came
from. Names an exercise uses but does not define (`masked_attention`, `TokenAndPositionEmbedding`, `generate`, ...)
are the notebook's own: its carry-over cell or an earlier cell of the same notebook defines them.

Nothing here is imported by the course: these are test data, never shipped.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

SOURCES = ["annotated_transformer", "nanogpt", "arena", "d2l", "hyunwoongko", "jadore801120", "loops", "noisy", "log_probabilities", "torch_norms"]


@dataclass(frozen=True)
class Mistake:
    """Code from the wild that is genuinely wrong for the exercise API: the graded cells it must lose."""
    why: str
    loses: frozenset  # grade_ids of graded cells (check_<exercise>, hidden_<exercise>) that must score below max


@dataclass(frozen=True)
class Student:
    source: str  # where the code comes from (repository or URL, file)
    imports: str  # the import lines at the top of every solution cell
    cells: dict  # solution grade_id -> [function or class, ...] in the order the cell defines them
    mistakes: dict = field(default_factory=dict)  # solution grade_id -> Mistake
    suffix: str = ""  # removed from every name in the code: two students of one module keep apart in Python

    def cell_source(self, grade_id: str) -> str:
        parts = [self.imports.strip()]
        for obj in self.cells[grade_id]:
            parts.append((_comments_above(obj) + inspect.getsource(obj)).rstrip())
        source = "\n\n\n".join(parts) + "\n"
        return source.replace(self.suffix, "") if self.suffix else source


def _comments_above(obj) -> str:
    """The comment lines right above `obj` (and above its decorators, which `inspect.getcomments` misses)."""
    lines, start = inspect.getsourcelines(obj)
    module_lines = inspect.getsourcelines(inspect.getmodule(obj))[0]
    first = start - 1  # 0-based index of the first line of `obj`, its decorators included
    while first > 0 and module_lines[first - 1].lstrip().startswith("#"):
        first -= 1
    return "".join(module_lines[first:start - 1])


def mistake(why: str, *exercises_cells: str) -> Mistake:
    return Mistake(why, frozenset(exercises_cells))


def students() -> dict[str, Student]:
    """Every student of the corpus, from every source module."""
    found = {}
    for name in SOURCES:
        module = importlib.import_module(f"tests.wild.{name}")
        for student, solution in module.STUDENTS.items():
            if student in found:
                raise ValueError(f"student {student} is defined twice")
            found[student] = solution
    return found


def solution_cells(release_notebook: Path) -> list[str]:
    """The grade_ids of the code solution cells of a release notebook (the exercises)."""
    notebook = nbformat.read(release_notebook, as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in notebook.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]


def write_submission(student: Student, release_notebook: Path, target: Path) -> list[str]:
    """The release notebook with each solution cell that `student` covers replaced by its code, written to
    `target`; returns the grade_ids it filled (the others keep their stubs)."""
    notebook = nbformat.read(release_notebook, as_version=4)
    filled = []
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution") and grade_id in student.cells:
            cell.source = student.cell_source(grade_id)
            filled.append(grade_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return filled

"""The demo class: what each demo student hands in, built from the release and source notebooks."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

from autograder.authoring.build_reference import MARKER

# Demo student id -> what their submission shows the instructor.
STUDENTS = {
    "demo_perfect": "every exercise solved",
    "demo_partial": "some exercises with known mistakes, some left unanswered",
    "demo_empty": "the release notebook handed in untouched",
    "demo_broken": "solved, but the first cell raises an error and a graded check cell was deleted",
    "demo_invalid": "a notebook file that is not valid JSON",
}

# Text edits that turn a solution into a typical wrong one, by solution cell grade_id: the partial
# student's code. Each `old` must occur in the solution (tests prove it), so edits stay in step.
MISTAKE_EDITS = {
    "token_and_position_embedding": [("self.embed(tokens) * math.sqrt(self.d_model)", "self.embed(tokens)")],
    "attention": [("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")],
    "causal_mask": [("key_position <= query_position", "key_position < query_position")],
    "evaluate": [('windows[:, 1:].flatten(), reduction="sum"', 'windows[:, :-1].flatten(), reduction="sum"')],
    "train_model": [("        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)\n        optimizer.step()",
                     "        optimizer.step()\n        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)")],
}
# Solution cells the partial student leaves unanswered (their stubs stay).
LEFT_UNANSWERED = {"masked_attention", "q1_rnn_vs_transformer"}


def solution_sources(source_notebook: Path) -> dict[str, str]:
    """`grade_id -> source` of every solution cell (code and written answers), markers removed."""
    notebook = nbformat.read(source_notebook, as_version=4)
    return {
        cell.metadata["nbgrader"]["grade_id"]: "\n".join(l for l in cell.source.splitlines() if not MARKER.match(l))
        for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("solution")
    }


def apply_edits(source: str, edits: list[tuple[str, str]]) -> str:
    for old, new in edits:
        if old not in source:
            raise ValueError(f"demo mistake edit: {old!r} is not in the solution any more; update MISTAKE_EDITS")
        source = source.replace(old, new)
    return source


def answered(release_notebook: Path, solutions: dict[str, str], edits=None, unanswered=frozenset()):
    """The release notebook with solution cells filled in (optionally edited or left as stubs)."""
    notebook = nbformat.read(release_notebook, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in solutions and grade_id not in unanswered:
            cell.source = apply_edits(solutions[grade_id], (edits or {}).get(grade_id, []))
    return notebook


def write_submission(student: str, release_notebook: Path, source_notebook: Path, target: Path) -> None:
    """Write `student`'s version of one notebook to `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    solutions = solution_sources(source_notebook)
    if student == "demo_invalid":
        text = release_notebook.read_text()
        target.write_text(text[: len(text) // 2])  # cut off mid-file, as an interrupted upload would be
        return
    if student == "demo_empty":
        notebook = nbformat.read(release_notebook, as_version=4)
    elif student == "demo_partial":
        notebook = answered(release_notebook, solutions, MISTAKE_EDITS, LEFT_UNANSWERED)
    else:
        notebook = answered(release_notebook, solutions)
    if student == "demo_broken":
        first = nbformat.v4.new_code_cell("# my scratch work\nprint(scratch_result)")
        first.id = "student-scratch"
        notebook.cells.insert(0, first)
        # nbgrader restores a deleted graded cell from the source (OverwriteCells.add_missing_cells).
        deleted = next(i for i, c in enumerate(notebook.cells)
                       if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("check_"))
        del notebook.cells[deleted]
    nbformat.write(notebook, target)

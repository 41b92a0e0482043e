"""Build the student versions: nbgrader generate_assignment for every notebook, then validate --invert."""
from __future__ import annotations

from pathlib import Path

from autograder.nbgrader_run import nbgrader
from autograder.paths import ROOT, notebook_path
from course.about import NOTEBOOKS


def release(root: Path = ROOT, quiet: bool = False, assignments: list[str] | None = None) -> list[Path]:
    """Regenerate `release/` from `source/` under `root` (every notebook, or `assignments`) and prove each release
    notebook fails its tests. nbgrader records each assignment's graded cells in the gradebook as it goes: a changed
    test cell or points makes `python -m autograder grade` regrade that assignment."""
    notebooks = []
    for assignment in assignments or NOTEBOOKS:
        nbgrader("generate_assignment", assignment, "--force", root=root, quiet=quiet)
        notebooks.append(notebook_path(root / "release", assignment))
    # --invert: every test cell of an unanswered notebook must fail, or a stub would earn points.
    for notebook in notebooks:
        result = nbgrader("validate", "--invert", str(notebook), root=root, quiet=True)
        if "Success!" not in result.stdout:
            raise RuntimeError(f"{notebook.name}: some test cells pass with nothing written, "
                               f"so a stub would earn points:\n{result.stdout[-3000:]}")
    return notebooks

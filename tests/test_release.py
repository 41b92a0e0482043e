"""release/ is exactly what nbgrader makes of the current source/, strips every solution and hidden
test, and an unanswered release notebook runs to the end saying what is still to do."""
import shutil

import nbformat
import pytest

from autograder.demo.submissions import answered, solution_sources
from autograder.paths import RELEASE, SOURCE, notebook_path
from course.about import NOTEBOOKS
from tests.notebooks import execute, grade_id, text_of


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_release_is_what_nbgrader_generates_from_the_current_source(demo_class, assignment):
    root, _ = demo_class  # the demo ran `python -m autograder release` in a copy of the course
    fresh = notebook_path(root / "release", assignment).read_text()
    assert fresh == notebook_path(RELEASE, assignment).read_text(), \
        f"release/{assignment} is stale: run `python -m autograder release` and commit it"


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_stubs_replace_every_solution(assignment):
    source = nbformat.read(notebook_path(SOURCE, assignment), as_version=4)
    release = {grade_id(c): c for c in nbformat.read(notebook_path(RELEASE, assignment), as_version=4).cells}
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            stub = release[meta["grade_id"]].source
            if cell.cell_type == "code":
                assert "raise NotImplementedError()" in stub and "# YOUR CODE HERE" in stub
            else:
                assert stub.strip() == "YOUR ANSWER HERE"
        if "BEGIN HIDDEN TESTS" in cell.source:
            assert "autograder" not in release[meta["grade_id"]].source, "hidden test left in the release"


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_unanswered_release_runs_to_the_end_and_says_what_is_left(assignment, tmp_path):
    """As a student who finished the earlier notebooks (a later one carries their work over) and opens this one."""
    for earlier in list(NOTEBOOKS)[: list(NOTEBOOKS).index(assignment)]:
        solved = answered(notebook_path(RELEASE, earlier), solution_sources(notebook_path(SOURCE, earlier)))
        notebook_path(tmp_path, earlier).parent.mkdir()
        nbformat.write(solved, notebook_path(tmp_path, earlier))
    here = notebook_path(tmp_path, assignment)
    here.parent.mkdir()
    shutil.copy(notebook_path(RELEASE, assignment), here)
    notebook, seconds = execute(here, grading=False)
    print(f"{assignment} (release, unanswered): {seconds:.1f} s")
    errors = [text_of(c) for c in notebook.cells if any(o.output_type == "error" for o in c.get("outputs", []))]
    assert not errors, f"Run All stops on an unanswered notebook: {errors[0]}"
    for cell in notebook.cells:
        if grade_id(cell) and grade_id(cell).startswith("check_"):
            assert "not written yet" in text_of(cell), f"{grade_id(cell)} does not say what is left"

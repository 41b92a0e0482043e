"""Each source notebook is stored clean and runs top to bottom with every check and hidden test passing."""
import nbformat
import pytest

from autograder.paths import SOURCE, notebook_path
from course.about import NOTEBOOKS
from tests.notebooks import execute, grade_id, text_of


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_source_notebook_is_stored_without_outputs(assignment):
    notebook = nbformat.read(notebook_path(SOURCE, assignment), as_version=4)
    dirty = [grade_id(c) or i for i, c in enumerate(notebook.cells)
             if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"cells with outputs: {dirty}"


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_source_notebook_passes_all_its_tests(assignment):
    notebook, seconds = execute(notebook_path(SOURCE, assignment), grading=True)
    print(f"{assignment}: executed in {seconds:.1f} s")
    graded = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    assert graded, "no graded test cells"
    for cell in graded:
        assert not any(o.output_type == "error" for o in cell.outputs), text_of(cell)
        assert not any(o.get("name") == "stderr" for o in cell.outputs), f"stderr costs points: {text_of(cell)}"
    hidden = [c for c in graded if "BEGIN HIDDEN TESTS" in c.source]
    assert hidden, "no hidden tests ran"


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_every_exercise_has_a_visible_check_and_hidden_tests(assignment):
    notebook = nbformat.read(notebook_path(SOURCE, assignment), as_version=4)
    ids = [grade_id(c) for c in notebook.cells]
    assert len(ids) == len(set(i for i in ids if i)) + ids.count(None), "duplicate grade_ids"
    solutions = [grade_id(c) for c in notebook.cells
                 if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    for solution in solutions:
        assert f"check_{solution}" in ids, f"{solution} has no visible check cell check_{solution}"
        assert f"hidden_{solution}" in ids, f"{solution} has no hidden test cell hidden_{solution}"

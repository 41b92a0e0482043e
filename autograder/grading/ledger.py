"""The grading ledger: one line per finished (assignment, student), written after its grade is committed.

A grading run reads it to skip what is already graded, so a run killed at any point and started again
regrades only what is missing. An entry counts only while the handed-in notebook is the one that was
graded (its SHA-256), the assignment is the one it was graded against (`release_fingerprint`: a changed test cell,
its points, the reference or the hidden tests' verdicts) and the gradebook still holds the submission.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    assignment: str
    student: str
    sha256: str  # the hand-in's fingerprint (autograder.handins.handin.HandIn.fingerprint); "" when there was none
    reason: str  # "" when nothing needs the instructor's attention
    seconds: float  # wall time of its autograde
    release: str = ""  # the assignment's release_fingerprint when it was graded ("" in a ledger from before it)
    points: dict | None = None  # each graded cell's points when it was graded (None in a ledger from before them)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


def release_fingerprint(gradebook, assignment: str, judged_by: list[Path]) -> str:
    """What a grade of `assignment` depends on besides the hand-in: every graded cell's name, type and points and
    every locked cell's checksum (nbgrader's record in `gradebook`, written by generate_assignment), and the files
    that judge it (`judged_by`: its reference and hidden-test modules). A new release that changes any of it
    changes the fingerprint, so what was graded against the old one is graded again."""
    digest = hashlib.sha256()
    for notebook in sorted(gradebook.find_assignment(assignment).notebooks, key=lambda n: n.name):
        for cell in sorted(notebook.grade_cells, key=lambda c: c.name):
            digest.update(f"grade {notebook.name} {cell.name} {cell.cell_type} {float(cell.max_score)!r}\n".encode())
        for cell in sorted(notebook.source_cells, key=lambda c: c.name):
            if cell.locked:
                digest.update(f"locked {notebook.name} {cell.name} {cell.checksum}\n".encode())
    for path in judged_by:
        digest.update(file_hash(path).encode())
    return digest.hexdigest()


class Ledger:
    def __init__(self, path: Path):
        self.path = path

    def entries(self) -> dict[tuple[str, str], Entry]:
        """The latest entry of each (assignment, student); a line cut short by a kill is ignored."""
        found = {}
        if not self.path.exists():
            return found
        for line in self.path.read_text().splitlines():
            try:
                entry = Entry(**json.loads(line))
            except (json.JSONDecodeError, TypeError):
                continue
            found[(entry.assignment, entry.student)] = entry
        return found

    def append(self, entry: Entry) -> None:
        """Add one entry and make it durable before returning."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(asdict(entry)) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

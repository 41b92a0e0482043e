"""The grading ledger: one line per finished (assignment, student), written after its grade is committed.

A grading run reads it to skip what is already graded, so a run killed at any point and started again
regrades only what is missing. An entry counts only while the handed-in notebook is the one that was
graded (its SHA-256) and the gradebook still holds the submission.
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
    sha256: str  # of the handed-in notebook file; "" when there was none
    reason: str  # "" when nothing needs the instructor's attention
    seconds: float  # wall time of its autograde


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


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

"""`python -m autograder.hub.release ASSIGNMENT...`, run in the hub's course directory as its grader: nbgrader's
generate_assignment then release_assignment for each, through nbgrader's own API in one process (one nbgrader start
instead of two per assignment: the demo's seven take seconds, not minutes). Exit 1 with nbgrader's log on failure."""
from __future__ import annotations

import sys

from nbgrader.apps import NbGrader, NbGraderAPI
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config


def release(assignments: list[str]) -> list[str]:
    """Every assignment generated and released into the exchange; the failures' logs ([] when none failed)."""
    app = NbGrader()
    app.initialize([])  # nbgrader_config.py here and the grader's Jupyter settings (the exchange)
    app.config.merge(Config({"ExchangeReleaseAssignment": {"force": True}}))  # a hub started again releases again
    api = NbGraderAPI(coursedir=CourseDirectory(parent=app), authenticator=Authenticator(parent=app), parent=app)
    failures = []
    for assignment in assignments:
        for step in (api.generate_assignment, api.release_assignment):
            result = step(assignment)
            if not result["success"]:
                failures.append(f"{step.__name__} {assignment}:\n{result.get('log', '')}\n{result.get('error') or ''}")
                break
    return failures


if __name__ == "__main__":
    failed = release(sys.argv[1:])
    print("\n".join(failed))
    sys.exit(1 if failed else 0)

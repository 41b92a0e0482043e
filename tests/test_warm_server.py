"""The grading server's warm-up (autograder.warm_server): a job forked from it finds nbgrader's gradebook mappers
configured and nbformat's validators compiled, instead of paying for both before its first cell."""
from __future__ import annotations

import nbformat
import pytest

from autograder import autograde_process


def _report(queue) -> None:
    """In a process forked from the grading server: what it inherited."""
    from nbformat.validator import validators

    import nbgrader.api

    queue.put({"mappers_configured": nbgrader.api.Grade.__mapper__.configured,
               "validators": sorted(key[1:] for key in validators)})


@pytest.fixture(scope="module")
def inherited() -> dict:
    context = autograde_process.context()
    queue = context.Queue()
    job = context.Process(target=_report, args=(queue,))
    job.start()
    found = queue.get(timeout=120)
    job.join(30)
    return found


def test_a_job_inherits_configured_gradebook_mappers(inherited):
    assert inherited["mappers_configured"]


def test_a_job_inherits_the_notebook_validators_compiled(inherited):
    version = (nbformat.v4.nbformat, nbformat.v4.nbformat_minor)
    assert (*version, False) in inherited["validators"] and (*version, True) in inherited["validators"], inherited

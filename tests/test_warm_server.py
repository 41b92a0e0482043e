"""The grading server's warm-up (autograder.grading.warm_server): a job forked from it finds nbgrader's gradebook mappers
configured, nbformat's validators compiled and nbgrader's cell-metadata schema compiled once, instead of paying for
them before its first cell (and, for the schema, at every cell)."""
from __future__ import annotations

import nbformat
import pytest

from autograder.grading import autograde_process


def _report(queue) -> None:
    """In a process forked from the grading server: what it inherited, and what nbgrader's metadata validator says
    of a good cell and of a bad one there."""
    import jsonschema
    from nbformat.validator import validators

    import nbgrader.api
    from nbgrader.nbgraderformat import MetadataValidator
    from nbgrader.nbgraderformat import common

    def compiled():  # (never importing autograder.grading.warm_server here: that would warm up this process itself)
        return len(common.jsonschema.compiled) if hasattr(common.jsonschema, "compiled") else None

    def graded_cell():
        return nbformat.v4.new_code_cell("", metadata={"nbgrader": {
            "schema_version": MetadataValidator.schema_version, "grade": True, "solution": False, "locked": True,
            "grade_id": "a_check", "points": 2}})

    before = compiled()
    MetadataValidator().validate_cell(graded_cell())
    bad = graded_cell()
    bad.metadata.nbgrader["points"] = "many"
    said = {}
    for who, validate in (("server", MetadataValidator().validate_cell),
                          ("jsonschema", lambda cell: jsonschema.validate(cell.metadata.nbgrader,
                                                                          MetadataValidator().schema))):
        try:
            validate(bad)
        except jsonschema.ValidationError as error:
            said[who] = (error.message, list(error.path))
    queue.put({"mappers_configured": nbgrader.api.Grade.__mapper__.configured,
               "validators": sorted(key[1:] for key in validators),
               "schemas_compiled": (before, compiled()), "bad_cell": said})


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


def test_a_job_inherits_nbgraders_metadata_schema_compiled_once(inherited):
    assert inherited["schemas_compiled"] == (1, 1), "compiled by the server, and not again for the job's cells"


def test_the_compiled_schema_refuses_what_jsonschema_refuses(inherited):
    assert inherited["schemas_compiled"][0] is not None, "the job validated with jsonschema's own, not the server's"
    said = inherited["bad_cell"]
    assert said["server"] == said["jsonschema"] == ("'many' is not of type 'number'", ["points"]), said

"""What the grading server does once, on start, so that no grading job forked from it does it again.

Importing a module is not all a job pays before its first cell: nbgrader's gradebook configures SQLAlchemy's
mappers on first use (about 0.3 s), and nbformat compiles its JSON schema into a validator on the first notebook
it reads (about 0.15 s). Both are cached for the life of a process; done here, in the forkserver, every job
inherits them ready. nbgrader's own cell-metadata schema is the exception: nbgrader checks and compiles it again
for every cell it validates, so the server gives nbgrader a validator that does that once per schema
(`CompiledSchemas`). It also asks a fresh Python once for the module path every warm kernel starts from
(`autograder.grading.warm_kernel.interpreter_paths`). Imported only by the server (`autograde_process.context`'s preload list).
"""
from __future__ import annotations

import json

import jsonschema
import nbformat
from nbformat.validator import get_validator
from sqlalchemy.orm import configure_mappers

import nbgrader.api  # noqa: F401 (its models must be defined before the mappers are configured)
from nbgrader.nbgraderformat import MetadataValidator
from nbgrader.nbgraderformat import common as nbgrader_metadata

from autograder.grading.warm_kernel import interpreter_paths


class CompiledSchemas:
    """`jsonschema.validate` for nbgrader's cell metadata, each schema checked and compiled once.

    nbgrader calls `jsonschema.validate(metadata, schema)` for every graded or solution cell each time it reads,
    writes or grades a notebook (76 calls in one autograde of notebook 01), and that function checks the schema
    against its meta-schema and compiles it at every call: 0.12 s of CPU a job, against about 0.02 s here. The
    checks and the errors are jsonschema's own, as `jsonschema.validate` makes them."""

    def __init__(self):
        self.compiled: dict[str, jsonschema.protocols.Validator] = {}

    def validate(self, instance, schema) -> None:
        key = json.dumps(schema, sort_keys=True)
        validator = self.compiled.get(key)
        if validator is None:
            kind = jsonschema.validators.validator_for(schema)
            kind.check_schema(schema)
            validator = self.compiled[key] = kind(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error


def warm_up() -> None:
    """Configure the gradebook's mappers, compile the notebook validators a job reads and writes with, and compile
    nbgrader's cell-metadata schema once for every job."""
    configure_mappers()
    for relaxed in (False, True):  # nbformat reads and writes strictly; nbconvert's exporters relaxed
        get_validator(nbformat.v4.nbformat, nbformat.v4.nbformat_minor, relax_add_props=relaxed)
    nbgrader_metadata.jsonschema = CompiledSchemas()  # the one name nbgrader's validator reads jsonschema by
    MetadataValidator().validate_nb(nbformat.v4.new_notebook(cells=[_graded_cell()]))
    interpreter_paths()  # every job's kernel starts from this module path


def _graded_cell() -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell("", metadata={"nbgrader": {
        "schema_version": MetadataValidator.schema_version, "grade": True, "solution": False, "locked": True,
        "grade_id": "warm_up", "points": 1}})


warm_up()

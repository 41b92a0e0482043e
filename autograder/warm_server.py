"""What the grading server does once, on start, so that no grading job forked from it does it again.

Importing a module is not all a job pays before its first cell: nbgrader's gradebook configures SQLAlchemy's
mappers on first use (about 0.3 s), and nbformat compiles its JSON schema into a validator on the first notebook
it reads (about 0.15 s). Both are cached for the life of a process; done here, in the forkserver, every job
inherits them ready. Imported only by the server (`autograde_process.context`'s preload list).
"""
from __future__ import annotations

import nbformat
from nbformat.validator import get_validator
from sqlalchemy.orm import configure_mappers

import nbgrader.api  # noqa: F401 (its models must be defined before the mappers are configured)


def warm_up() -> None:
    """Configure the gradebook's mappers and compile the notebook validators a job reads and writes with."""
    configure_mappers()
    for relaxed in (False, True):  # nbformat reads and writes strictly; nbconvert's exporters relaxed
        get_validator(nbformat.v4.nbformat, nbformat.v4.nbformat_minor, relax_add_props=relaxed)


warm_up()

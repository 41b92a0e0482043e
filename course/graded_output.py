"""While nbgrader runs a notebook, what it writes to standard error is shown as standard output.

nbgrader scores a graded cell that wrote anything to stderr as failed (`nbgrader.utils.determine_grade`), in
`nbgrader autograde` and in `nbgrader validate` (the Validate button) alike. A progress bar, a log line, a warning or
a `print(..., file=sys.stderr)` while debugging is no mistake, so under nbgrader the kernel publishes its stderr
stream under the name "stdout": every line is still shown (in the graded notebook and the feedback page), and only
an error the code raises fails a cell. Working interactively, nothing changes.
"""
from __future__ import annotations

import sys


def show_stderr_as_stdout() -> bool:
    """Publish the Jupyter kernel's stderr stream as stdout from now on; False (and nothing changed) outside a
    Jupyter kernel.

    Renaming the kernel's stream, rather than pointing `sys.stderr` elsewhere, covers every way text reaches it:
    `print(file=sys.stderr)`, a `logging` handler made earlier or later, tqdm, Python's warnings, and what C code
    writes to file descriptor 2 where the kernel forwards it to the same stream.
    """
    stream = sys.stderr
    if type(stream).__module__ != "ipykernel.iostream" or getattr(stream, "name", None) != "stderr":
        return False
    stream.flush()
    stream.name = "stdout"
    return True

"""How long nbgrader waits on a notebook's kernel: one set of limits for grading (the course's nbgrader_config.py)
and for a student's Validate (the same file where a student works in the course directory; on the class hub the
students' own nbgrader config, which autograder/hub/layout.py writes with `config_lines()`), so that Validate and
the grade agree on a loaded machine too.

nbgrader's own limits are for an idle machine: 30 s a cell, 60 s for the kernel to start, and 4 s for a cell's last
output to arrive after the kernel's reply (nbclient's `iopub_timeout`, which nbgrader makes fatal). The last is the
one that fails first (issue 47): with 12 busy processes beside other work on 2 cores (load 14 to 19) `nbgrader
validate` of 02_attention stopped at the plot cell with "Timeout waiting for IOPub output ... after 4 seconds" and
printed nothing on stdout, 2 runs of 2; that cell's last output came 11 and 16 s after the reply. At the class hub's
capacity bench's peak (bench/README.md: load 59 with 40 students) it came 70 s after: measured at load 56 (48 busy
processes at the lowest priority, Validate's process among them), where the kernel started in 12 s and the slowest
cell ran 4.7 s.
"""
from __future__ import annotations

EXECUTE_TIMEOUTS = {
    "timeout": 300,  # one cell: PyTorch's first import and the first CPU kernels take seconds; a training cell longer
    "startup_timeout": 120,  # the kernel's start
    "iopub_timeout": 180,  # a cell's last output after the kernel's reply: 70 s at the capacity bench's load
}


def config_lines() -> list[str]:
    """The limits as lines of an nbgrader_config.py."""
    return [f"c.Execute.{name} = {seconds}" for name, seconds in EXECUTE_TIMEOUTS.items()]

"""Loaded by every Python process that has this folder on PYTHONPATH: installs the grading guard in a kernel
(and nowhere else, e.g. not in nbgrader itself) when the grader asked for it."""
import os
import sys

def _is_kernel() -> bool:  # at start-up sys.argv is not set yet ("-m"); sys.orig_argv is
    return any(arg == "ipykernel_launcher" or arg.endswith("ipykernel_launcher.py") for arg in sys.orig_argv)


if os.environ.get("COURSE_GRADING_GUARD") and _is_kernel():
    from autograder.grading.guard.policy import install_from_environment

    install_from_environment()

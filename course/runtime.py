"""Where a notebook runs: in Colab, or under nbgrader (grading or a student's Validate)."""
from __future__ import annotations

import os
import sys


def in_colab() -> bool:
    return "google.colab" in sys.modules


def under_grading() -> bool:
    """True while nbgrader executes the notebook (it sets NBGRADER_EXECUTION)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))

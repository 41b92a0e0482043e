"""What the first cell of every notebook calls once the course package is importable."""
from __future__ import annotations

import os
import sys

import torch

from course.about import NOTEBOOKS, builds_on
from course.device import pick_device


def in_colab() -> bool:
    return "google.colab" in sys.modules


def under_grading() -> bool:
    """True while nbgrader executes the notebook (it sets NBGRADER_EXECUTION)."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def device_report(device: torch.device) -> str:
    """`GPU (<name>)` or `CPU`, in words a self-learner recognises, with a hint where Colab could give a GPU."""
    if device.type == "cuda":
        return f"GPU ({torch.cuda.get_device_name(device)})"
    if device.type == "mps":
        return "GPU (Apple MPS)"
    hint = " (no GPU in this runtime; for one: Runtime > Change runtime type > a GPU)" if in_colab() else ""
    return f"CPU{hint}"


def carryover_report(assignment: str) -> str | None:
    """For Colab: which earlier notebooks `assignment` builds on, and how to make the missing ones reachable."""
    needed = builds_on(assignment)
    if not needed:
        return None
    from course.carryover import locate  # carryover imports this module

    missing = [f"{name}.ipynb" for name in needed if locate(name) is None]
    builds = f"This notebook builds on your own notebooks {', '.join(needed)}"
    if not missing:
        return f"{builds}: all found."
    return (f"{builds}. Missing here: {', '.join(missing)}. Upload your own copies (in each: File > Download "
            f"> .ipynb) to {os.getcwd()} with the Files pane on the left, named exactly as listed, or mount "
            f"Google Drive and %cd to the folder that holds them; then run this cell again.")


def setup_notebook(assignment: str | None = None, seed: int = 0) -> torch.device:
    """Seed the random generators, report where the notebook runs, and return the device to use.

    In Colab, `assignment` (the notebook's name) also lets it say which earlier notebooks must be uploaded.
    """
    if assignment is not None and assignment not in NOTEBOOKS:
        raise ValueError(f"There is no notebook {assignment!r}; the notebooks are {', '.join(NOTEBOOKS)}.")
    torch.manual_seed(seed)
    device = pick_device()
    where = "Colab" if in_colab() else "this machine"
    print(f"Running on {where} with torch {torch.__version__}; device: {device_report(device)}.")
    if in_colab() and assignment is not None:
        report = carryover_report(assignment)
        if report:
            print(report)
    return device

"""What the first cell of every notebook calls once the course package is importable."""
from __future__ import annotations

import os

import torch

from course.about import NOTEBOOKS, builds_on
from course.device import pick_device
from course.graded_output import show_stderr_as_stdout
from course.runtime import in_colab, under_grading  # notebooks 06 and 07 import under_grading from here

_assignment_set_up: str | None = None  # the notebook whose set-up cell ran in this kernel, for use_drive()


def device_report(device: torch.device) -> str:
    """`GPU (<name>)` or `CPU`, in words a self-learner recognises, with a hint where Colab could give a GPU."""
    if device.type == "cuda":
        return f"GPU ({torch.cuda.get_device_name(device)})"
    if device.type == "mps":
        return "GPU (Apple MPS)"
    hint = " (no GPU in this runtime; for one: Runtime > Change runtime type > a GPU)" if in_colab() else ""
    return f"CPU{hint}"


def carryover_report(assignment: str) -> str | None:
    """For Colab: which earlier notebooks `assignment` builds on, which were found in Google Drive (and which
    copy), and how to reach the missing ones; None when it builds on none."""
    needed = builds_on(assignment)
    if not needed:
        return None
    from course.carryover import USE_DRIVE, describe_drive_copy, drive_mounted, in_drive, locate

    found = {name: locate(name) for name in needed}
    missing = ", ".join(f"{name}.ipynb" for name, path in found.items() if path is None)
    from_drive = [f"  {name}: from your Drive, {describe_drive_copy(path)}"
                  for name, path in found.items() if path is not None and in_drive(path)]
    builds = f"This notebook builds on your own notebooks {', '.join(needed)}"
    upload = (f"upload your own copies (in each: File > Download > .ipynb) to {os.getcwd()} with the Files pane "
              f"on the left, named exactly as listed; then run this cell again.")
    if not missing:
        lines = [f"{builds}: all found."]
    elif drive_mounted():
        lines = [f"{builds}. Missing here and in your Google Drive: {missing}. Open each in Colab and save it "
                 f"there (File > Save a copy in Drive), or {upload}"]
    else:
        lines = [f"{builds}. Missing here: {missing}. If you saved your work in Colab, it is in your Google Drive: "
                 f"run `{USE_DRIVE}` in a new cell and allow access, then run the cells below it. Or {upload}"]
    return "\n".join(lines + from_drive)


def use_drive(assignment: str | None = None) -> None:
    """In Colab: mount Google Drive (Colab asks the student's permission) so that the earlier notebooks saved
    there are found, and print which were found, where. `assignment` defaults to the notebook set up here."""
    if not in_colab():
        print("use_drive() is for Colab. Here, keep each notebook in its own folder, the folders side by side.")
        return
    from course.carryover import drive_mounted, mount_drive

    if not drive_mounted():
        mount_drive()
    assignment = assignment or _assignment_set_up
    report = carryover_report(assignment) if assignment else None
    print(report or "Google Drive is mounted: your earlier notebooks saved there will be found.")


def setup_notebook(assignment: str | None = None, seed: int = 0) -> torch.device:
    """Seed the random generators, report where the notebook runs, and return the device to use. Under nbgrader
    (autograde or validate), stderr is shown as stdout from here on (`course.graded_output`).

    In Colab, `assignment` (the notebook's name) also lets it say which earlier notebooks it builds on
    are missing, and how to find them in Google Drive (`use_drive`) or upload them.
    """
    if assignment is not None and assignment not in NOTEBOOKS:
        raise ValueError(f"There is no notebook {assignment!r}; the notebooks are {', '.join(NOTEBOOKS)}.")
    global _assignment_set_up
    _assignment_set_up = assignment
    if under_grading():  # nbgrader fails a graded cell for any stderr: a progress bar or a log line is no mistake
        show_stderr_as_stdout()
    torch.manual_seed(seed)
    device = pick_device()
    where = "Colab" if in_colab() else "this machine"
    print(f"Running on {where} with torch {torch.__version__}; device: {device_report(device)}.")
    if in_colab() and assignment is not None:
        report = carryover_report(assignment)
        if report:
            print(report)
    return device

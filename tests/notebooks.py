"""Running notebooks in a real kernel for the tests, and reading what they printed."""
from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograder.paths import ROOT


def execute(path: Path, grading: bool, allow_errors: bool = False) -> tuple[nbformat.NotebookNode, float]:
    """Execute the notebook at `path` in a fresh `python3` kernel; `grading` sets NBGRADER_EXECUTION as nbgrader does."""
    notebook = nbformat.read(path, as_version=4)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NBGRADER_EXECUTION", None)
    if grading:
        env["NBGRADER_EXECUTION"] = "autograde"
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=allow_errors,
                            resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    client.execute(env=env)
    return notebook, time.perf_counter() - started


def text_of(cell) -> str:
    """Everything a code cell showed: streams, results and errors."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
        elif "text/plain" in output.get("data", {}):
            parts.append(output.data["text/plain"])
    return "".join(parts)


def grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")

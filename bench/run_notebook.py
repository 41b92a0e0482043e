"""Run one course notebook as a self-learner runs it (not under grading), and time every cell.

Usage: python bench/run_notebook.py source/07_shakespeare/07_shakespeare.ipynb [--out executed.ipynb]

The source notebook holds the solutions, so every exercise works and every cell runs in full: on a GPU machine,
notebook 07's GPU configuration trains for its own budget (`MINUTES`, `PATIENCE`). Prints, for each code cell that
took a second or more, its time and the last lines it printed, then the whole run's time; `--out` keeps the
executed notebook (its figures too) for reading.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.notebooks import text_of  # noqa: E402


class TimedClient(NotebookClient):
    """nbclient's client, printing each slow cell as it ends (a long run shows its progress)."""

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        started = time.perf_counter()
        result = await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        seconds = time.perf_counter() - started
        if cell.cell_type == "code" and seconds >= 1:
            shown = [line for line in text_of(cell).replace("\r", "\n").splitlines() if line.strip()]
            print(f"--- cell {cell_index}: {seconds:.1f} s", *shown[-6:], sep="\n  ", flush=True)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--out", type=Path, help="where to write the executed notebook")
    args = parser.parse_args()
    notebook = nbformat.read(args.notebook, as_version=4)
    env = {key: value for key, value in os.environ.items() if key != "NBGRADER_EXECUTION"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    client = TimedClient(notebook, timeout=None, kernel_name="python3",
                         resources={"metadata": {"path": str(args.notebook.resolve().parent)}})
    started = time.perf_counter()
    try:
        client.execute(env=env)
    finally:
        print(f"{args.notebook.name}: {time.perf_counter() - started:.1f} s in all", flush=True)
        if args.out:
            nbformat.write(notebook, args.out)


if __name__ == "__main__":
    main()

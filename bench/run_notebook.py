"""Run one course notebook as a self-learner runs it (not under grading), and time every cell.

Usage: python bench/run_notebook.py source/07_shakespeare/07_shakespeare.ipynb [--out executed.ipynb] [--threads 1]

The source notebook holds the solutions, so every exercise works and every cell runs in full: on a GPU machine,
notebook 07's GPU configuration trains for its own budget (`MINUTES`, `PATIENCE`). Prints, for each code cell that
took a second or more, its time, the machine's load while it ran (the 1-minute load average, sampled every 5 s:
how many processes wanted a core) and the last lines it printed, then the whole run's time and load; `--out` keeps
the executed notebook (its figures too) for reading. `--threads N` gives PyTorch N threads in the notebook's kernel
(OMP_NUM_THREADS, which PyTorch reads when it starts; by default it takes one per core), as
`torch.set_num_threads(N)` in the notebook's first cell would.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.notebooks import text_of  # noqa: E402

LOAD_EVERY_SECONDS = 5


class LoadSampler:
    """The 1-minute load average, read every LOAD_EVERY_SECONDS in a thread: (time, load) pairs."""

    def __init__(self):
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append((time.perf_counter(), os.getloadavg()[0]))
            if self._stop.wait(LOAD_EVERY_SECONDS):
                return

    def __enter__(self) -> "LoadSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def between(self, start: float, end: float) -> str:
        """'load 2.5 to 4.1': the lowest and highest load read from `start` to `end` (and the reading before)."""
        before = [load for when, load in self.samples if when <= start][-1:]
        loads = before + [load for when, load in self.samples if start < when <= end] + [os.getloadavg()[0]]
        low, high = min(loads), max(loads)
        return f"load {low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"load {low:.1f} to {high:.1f}"


class TimedClient(NotebookClient):
    """nbclient's client, printing each slow cell as it ends (a long run shows its progress)."""

    load: LoadSampler | None = None

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        started = time.perf_counter()
        result = await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        seconds = time.perf_counter() - started
        if cell.cell_type == "code" and seconds >= 1:
            shown = [line for line in text_of(cell).replace("\r", "\n").splitlines() if line.strip()]
            name = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            load = f", {self.load.between(started, time.perf_counter())}" if self.load else ""
            print(f"--- cell {cell_index} {name}: {seconds:.1f} s{load}", *shown[-6:], sep="\n  ", flush=True)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--out", type=Path, help="where to write the executed notebook")
    parser.add_argument("--threads", type=int, help="PyTorch's threads in the kernel (default: one per core)")
    args = parser.parse_args()
    notebook = nbformat.read(args.notebook, as_version=4)
    env = {key: value for key, value in os.environ.items() if key != "NBGRADER_EXECUTION"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if args.threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(args.threads)
    client = TimedClient(notebook, timeout=None, kernel_name="python3",
                         resources={"metadata": {"path": str(args.notebook.resolve().parent)}})
    threads = f"{args.threads} thread{'s' if args.threads > 1 else ''}" if args.threads else "PyTorch's default threads"
    print(f"{args.notebook.name}: {os.cpu_count()} cores, {threads}, "
          f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(not set)')}", flush=True)
    with LoadSampler() as client.load:
        started = time.perf_counter()
        try:
            client.execute(env=env)
        finally:
            print(f"{args.notebook.name}: {time.perf_counter() - started:.1f} s in all, "
                  f"{client.load.between(started, time.perf_counter())}", flush=True)
            if args.out:
                nbformat.write(notebook, args.out)


if __name__ == "__main__":
    main()

"""Benchmark: one thread or PyTorch's default, for the training steps of notebooks 06 and 07 on this machine as it is.

Usage: python bench/threads.py [--notebook 06|07] [--steps 200] [--rounds 3] [--threads 1 2]

PyTorch starts one thread per core and hands an operation to all of them at once, waiting until each has done its
share; on a machine whose cores other programs are using, one of them often waits for a core, and the others wait for
it. This measures what that costs the notebooks' own training steps: the reference model at the notebook's CPU
configuration (06: d_model 32, 2 layers, batch 64 of 12 tokens, Adam lr 5e-3, the reference train_reversal's step;
07: d_model 128, 2 layers, vocabulary 30,607, batch 16 windows of 128 ids, AdamW lr 3e-3 and weight decay 0.01, the
step of course.training.train_language_model, on random ids) for `--steps` steps at each thread count in turn,
`--rounds` times over, so that each count meets the same load. Prints the steps a second of every run, the machine's
1-minute load average before and after it (how many processes wanted a core), the median per thread count, and a
markdown row for bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder.authoring.reference.transformer import DecoderOnlyTransformer  # noqa: E402
from bench import reversal, shakespeare  # noqa: E402

VOCABULARY_07 = 30_607  # the distinct tokens of the 42 works (notebook 07 prints it)
SETTINGS = {  # the notebooks' CPU configurations, as bench/reversal.py and bench/shakespeare.py keep them
    "06": dict(config=dict(reversal.CONFIG, max_len=2 * reversal.HALF), batch=reversal.SETTINGS["cpu"]["batch"],
               tokens=2 * reversal.HALF,
               optimizer=lambda params: torch.optim.Adam(params, lr=reversal.SETTINGS["cpu"]["lr"])),
    "07": dict(config=dict(shakespeare.SETTINGS["cpu"]["config"], vocab_size=VOCABULARY_07, max_len=shakespeare.SEQ_LEN),
               batch=shakespeare.SETTINGS["cpu"]["batch"], tokens=shakespeare.SEQ_LEN,
               optimizer=lambda params: torch.optim.AdamW(params, lr=shakespeare.SETTINGS["cpu"]["lr"],
                                                          weight_decay=shakespeare.SETTINGS["cpu"]["weight_decay"])),
}


def steps_per_second(notebook: str, threads: int, steps: int) -> float:
    """Train a fresh model `steps` steps on `threads` threads (after two steps not timed): steps a second."""
    settings = SETTINGS[notebook]
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = DecoderOnlyTransformer(**settings["config"])
    optimizer = settings["optimizer"](model.parameters())
    V = settings["config"]["vocab_size"]

    def step() -> None:
        batch = torch.randint(V, (settings["batch"], settings["tokens"]))
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(2):
        step()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    return steps / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", choices=sorted(SETTINGS), default="06")
    parser.add_argument("--steps", type=int, help="steps a run (default: 200 for 06, 10 for 07)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, torch.get_num_threads()])
    args = parser.parse_args()
    steps = args.steps or {"06": 200, "07": 10}[args.notebook]
    found: dict[int, list[float]] = {threads: [] for threads in args.threads}
    loads = [os.getloadavg()[0]]
    for round_ in range(args.rounds):
        for threads in args.threads:
            before = os.getloadavg()[0]
            rate = steps_per_second(args.notebook, threads, steps)
            loads += [before, os.getloadavg()[0]]
            found[threads].append(rate)
            print(f"round {round_ + 1}, {threads} thread{'s' if threads > 1 else ''}: {rate:.2f} steps/s "
                  f"(load {before:.1f} -> {os.getloadavg()[0]:.1f})", flush=True)
    medians = {threads: statistics.median(rates) for threads, rates in found.items()}
    cells = " | ".join(f"{medians[t]:.2f} (runs: {', '.join(f'{r:.2f}' for r in found[t])})" for t in args.threads)
    print(f"\n| {args.notebook} | {platform.machine()}, {os.cpu_count()} cores, "
          f"{torch.backends.cpu.get_cpu_capability().lower()} | load {min(loads):.1f} to {max(loads):.1f} | "
          f"{steps} steps | " + cells + f" | {datetime.datetime.now():%Y-%m-%d %H:%M} |")
    print("thread counts in the row: " + ", ".join(map(str, args.threads)))


if __name__ == "__main__":
    main()

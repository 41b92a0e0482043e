"""Benchmark: how long notebook 07's overfitting experiment takes, training and validation apart.

Usage: python bench/overfitting.py [--threads 1]

Runs the experiment as the notebook's overfitting_experiment cell does (the reference model at width 64, two blocks,
on the first 10 training windows, 150 steps of batch 8, validation on 50 windows every 10 steps, once without
regularisation and once with dropout 0.3 and weight decay 0.1, then the kept weights scored on 50 windows), with the
reference tokenize, Vocab, chunk, split, evaluate and train_model (the loop the student writes: warmup, cosine decay,
clipping at 1.0, the best weights kept). For each run prints its best validation score and step, the last validation
score, the last training loss, the run's whole time (validation included) and the machine's 1-minute load average
before and after; then a markdown row for bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder.authoring.reference import shakespeare as ref  # noqa: E402
from bench.shakespeare import data, SEQ_LEN  # noqa: E402

# The cell's own values (tests/test_bench.py keeps them equal): EXPERIMENT_WINDOWS and EXPERIMENT_STEPS, its two runs'
# (dropout, weight decay), the model and what it passes train_model.
WINDOWS, STEPS = 10, 150
RUNS = [(0.0, 0.0), (0.3, 0.1)]
MODEL = dict(d_model=64, n_heads=4, d_ff=256, n_layers=2)
TRAINING = dict(batch_size=8, max_lr=3e-3, warmup_steps=10, eval_every=10, eval_windows=50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train, val, vocab_size = data()
    rows, loads = [], [os.getloadavg()[0]]
    for dropout, weight_decay in RUNS:
        before = os.getloadavg()[0]
        started = time.perf_counter()
        torch.manual_seed(0)
        small = ref.DecoderOnlyTransformer(vocab_size, **MODEL, max_len=SEQ_LEN, dropout=dropout)
        run = ref.train_model(small, train[:WINDOWS], val, STEPS, **TRAINING, weight_decay=weight_decay,
                              generator=torch.Generator().manual_seed(0))
        kept = ref.evaluate(small, val[:50], 32)  # the cell's last score, under its chart
        whole = time.perf_counter() - started
        loads += [before, os.getloadavg()[0]]
        rows.append(whole)
        print(f"dropout {dropout:g}, weight decay {weight_decay:g}: the run {whole:.0f} s, best {run['best_val']:.2f} "
              f"at step {run['best_step']}, last validation {run['val'][-1]:.2f} at step {run['eval_step'][-1]}, last "
              f"training loss {run['train'][-1]:.2f}, kept weights {kept:.2f} (load {before:.1f} -> "
              f"{os.getloadavg()[0]:.1f})", flush=True)
    whole = sum(rows)
    print(f"\n| {platform.machine()}, {os.cpu_count()} cores, {args.threads} thread{'s' if args.threads > 1 else ''}, "
          f"{torch.backends.cpu.get_cpu_capability().lower()} | load {min(loads):.1f} to {max(loads):.1f} | "
          f"{whole / 60:.1f} min | {datetime.datetime.now():%Y-%m-%d %H:%M} |")


if __name__ == "__main__":
    main()

"""Benchmark: wall time for the reference model to reach 99% second-half accuracy on the reversal task (notebook 06).

Usage: python bench/reversal.py [--threads 2] [--runs 3] [--device cpu]
Trains the reference DecoderOnlyTransformer at the notebook's configuration (vocab 10, half length 6, d_model 32,
4 heads, d_ff 64, 2 layers, batch 64, Adam lr 5e-3) from seeds 0, 1, 2, ... and stops each run when the mean
next-token accuracy over the second half of a fixed evaluation batch (1000 sequences, checked every 25 steps)
reaches 99%. Reports the median over the runs of the training wall time (evaluation excluded) and of the steps,
and prints a markdown row for bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder.reference import reversal as ref  # noqa: E402

CONFIG = dict(vocab_size=10, d_model=32, n_heads=4, d_ff=64, n_layers=2)
HALF, BATCH, LR, EVERY, MAX_STEPS, TARGET = 6, 64, 5e-3, 25, 4000, 0.99


def one_run(seed: int, device: torch.device) -> tuple[float, int]:
    """(training seconds, steps) until the second-half accuracy reaches TARGET; (inf, MAX_STEPS) if it never does."""
    V = CONFIG["vocab_size"]
    torch.manual_seed(seed)
    model = ref.DecoderOnlyTransformer(**CONFIG, max_len=2 * HALF).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    evaluation = ref.reversal_batch(1000, HALF, V, generator=torch.Generator().manual_seed(10_000 + seed)).to(device)
    trained = 0.0
    for step in range(1, MAX_STEPS + 1):
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        batch = ref.reversal_batch(BATCH, HALF, V).to(device)
        logits = model(batch)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        trained += time.perf_counter() - started
        if step % EVERY == 0:
            accuracy = ref.per_position_accuracy(model, evaluation)
            model.train()
            if accuracy[HALF - 1:].mean().item() >= TARGET:
                return trained, step
    return float("inf"), MAX_STEPS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    results = []
    for seed in range(args.runs):
        seconds, steps = one_run(seed, device)
        results.append((seconds, steps))
        print(f"seed {seed}: {seconds:.1f} s, {steps} steps", flush=True)
    seconds = statistics.median(r[0] for r in results)
    steps = statistics.median(r[1] for r in results)
    where = (torch.cuda.get_device_name(device) if device.type == "cuda"
             else f"{platform.processor() or platform.machine()}, {args.threads} CPU threads")
    print(f"| reversal to 99% second-half accuracy | {where} | torch {torch.__version__} | "
          f"{seconds:.1f} s (runs: {', '.join(f'{r[0]:.1f}' for r in results)}) | "
          f"{steps:.0f} steps (runs: {', '.join(str(r[1]) for r in results)}) | {datetime.date.today()} |")


if __name__ == "__main__":
    main()

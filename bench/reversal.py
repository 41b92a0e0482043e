"""Benchmark: wall time for the reference model to reach 99% second-half accuracy on the reversal task (notebook 06).

Usage: python bench/reversal.py [--threads 2] [--runs 3] [--device cpu] [--config cpu|cuda]
Trains the reference DecoderOnlyTransformer at the notebook's configuration for the device (vocab 10, half length 6,
d_model 32, 4 heads, d_ff 64, 2 layers; on a CPU batch 64 and Adam lr 5e-3, on a GPU batch 1024 and lr 1e-2; --config
picks the other one) from seeds 0, 1, 2, ... and stops each run when the mean next-token accuracy over the second
half of a fixed evaluation batch (1000 sequences, checked every 10 steps) reaches 99%. Reports the median over the
runs of the training wall time (evaluation excluded) and of the steps, and prints a markdown row for bench/README.md.

Each step is the course's own loop, the reference train_reversal: a batch copied from page-locked memory without
waiting on a GPU, and no loss read back (the reference reads its losses every 50 steps). The clock waits for the
GPU only at the end of each 10 steps, before the evaluation it leaves out.
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
from autograder.authoring.reference import reversal as ref  # noqa: E402

CONFIG = dict(vocab_size=10, d_model=32, n_heads=4, d_ff=64, n_layers=2)
SETTINGS = {"cpu": dict(batch=64, lr=5e-3), "cuda": dict(batch=1024, lr=1e-2)}  # notebook 06's, per device
HALF, EVERY, MAX_STEPS, TARGET = 6, 10, 4000, 0.99


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def one_run(seed: int, device: torch.device, batch: int, lr: float) -> tuple[float, int]:
    """(training seconds, steps) until the second-half accuracy reaches TARGET; (inf, MAX_STEPS) if it never does."""
    V = CONFIG["vocab_size"]
    torch.manual_seed(seed)
    model = ref.DecoderOnlyTransformer(**CONFIG, max_len=2 * HALF).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    evaluation = ref.reversal_batch(1000, HALF, V, generator=torch.Generator().manual_seed(10_000 + seed)).to(device)
    trained = 0.0
    for step in range(EVERY, MAX_STEPS + 1, EVERY):
        synchronize(device)
        started = time.perf_counter()
        for _ in range(EVERY):  # as the reference train_reversal steps
            tokens = ref.reversal_batch(batch, HALF, V)
            if device.type == "cuda":
                tokens = tokens.pin_memory()
            tokens = tokens.to(device, non_blocking=True)
            logits = model(tokens)
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        synchronize(device)
        trained += time.perf_counter() - started
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
    parser.add_argument("--config", choices=sorted(SETTINGS), help="the notebook's settings for this kind of device "
                        "(default: the device's own)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    config = args.config or ("cuda" if device.type == "cuda" else "cpu")
    settings = SETTINGS[config]
    results = []
    for seed in range(args.runs):
        seconds, steps = one_run(seed, device, settings["batch"], settings["lr"])
        results.append((seconds, steps))
        print(f"seed {seed}: {seconds:.2f} s, {steps} steps", flush=True)
    seconds = statistics.median(r[0] for r in results)
    steps = statistics.median(r[1] for r in results)
    where = (torch.cuda.get_device_name(device) if device.type == "cuda"
             else f"{platform.processor() or platform.machine()}, {args.threads} CPU threads")
    print(f"| reversal to 99%, {config} settings (batch {settings['batch']}, lr {settings['lr']:g}) | {where} | "
          f"torch {torch.__version__} | {seconds:.2f} s (runs: {', '.join(f'{r[0]:.2f}' for r in results)}) | "
          f"{steps:.0f} steps (runs: {', '.join(str(r[1]) for r in results)}) | {datetime.date.today()} |")


if __name__ == "__main__":
    main()

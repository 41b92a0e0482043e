"""Benchmark: notebook 07's own training run, trained with the reference `train_model` (the loop the student writes).

Usage: python bench/training_loop.py [--threads 1] [--steps 600]
Tokenizes the 42 works with the reference `tokenize` and `Vocab`, cuts 128-id windows, splits them 90/10, and trains
the reference DecoderOnlyTransformer in the notebook's CPU configuration (bench/shakespeare.py's SETTINGS["cpu"]) with
the notebook's schedule (TRAINING: 100 warmup steps to max_lr 3e-3, the cosine down to 0, weight decay 0.01 on the
matrices, gradients clipped at 1.0, 200 validation windows every 100 steps, the best weights kept), seeded as the
notebook seeds it. Prints the training time, the seconds per step, the best step and the final score on all the
validation windows, with the unigram and bigram baselines, and a markdown row for bench/README.md (the machine's load
and the CPU kernels' instruction set, which ATEN_CPU_CAPABILITY chooses).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from autograder.authoring.reference import shakespeare as ref  # noqa: E402
from course.baselines import bigram_loss, unigram_loss  # noqa: E402
from shakespeare import CONFIG, CPU_STEPS, SEQ_LEN, data  # noqa: E402

# The notebook's train_run cell passes these to train_model on a CPU (tests/test_bench.py keeps them equal).
TRAINING = dict(batch_size=16, max_lr=3e-3, warmup_steps=100, weight_decay=0.01, max_grad_norm=1.0, eval_every=100,
                eval_windows=200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=CPU_STEPS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train, val, vocab_size = data()
    torch.manual_seed(0)
    model = ref.DecoderOnlyTransformer(vocab_size=vocab_size, max_len=SEQ_LEN, **CONFIG)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    history = ref.train_model(model, train, val, args.steps, **TRAINING, generator=torch.Generator().manual_seed(0))
    seconds = time.perf_counter() - started
    final = ref.evaluate(model, val, 32)
    load = f"{load:.0f} to {os.getloadavg()[0]:.0f}"
    baselines = {"unigram": unigram_loss(train, val, vocab_size), "bigram": bigram_loss(train, val, vocab_size)}
    print(f"{args.steps} steps on {args.threads} thread(s) in {seconds / 60:.1f} min ({seconds / args.steps:.2f} s a "
          f"step, validation included), load {load}; best step {history['best_step']}, its 200-window score "
          f"{history['best_val']:.3f}; all {len(val):,} validation windows: {final:.3f} nats per token")
    print(", ".join(f"{name} {loss:.3f}" for name, loss in baselines.items()))
    capability = torch.backends.cpu.get_cpu_capability()
    print(f"| {capability} | {args.threads} | {load} | {args.steps} | {seconds / 60:.1f} min | {history['best_step']} "
          f"| {final:.3f} |")


if __name__ == "__main__":
    main()

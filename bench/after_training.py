"""Benchmark: how long notebook 07's cells after training take on a CPU: the final score on every validation window
(train_plot), the four samples of 60 tokens (samples_run) and the greedy run of 400 tokens (greedy_loop).

Usage: python bench/after_training.py [--threads 1]
Runs the cells' own calls with the reference evaluate, sample and generate on the reference DecoderOnlyTransformer in
the notebook's CPU configuration (its weights untrained: the time of a forward pass does not depend on them), and
prints each cell's seconds, the machine's 1-minute load average before and after, and a markdown row for
bench/README.md.
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
from shakespeare import CONFIG, SEQ_LEN  # noqa: E402

PROMPT, SAMPLE_TOKENS, GREEDY_TOKENS = "KING.\n", 60, 400  # the cells' prompt and lengths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokens = ref.tokenize(__import__("course.shakespeare", fromlist=["load_shakespeare"]).load_shakespeare())
    vocab = ref.Vocab.build(tokens)
    windows = ref.chunk(torch.tensor(vocab.encode(tokens)), SEQ_LEN)
    _, val = ref.train_val_split(windows, 0.1)
    torch.manual_seed(0)
    model = ref.DecoderOnlyTransformer(vocab_size=len(vocab), max_len=SEQ_LEN, **CONFIG)
    before = os.getloadavg()[0]
    seconds = {}
    started = time.perf_counter()
    ref.evaluate(model, val, 32)
    seconds[f"final score, {len(val):,} windows"] = time.perf_counter() - started
    started = time.perf_counter()
    for temperature in (0.0, 0.6, 1.0, 1.3):
        ref.sample(model, vocab, PROMPT, SAMPLE_TOKENS, temperature=temperature, generator=torch.Generator().manual_seed(0))
    seconds["four samples"] = time.perf_counter() - started
    started = time.perf_counter()
    start = torch.tensor([vocab.encode(ref.tokenize(PROMPT))])
    ref.generate(model, start, GREEDY_TOKENS, temperature=0.0)
    seconds[f"greedy, {GREEDY_TOKENS} tokens"] = time.perf_counter() - started
    load = f"{before:.0f} to {os.getloadavg()[0]:.0f}"
    for name, value in seconds.items():
        print(f"{name}: {value:.0f} s")
    print(f"| {torch.backends.cpu.get_cpu_capability()} | {args.threads} | {load} | "
          + " | ".join(f"{v:.0f} s" for v in seconds.values()) + " |")


if __name__ == "__main__":
    main()

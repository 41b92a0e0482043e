"""Benchmark: validation loss of the reference model on Shakespeare after 2, 5 and 10 minutes of training (notebook 07).

Usage: python bench/shakespeare.py [--threads 2] [--device cpu] [--minutes 2 5 10]
Tokenizes the 42 works with the reference `tokenize` and `Vocab`, cuts 128-id windows, splits them 90/10, and trains
the reference DecoderOnlyTransformer at the notebook's defaults (d_model 128, 4 heads, d_ff 512, 2 layers, batch 16,
AdamW lr 3e-3 after 100 warm-up steps) with the course's `train_language_model`. At each checkpoint the whole
validation set is scored (evaluation time excluded from the training time). Prints the unigram and bigram baselines
of the same split, the losses at the checkpoints, the training tokens per second, and a markdown row for
bench/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import math
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder.reference import shakespeare as ref  # noqa: E402
from course.baselines import bigram_loss, unigram_loss  # noqa: E402
from course.shakespeare import load_shakespeare  # noqa: E402
from course.training import train_language_model  # noqa: E402

# The notebook's defaults (source/07_shakespeare, cells baselines_run and train_run); tests/test_bench.py keeps them equal.
SEQ_LEN, VAL_FRACTION = 128, 0.1
CONFIG = dict(d_model=128, n_heads=4, d_ff=512, n_layers=2)
BATCH, LR = 16, 3e-3


def data() -> tuple[torch.Tensor, torch.Tensor, int]:
    tokens = ref.tokenize(load_shakespeare())
    vocab = ref.Vocab.build(tokens)
    windows = ref.chunk(torch.tensor(vocab.encode(tokens)), SEQ_LEN)
    train, val = ref.train_val_split(windows, VAL_FRACTION)
    return train, val, len(vocab)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--minutes", type=float, nargs="+", default=[2, 5, 10])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)

    train, val, vocab_size = data()
    baselines = {"unigram": unigram_loss(train, val, vocab_size), "bigram": bigram_loss(train, val, vocab_size)}
    print(f"{len(train):,} training and {len(val):,} validation windows of {SEQ_LEN}; vocabulary {vocab_size:,}")
    print("baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in baselines.items()))

    checkpoints = sorted(args.minutes)
    reached: dict[float, tuple[int, float]] = {}

    def at_checkpoint(step: int, seconds: float) -> None:
        for minutes in checkpoints:
            if minutes not in reached and seconds >= 60 * minutes:
                started = time.perf_counter()
                loss = ref.evaluate(model, val, 32)
                reached[minutes] = (step, loss)
                print(f"\n{minutes:g} min: step {step}, validation {loss:.3f} nats/token "
                      f"(scored in {time.perf_counter() - started:.0f} s)", flush=True)

    torch.manual_seed(0)
    model = ref.DecoderOnlyTransformer(vocab_size, max_len=SEQ_LEN, **CONFIG)
    history = train_language_model(model, train, val, ref.evaluate, max_steps=10**9, minutes=checkpoints[-1] + 0.05,
                                   batch_size=BATCH, lr=LR, device=device, after_step=at_checkpoint)
    tokens_per_second = history["tokens_per_second"]
    print(f"{history['step'][-1]} steps, {history['tokens']:,} tokens in {history['seconds']:.0f} s: "
          f"{tokens_per_second:,.0f} tokens/s")

    machine = f"{platform.machine()}, {args.threads} CPU threads" if device.type == "cpu" else \
        torch.cuda.get_device_name(device)
    losses = " / ".join(f"{reached[m][1]:.3f} ({reached[m][0]} steps)" if m in reached else "-" for m in checkpoints)
    print("\n| machine | torch | validation loss at " + " / ".join(f"{m:g}" for m in checkpoints)
          + " min | tokens/s | unigram / bigram | date |")
    print(f"| {machine} | torch {torch.__version__} | {losses} | {tokens_per_second:,.0f} | "
          f"{baselines['unigram']:.3f} / {baselines['bigram']:.3f} | {datetime.date.today()} |")
    last = reached[checkpoints[-1]][1] if checkpoints[-1] in reached else math.nan
    print(f"perplexity at {checkpoints[-1]:g} min: {math.exp(last):.0f} (bigram {math.exp(baselines['bigram']):.0f})")


if __name__ == "__main__":
    main()

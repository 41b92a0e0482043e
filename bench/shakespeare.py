"""Benchmark: validation loss of the reference model on Shakespeare at checkpoints of training (notebook 07).

Usage: python bench/shakespeare.py [--threads 2] [--device cpu] [--config cpu|cuda] [--steps 200 400 600 | --minutes 2 5 10]
Checkpoints are step counts (--steps; by default, with the CPU configuration, the notebook's CPU_STEPS and two before)
or minutes of training (--minutes; by default with the CUDA configuration: 2, 5 and 10), and training stops at the
last one, as notebook 07 does: by steps on a CPU, within a time budget on a GPU.
Tokenizes the 42 works with the reference `tokenize` and `Vocab`, cuts 128-id windows, splits them 90/10, and trains
the reference DecoderOnlyTransformer in the configuration notebook 07 trains on that kind of device (--config, by
default the device's: on a CPU d_model 128, 4 heads, d_ff 512, 2 layers, no dropout, batch 16, AdamW lr 3e-3 and
weight decay 0.01; on CUDA d_model 256, 8 heads, d_ff 1024, 4 layers, dropout 0.3, batch 32, lr 1e-3, weight decay
0.1; 100 warm-up steps) with the course's `train_language_model`, which validates on 200 windows every 100 steps and
keeps the weights of the best of those scores. At each checkpoint the whole validation set is scored twice: the
weights training has at that moment ("final", what a run ending there would have without keep-best) and the best
weights kept so far ("best", what the notebook ends with); evaluation time is excluded from the training time.
Prints the unigram and bigram baselines of the same split, both losses and the training time at the checkpoints, the
training tokens per second, and a markdown row for bench/README.md (with the CPU kernels' instruction set, which
ATEN_CPU_CAPABILITY chooses).
"""
from __future__ import annotations

import argparse
import copy
import datetime
import math
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder.authoring.reference import shakespeare as ref  # noqa: E402
from course.baselines import bigram_loss, unigram_loss  # noqa: E402
from course.shakespeare import load_shakespeare  # noqa: E402
from course.training import train_language_model  # noqa: E402

# The notebook's configurations (source/07_shakespeare, cells baselines_run and train_run), one per kind of device;
# tests/test_bench.py keeps them equal.
SEQ_LEN, VAL_FRACTION = 128, 0.1
SETTINGS = {
    "cpu": dict(config=dict(d_model=128, n_heads=4, d_ff=512, n_layers=2, dropout=0.0), batch=16, lr=3e-3,
                weight_decay=0.01),
    "cuda": dict(config=dict(d_model=256, n_heads=8, d_ff=1024, n_layers=4, dropout=0.3), batch=32, lr=1e-3,
                 weight_decay=0.1),
}
CONFIG, BATCH, LR = SETTINGS["cpu"]["config"], SETTINGS["cpu"]["batch"], SETTINGS["cpu"]["lr"]  # the CPU defaults
CPU_STEPS, GPU_MINUTES = 600, 10  # the notebook trains a CPU for STEPS steps, a GPU for at most MINUTES minutes


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
    parser.add_argument("--config", choices=sorted(SETTINGS), help="the notebook's configuration for this kind of "
                        "device (default: the --device's kind)")
    marks = parser.add_mutually_exclusive_group()
    marks.add_argument("--steps", type=int, nargs="+", help="checkpoints in steps of training")
    marks.add_argument("--minutes", type=float, nargs="+", help="checkpoints in minutes of training")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    kind = args.config or ("cuda" if device.type == "cuda" else "cpu")
    settings = SETTINGS[kind]
    if args.steps is None and args.minutes is None:
        args.steps, args.minutes = ([CPU_STEPS // 3, 2 * CPU_STEPS // 3, CPU_STEPS], None) if kind == "cpu" else \
            (None, [2, 5, GPU_MINUTES])
    by_steps = args.steps is not None
    unit = "steps" if by_steps else "min"

    train, val, vocab_size = data()
    baselines = {"unigram": unigram_loss(train, val, vocab_size), "bigram": bigram_loss(train, val, vocab_size)}
    print(f"{len(train):,} training and {len(val):,} validation windows of {SEQ_LEN}; vocabulary {vocab_size:,}")
    print("baselines: " + ", ".join(f"{k} {v:.3f}" for k, v in baselines.items()))

    print(f"configuration: {kind} ({settings})")
    checkpoints = sorted(args.steps if by_steps else args.minutes)
    reached: dict[float, tuple[int, float, int, float, float]] = {}  # mark -> (step, final, best step, best, seconds)
    kept = {"step": None, "weights": None}  # the best weights so far, as train_language_model keeps them

    def after_eval(step: int, score: float) -> None:
        if kept["step"] is None or score < kept["score"]:
            kept.update(step=step, score=score, weights=copy.deepcopy(model.state_dict()))

    def at_checkpoint(step: int, seconds: float) -> None:
        for mark in checkpoints:
            if mark not in reached and (step >= mark if by_steps else seconds >= 60 * mark):
                started = time.perf_counter()
                final = ref.evaluate(model, val, 32)
                best_step, best = step, final
                if kept["step"] is not None and kept["step"] != step:
                    scratch.load_state_dict(kept["weights"])
                    best_step, best = kept["step"], ref.evaluate(scratch, val, 32)
                reached[mark] = (step, final, best_step, best, seconds)
                print(f"\n{mark:g} {unit}: step {step} after {seconds:.0f} s of training, validation {final:.3f} "
                      f"nats/token; best weights so far (step {best_step}) {best:.3f} "
                      f"(scored in {time.perf_counter() - started:.0f} s)", flush=True)

    torch.manual_seed(0)
    model = ref.DecoderOnlyTransformer(vocab_size, max_len=SEQ_LEN, **settings["config"])
    scratch = copy.deepcopy(model).to(device)  # scores the kept weights without disturbing training
    history = train_language_model(model, train, val, ref.evaluate, max_steps=checkpoints[-1] if by_steps else 10**9,
                                   minutes=None if by_steps else checkpoints[-1] + 0.05,
                                   batch_size=settings["batch"], lr=settings["lr"],
                                   weight_decay=settings["weight_decay"], device=device, after_step=at_checkpoint,
                                   after_eval=after_eval)
    tokens_per_second = history["tokens_per_second"]
    print(f"{history['step'][-1]} steps, {history['tokens']:,} tokens in {history['seconds']:.0f} s: "
          f"{tokens_per_second:,.0f} tokens/s; best of the 200-window validations at step {history['best_step']}")

    isa = torch.backends.cpu.get_cpu_capability().lower()  # what ATEN_CPU_CAPABILITY chose, if it is set
    machine = f"{platform.machine()}, {args.threads} CPU threads, {isa}" if device.type == "cpu" else \
        torch.cuda.get_device_name(device)
    after = (lambda m: f"{reached[m][4] / 60:.1f} min") if by_steps else (lambda m: f"{reached[m][0]} steps")
    losses = " / ".join(f"{reached[m][3]:.3f} & {reached[m][1]:.3f} ({after(m)})" if m in reached else "-"
                        for m in checkpoints)
    print("\n| machine | torch | configuration | validation loss, best & final, at " + " / ".join(f"{m:g}" for m in checkpoints)
          + f" {unit} | tokens/s | unigram / bigram | date |")
    print(f"| {machine} | torch {torch.__version__} | {kind} | {losses} | {tokens_per_second:,.0f} | "
          f"{baselines['unigram']:.3f} / {baselines['bigram']:.3f} | {datetime.date.today()} |")
    last = reached[checkpoints[-1]][3] if checkpoints[-1] in reached else math.nan
    print(f"perplexity of the best weights at {checkpoints[-1]:g} {unit}: {math.exp(last):.0f} "
          f"(bigram {math.exp(baselines['bigram']):.0f})")


if __name__ == "__main__":
    main()

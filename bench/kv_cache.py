"""Benchmark: what a key-value cache saves in generation, measured side by side in one run (notebook 05).

Usage: python bench/kv_cache.py [--threads 1 2] [--repeats 5] [--device cpu]
The reference `generate` (the whole text through the model at every step) against the reference `generate_cached`
(`forward_with_cache`: the prompt once, then one position a step), greedily, on the untrained
DecoderOnlyTransformer of notebook 05's timing cell (course.plots.transformer.CACHE_MODEL, seed 0), after its prompt
of CACHE_PROMPT tokens, for each of its numbers of new tokens (CACHE_LENGTHS). For each thread count in turn the two
take turns, `--repeats` runs each after a warm-up; reported are the median seconds of each (with every run), the
speed-up (the ratio of the medians) and whether both wrote the same tokens. Also printed: the machine, the CPU's model
name, the kernels PyTorch picked (ATEN_CPU_CAPABILITY changes them), the load average before and after, the command.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder.authoring.reference import transformer as ref  # noqa: E402
from course.plots.transformer import CACHE_LENGTHS, CACHE_MODEL, CACHE_PROMPT, time_cached_generation  # noqa: E402


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "-"


def measure(threads: int, device: torch.device, repeats: int, lengths) -> list[dict]:
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = ref.DecoderOnlyTransformer(**CACHE_MODEL).to(device).eval()
    prompt = torch.randint(0, CACHE_MODEL["vocab_size"], (1, CACHE_PROMPT),
                           generator=torch.Generator().manual_seed(0)).to(device)
    time_cached_generation(model, prompt, (2, 8), 1, ref.generate, ref.generate_cached)  # warm-up

    def synced(generate):
        def run(*args, **kwargs):
            out = generate(*args, **kwargs)
            if device.type == "cuda":
                torch.cuda.synchronize()
            return out
        return run

    return time_cached_generation(model, prompt, lengths, repeats, synced(ref.generate), synced(ref.generate_cached))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, torch.get_num_threads()],
                        help="thread counts to measure, in turn (default: 1 and PyTorch's default)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(CACHE_LENGTHS))
    args = parser.parse_args()
    device = torch.device(args.device)
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {where}; torch {torch.__version__}, CPU kernels "
          f"{torch.backends.cpu.get_cpu_capability()}; load before {load()}; {datetime.datetime.now():%Y-%m-%d %H:%M}")
    print(f"command: python bench/kv_cache.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"model: DecoderOnlyTransformer({', '.join(f'{k}={v}' for k, v in CACHE_MODEL.items())}), untrained, seed 0; "
          f"prompt of {CACHE_PROMPT} tokens; greedy; {args.repeats} runs each, taking turns")
    print()
    print("| new tokens | threads | generate s (median; runs) | generate_cached s (median; runs) | speed-up | same tokens |")
    print("| --- | --- | --- | --- | --- | --- |")
    for threads in dict.fromkeys(args.threads):
        for row in measure(threads, device, args.repeats, args.lengths):
            runs = {k: ", ".join(f"{s:.3f}" for s in v) for k, v in row["runs"].items()}
            print(f"| {row['new']} | {threads} | {row['generate']:.3f} ({runs['generate']}) | "
                  f"{row['generate_cached']:.3f} ({runs['generate_cached']}) | "
                  f"{row['generate'] / row['generate_cached']:.1f} | {'yes' if row['same'] else 'no'} |", flush=True)
    print()
    print(f"load after {load()}")


if __name__ == "__main__":
    main()

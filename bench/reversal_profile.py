"""Benchmark: where one step of the reversal training (notebook 06) spends its time, by PyTorch's profiler.

Usage: python bench/reversal_profile.py [--device cpu] [--threads 2] [--steps 100]
Profiles the course's own loop, the reference `train_reversal`, training the reference DecoderOnlyTransformer at the
notebook's configuration for the device (vocab 10, half length 6, d_model 32, 4 heads, d_ff 64, 2 layers; batch 64 and
Adam lr 5e-3 on a CPU, batch 1024 and lr 1e-2 on a GPU; --config picks the other one).
Nothing in the loop is rewritten: the profiler marks the batch function and the model's forward pass from outside
(a stand-in batch function that calls the real one, and module hooks), and sorts every other top-level operation by
what it is (the copy to the device, the loss, backward, Adam, reading the losses back, every 50 steps). What no operation
accounts for is Python: the loop itself and the progress bar. On CUDA it also counts the kernels launched and the
time the GPU was busy, and how often the CPU waited for the GPU (PyTorch's sync debug mode).

The first call in a fresh process pays for starting up: on any device the first optimizer made in a process imports
most of torch.optim's machinery (about 1 s on a CPU VM), and on CUDA the context, cuBLAS and the kernels load. It is
timed on its own ("first 5 steps"); then a warm run of --steps is timed, and another one profiled.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import platform
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from autograder.authoring.reference import reversal as ref  # noqa: E402
from reversal import CONFIG, HALF, SETTINGS  # noqa: E402  (bench/reversal.py: the notebook's configuration)

PHASES = ["batch (reversal_batch)", "to the device", "forward", "loss", "zero_grad", "backward", "Adam step",
          "loss read (every 50 steps)", "other operations", "Python (loop, progress bar)"]


def phase_of(name: str) -> str:
    """The phase a top-level profiler event belongs to."""
    if name in ("batch", "forward"):
        return {"batch": PHASES[0], "forward": PHASES[2]}[name]
    if name.startswith("Optimizer.step"):
        return "Adam step"
    if name.startswith("Optimizer.zero_grad"):
        return "zero_grad"
    if name.startswith("autograd::") or "Backward" in name:
        return "backward"
    if name in ("aten::item", "aten::_local_scalar_dense", "aten::stack"):
        return "loss read (every 50 steps)"
    if name in ("aten::to", "aten::_to_copy", "aten::copy_"):
        return "to the device"
    if any(part in name for part in ("cross_entropy", "log_softmax", "nll_loss")):
        return "loss"
    return "other operations"


def marked(model: torch.nn.Module):
    """Hooks that wrap every forward pass of `model` in a profiler range named "forward"; returns their handles."""
    open_ranges = []

    def before(module, args):
        open_ranges.append(record_function("forward").__enter__())

    def after(module, args, output):
        open_ranges.pop().__exit__(None, None, None)

    return [model.register_forward_pre_hook(before), model.register_forward_hook(after)]


def batch_marked(real_batch):
    """`real_batch` (the reference reversal_batch), each call wrapped in a profiler range named "batch"."""
    def reversal_batch(batch_size, half_len, vocab_size, generator=None):
        with record_function("batch"):
            return real_batch(batch_size, half_len, vocab_size, generator=generator)
    return reversal_batch


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--config", choices=sorted(SETTINGS), help="the notebook's settings for this kind of device "
                        "(default: the device's own)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    on_cuda = device.type == "cuda"
    config = args.config or ("cuda" if on_cuda else "cpu")
    batch, lr = SETTINGS[config]["batch"], SETTINGS[config]["lr"]

    torch.manual_seed(0)
    model = ref.DecoderOnlyTransformer(**CONFIG, max_len=2 * HALF)
    started = time.perf_counter()
    ref.train_reversal(model, 5, batch, HALF, CONFIG["vocab_size"], lr, device=device)
    synchronize(device)
    first = time.perf_counter() - started

    started = time.perf_counter()
    ref.train_reversal(model, args.steps, batch, HALF, CONFIG["vocab_size"], lr, device=device)
    synchronize(device)
    plain = (time.perf_counter() - started) / args.steps

    real_batch = ref.reversal_batch
    ref.reversal_batch = batch_marked(real_batch)  # the loop looks it up by name, in its module
    handles = marked(model)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_cuda else [])
    try:
        with warnings.catch_warnings(record=True) as waits, profile(activities=activities) as profiler:
            warnings.simplefilter("always")
            if on_cuda:
                torch.cuda.set_sync_debug_mode("warn")
            started = time.perf_counter()
            ref.train_reversal(model, args.steps, batch, HALF, CONFIG["vocab_size"], lr, device=device)
            synchronize(device)
            profiled = (time.perf_counter() - started) / args.steps
            if on_cuda:
                torch.cuda.set_sync_debug_mode("default")
    finally:
        ref.reversal_batch = real_batch
        for handle in handles:
            handle.remove()

    per_phase = collections.Counter()
    aten_calls, kernels, gpu_busy = 0, 0, 0.0
    for event in profiler.events():
        if event.device_type == DeviceType.CUDA:
            kernels += 1
            gpu_busy += getattr(event, "device_time", 0.0) / 1e6  # microseconds -> seconds
            continue
        if event.name.startswith("aten::"):
            aten_calls += 1
        if event.cpu_parent is None:
            per_phase[phase_of(event.name)] += event.cpu_time_total / 1e6
    per_phase["Python (loop, progress bar)"] = max(0.0, profiled * args.steps - sum(per_phase.values()))
    syncs = sum("synchroniz" in str(w.message).lower() for w in waits)

    where = (torch.cuda.get_device_name(device) if on_cuda
             else f"{platform.processor() or platform.machine()}, {args.threads} CPU threads")
    print(f"\n{where}, torch {torch.__version__}, {datetime.date.today()}: the reference train_reversal, "
          f"{args.steps} steps, {config} settings (batch {batch}, lr {lr:g})")
    print(f"first 5 steps in a fresh process: {first:.2f} s; then {1e3 * plain:.2f} ms a step "
          f"({1e3 * profiled:.2f} ms under the profiler)")
    print(f"per step: {aten_calls / args.steps:.0f} aten operations"
          + (f", {kernels / args.steps:.0f} GPU kernels, the GPU busy {1e3 * gpu_busy / args.steps:.2f} ms, "
             f"{syncs / args.steps:.1f} waits for the GPU" if on_cuda else ""))
    print("\n| phase | ms a step | share |\n| --- | --- | --- |")
    total = sum(per_phase.values())
    for phase in PHASES:
        print(f"| {phase} | {1e3 * per_phase[phase] / args.steps:.2f} | {per_phase[phase] / total:.0%} |")


if __name__ == "__main__":
    main()

"""Training a language model on windows of token ids: the loop notebook 07 runs, with a progress bar.

It keeps the weights of the best validation score it has seen and ends with them, so a run that starts to
overfit (validation getting worse while training keeps improving) never ends worse than its best; it can
also stop early, once validation has stopped improving.

On a GPU the loop never makes the CPU wait for the GPU at every step: a batch travels from page-locked memory
without blocking, and the losses stay on the device until they are read together, about twice a second (for
the progress bar), at each validation and at the end. So the CPU queues the next steps while the GPU computes.
"""
from __future__ import annotations

import math
import time
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from course.progress_bar import progress

READ_EVERY_SECONDS = 0.5  # how often the losses still on the device are read back (each read waits for the GPU)


def _to_device(windows: torch.Tensor, device: torch.device) -> torch.Tensor:
    """windows, on `device`. To CUDA from page-locked memory without blocking: the CPU does not wait for the copy,
    nor for the steps already queued (a copy from ordinary memory waits for both)."""
    if device.type == "cuda":
        return windows.pin_memory().to(device, non_blocking=True)
    return windows.to(device)


def _copy_of_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every parameter and buffer, on the model's own device (nothing crosses to the host)."""
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def _estimate(steps: int, seconds: float, max_steps: int, minutes: float | None) -> str:
    """One line: how long the first `steps` steps took and, at that pace, all `max_steps` (or the time budget)."""
    total = seconds / steps * max_steps
    line = (f"The first {steps} steps took {seconds:.0f} s: at this pace the {max_steps:,} planned steps take about "
            f"{_duration(total)} on this machine, validation not counted.")
    if minutes is not None and total > 60 * minutes:
        line += f" The {minutes:g}-minute budget ends training before that."
    return line


def _duration(seconds: float) -> str:
    """'1 second', '40 seconds', '12 minutes', '1.5 hours': rounded as a person would say it."""
    if seconds < 90:
        whole = max(1, round(seconds))
        return f"{whole} second{'s' if whole > 1 else ''}"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} minutes"
    return f"{seconds / 3600:.1f} hours"


def train_language_model(model: nn.Module, train_chunks: torch.Tensor, val_chunks: torch.Tensor,
                         evaluate: Callable[[nn.Module, torch.Tensor, int], float], *, max_steps: int,
                         minutes: float | None = None, batch_size: int = 16, lr: float = 3e-3,
                         warmup_steps: int = 100, eval_every: int = 100, eval_windows: int = 200,
                         device: torch.device | None = None, seed: int = 0,
                         after_step: Callable[[int, float], None] | None = None,
                         weight_decay: float = 0.01, keep_best: bool = True, patience: int | None = None,
                         after_eval: Callable[[int, float], None] | None = None,
                         estimate_after: int | None = 20) -> dict:
    """Train `model` for next-token prediction on random batches of training windows.

    train_chunks, val_chunks: LongTensors (N, seq_len); each step draws batch_size training windows w and
    trains on w[:, :-1] -> w[:, 1:] with AdamW (weight_decay as given; the learning rate rises linearly over
    warmup_steps, then stays at lr). Every eval_every steps, and at the end, `evaluate(model, windows, batch_size)`
    scores the first eval_windows validation windows. Training stops after max_steps, the planned steps; sooner
    when `minutes` of training time are spent (None: no time limit), when `patience` validations in a row have not
    beaten the best score (None never stops early), or on a KeyboardInterrupt (the notebook's stop button), which
    ends training but not the function. Each early end prints one line that says how many of the planned steps ran.
    After `estimate_after` steps (None: never) one printed line says how long the first steps took and how long
    all the planned steps will take at that pace.

    With keep_best (the default) the weights of the best validation score are copied when it is reached, and
    restored at the end when a later step scored worse (one printed line says so): the model comes back with
    the best weights the run saw, never worse than its best. keep_best=False leaves the last step's weights.

    `after_step(step, training_seconds)`, when given, is called after every step, and `after_eval(step, score)`
    after every validation; their time, like validation's, does not count as training time. The losses of the
    latest steps are read from the device in groups, so history["train"] is complete after every validation and
    at the end, not after every step.

    Returns a history: {"step": [...], "train": [...]} (the loss of every step), {"eval_step": [...],
    "val": [...]} (the validation scores, on "eval_windows" windows), "best_step" and "best_val" (the best of
    them: the weights the model ends with under keep_best), "restored" (True when those weights were put back),
    "stopped_early" (True when patience ended the run), "interrupted" (True when a KeyboardInterrupt did),
    "planned_steps" (max_steps), "seconds" of training (validation excluded), "tokens" trained on and
    "tokens_per_second".
    """
    if patience is not None and patience < 1:
        raise ValueError(f"patience counts validations without improvement: at least 1, or None (got {patience})")
    if device is not None:
        model.to(device)
    model_device = next(model.parameters()).device
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    draw = torch.Generator().manual_seed(seed)
    held_out = val_chunks[:eval_windows]
    history = {"step": [], "train": [], "eval_step": [], "val": [], "eval_windows": len(held_out), "seconds": 0.0,
               "tokens": 0, "best_step": None, "best_val": math.nan, "restored": False, "stopped_early": False,
               "interrupted": False, "planned_steps": max_steps}
    best_weights = None
    since_best = 0  # validations in a row that did not beat the best score

    def validate(step: int) -> float:
        nonlocal best_weights, since_best
        score = evaluate(model, held_out, batch_size)
        model.train()
        history["eval_step"].append(step)
        history["val"].append(score)
        if history["best_step"] is None or score < history["best_val"]:
            history["best_step"], history["best_val"], since_best = step, score, 0
            if keep_best:
                best_weights = _copy_of_weights(model)
        else:
            since_best += 1
        if after_eval is not None:
            after_eval(step, score)
        return score

    unread: list[torch.Tensor] = []  # the latest steps' losses, still on the model's device
    last_read = time.perf_counter()

    def read_losses() -> None:
        nonlocal last_read
        if unread:
            history["train"].extend(torch.stack(unread).tolist())  # one wait for the device, not one per step
            unread.clear()
        last_read = time.perf_counter()

    bar = progress(max_steps, "training")
    val_loss = float("nan")
    started = time.perf_counter()
    try:
        for step in bar:
            for group in optimizer.param_groups:
                group["lr"] = lr * min(1.0, (step + 1) / max(1, warmup_steps))
            windows = _to_device(train_chunks[torch.randint(len(train_chunks), (batch_size,), generator=draw)],
                                 model_device)
            inputs, targets = windows[:, :-1], windows[:, 1:]
            logits = model(inputs)  # (B, seq_len - 1, vocab_size)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())  # (B * (seq_len - 1), V) vs (B * (seq_len - 1),)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            history["step"].append(step + 1)
            unread.append(loss.detach())
            history["tokens"] += targets.numel()
            due = (step + 1) % eval_every == 0
            read = due or time.perf_counter() - last_read >= READ_EVERY_SECONDS
            if read:
                read_losses()  # waits for the queued steps, so that they count as training time
            paused = time.perf_counter()
            if step + 1 == estimate_after and max_steps > estimate_after:
                if not read:
                    read_losses()
                    paused = time.perf_counter()
                bar.write(_estimate(step + 1, paused - started, max_steps, minutes))
            if due:
                val_loss = validate(step + 1)
            if after_step is not None:
                after_step(step + 1, paused - started)
            started += time.perf_counter() - paused  # validation and the hooks are not training time
            if read:  # the validation loss once there is one
                shown = {"train": f"{history['train'][-1]:.3f}"} | ({} if math.isnan(val_loss) else {"val": f"{val_loss:.3f}"})
                bar.set_postfix(shown, refresh=False)
            if patience is not None and since_best >= patience:
                history["stopped_early"] = True
                print(f"Stopped early after {step + 1} of the {max_steps:,} planned steps: validation has not improved "
                      f"for {since_best} evaluations (best {history['best_val']:.3f} at step {history['best_step']}).")
                break
            if minutes is not None and time.perf_counter() - started > 60 * minutes and step + 1 < max_steps:
                print(f"Stopped after {step + 1} of the {max_steps:,} planned steps: the {minutes:g}-minute budget is spent.")
                break
    except KeyboardInterrupt:
        history["interrupted"] = True
        del history["step"][len(history["train"]) + len(unread):]  # a step cut short before its loss was kept
        model.train()
        print(f"Interrupted after {len(history['step'])} of the {max_steps:,} planned steps: the model keeps what it "
              f"has learned so far.")
    read_losses()
    history["seconds"] = time.perf_counter() - started
    if history["step"] and (not history["eval_step"] or history["eval_step"][-1] != history["step"][-1]):
        validate(history["step"][-1])
    bar.close()
    if keep_best and best_weights is not None and history["best_step"] != history["eval_step"][-1]:
        model.load_state_dict(best_weights)
        history["restored"] = True
        print(f"Kept the best weights, from step {history['best_step']} (validation {history['best_val']:.3f}); "
              f"the last step's weights scored {history['val'][-1]:.3f}.")
    history["tokens_per_second"] = history["tokens"] / max(history["seconds"], 1e-9)
    return history

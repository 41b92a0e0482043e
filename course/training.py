"""Training a language model on windows of token ids: the loop notebook 07 runs, with a progress bar."""
from __future__ import annotations

import time
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from course.progress_bar import progress


def train_language_model(model: nn.Module, train_chunks: torch.Tensor, val_chunks: torch.Tensor,
                         evaluate: Callable[[nn.Module, torch.Tensor, int], float], *, max_steps: int,
                         minutes: float | None = None, batch_size: int = 16, lr: float = 3e-3,
                         warmup_steps: int = 100, eval_every: int = 100, eval_windows: int = 200,
                         device: torch.device | None = None, seed: int = 0,
                         after_step: Callable[[int, float], None] | None = None) -> dict:
    """Train `model` for next-token prediction on random batches of training windows.

    train_chunks, val_chunks: LongTensors (N, seq_len); each step draws batch_size training windows w and
    trains on w[:, :-1] -> w[:, 1:] with AdamW (the learning rate rises linearly over warmup_steps, then
    stays at lr). Every eval_every steps, and at the end, `evaluate(model, windows, batch_size)` scores the
    first eval_windows validation windows. Training stops after max_steps or after `minutes` of wall time,
    whichever comes first. `after_step(step, training_seconds)`, when given, is called after every step; its time,
    like validation's, does not count as training time.

    Returns a history: {"step": [...], "train": [...]} (the loss of every step), {"eval_step": [...],
    "val": [...]} (the validation scores, on "eval_windows" windows), "seconds" of training (validation
    excluded), "tokens" trained on and "tokens_per_second".
    """
    if device is not None:
        model.to(device)
    model_device = next(model.parameters()).device
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    draw = torch.Generator().manual_seed(seed)
    held_out = val_chunks[:eval_windows]
    history = {"step": [], "train": [], "eval_step": [], "val": [], "eval_windows": len(held_out), "seconds": 0.0,
               "tokens": 0}

    def validate(step: int) -> float:
        score = evaluate(model, held_out, batch_size)
        model.train()
        history["eval_step"].append(step)
        history["val"].append(score)
        return score

    bar = progress(max_steps, "training")
    val_loss = float("nan")
    started = time.perf_counter()
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / max(1, warmup_steps))
        windows = train_chunks[torch.randint(len(train_chunks), (batch_size,), generator=draw)].to(model_device)
        inputs, targets = windows[:, :-1], windows[:, 1:]
        logits = model(inputs)  # (B, seq_len - 1, vocab_size)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())  # (B * (seq_len - 1), V) vs (B * (seq_len - 1),)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history["step"].append(step + 1)
        history["train"].append(loss.item())
        history["tokens"] += targets.numel()
        paused = time.perf_counter()
        if (step + 1) % eval_every == 0:
            val_loss = validate(step + 1)
        if after_step is not None:
            after_step(step + 1, paused - started)
        started += time.perf_counter() - paused  # validation and the hook are not training time
        bar.set_postfix(train=f"{history['train'][-1]:.3f}", val=f"{val_loss:.3f}", refresh=False)
        if minutes is not None and time.perf_counter() - started > 60 * minutes:
            print(f"Stopped after {step + 1} steps: the {minutes:g}-minute budget is spent.")
            break
    history["seconds"] = time.perf_counter() - started
    if history["step"] and (not history["eval_step"] or history["eval_step"][-1] != history["step"][-1]):
        validate(history["step"][-1])
    bar.close()
    history["tokens_per_second"] = history["tokens"] / max(history["seconds"], 1e-9)
    return history

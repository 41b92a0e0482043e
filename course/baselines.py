"""Counting baselines for a language model: what a unigram and a bigram model score on the same split.

Both are fitted on the training token ids and scored on the validation ids, in nats per predicted token
(the mean negative log-probability of each validation token after the first), the unit `evaluate` reports.
"""
from __future__ import annotations

import torch


def unigram_probabilities(train_ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(vocab_size,) token frequencies in `train_ids` with add-one smoothing, so no token has probability 0."""
    counts = torch.bincount(train_ids.flatten().cpu(), minlength=vocab_size).double() + 1.0
    return counts / counts.sum()


def _scored(val_ids: torch.Tensor, within_windows: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(previous, token) pairs of the validation tokens that are scored: every token after the very first of the
    flattened ids, or, `within_windows`, tokens 1 .. of each window `(N, seq_len)` only, as a model that starts
    every window afresh is scored."""
    val = val_ids.cpu()
    if within_windows:
        return val[:, :-1].flatten(), val[:, 1:].flatten()
    flat = val.flatten()
    return flat[:-1], flat[1:]


def unigram_loss(train_ids: torch.Tensor, val_ids: torch.Tensor, vocab_size: int, within_windows: bool = False) -> float:
    """Nats per token of the add-one unigram model of `train_ids` on the scored tokens of `val_ids` (each token on
    its own): `val_ids[1:]` flattened, or each window's tokens after its first (`within_windows`)."""
    p = unigram_probabilities(train_ids, vocab_size)
    return -p[_scored(val_ids, within_windows)[1]].log().mean().item()


def bigram_loss(train_ids: torch.Tensor, val_ids: torch.Tensor, vocab_size: int, weight: float = 0.7,
                within_windows: bool = False) -> float:
    """Nats per token of an interpolated bigram model on `val_ids`: each scored token (after the first of the
    flattened ids, or, `within_windows`, after the first of each window) gets
    weight * P(token | previous token) + (1 - weight) * P_unigram(token), with P(b | a) the share of the
    training pairs starting with a that continue with b (0 when a never starts a pair)."""
    train = train_ids.flatten().cpu()
    before, after = _scored(val_ids, within_windows)
    unigram = unigram_probabilities(train, vocab_size)
    pairs, pair_counts = torch.unique(train[:-1] * vocab_size + train[1:], return_counts=True)  # a * V + b, sorted
    starts = torch.bincount(train[:-1], minlength=vocab_size).double()
    wanted = before * vocab_size + after
    where = torch.searchsorted(pairs, wanted).clamp(max=len(pairs) - 1)
    seen = torch.where(pairs[where] == wanted, pair_counts[where], 0).double()
    previous = starts[before]
    conditional = torch.where(previous > 0, seen / previous.clamp(min=1.0), torch.zeros_like(seen))
    probability = weight * conditional + (1.0 - weight) * unigram[after]
    return -probability.log().mean().item()

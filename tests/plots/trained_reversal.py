"""Notebook 06's two reversal models, trained once per test run and shared by the files that read them
(tests/plots/test_reversal_lessons.py and test_figures.py): the same seed-0, 1000-step training on one thread that
06's cells run on a CPU, which took each of those files 10 to 30 s of a worker."""
from __future__ import annotations

import torch

from autograder.authoring.reference.transformer import DecoderOnlyTransformer

VOCAB, HALF = 10, 6
CONFIG = dict(vocab_size=VOCAB, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=2 * HALF)
STEPS, BATCH, LR = 1000, 64, 5e-3  # the notebook's training on a CPU


class NoMaskTransformer(DecoderOnlyTransformer):
    """06's model with the causal mask taken out, as its leak_run cell defines it."""

    def forward(self, tokens):
        hidden = self.embedding(tokens)
        for layer in self.blocks:
            hidden = layer(hidden, mask=None)
        return self.lm_head(self.norm_final(hidden))


KINDS = {"causal mask": DecoderOnlyTransformer, "no mask": NoMaskTransformer}


def untrained(label: str) -> torch.nn.Module:
    """The model `label` as 06 builds it (seed 0), before training."""
    torch.manual_seed(0)
    return KINDS[label](**CONFIG)


def train_both() -> dict[str, dict]:
    """Each model trained as 06's cells train it on a CPU (seed 0, 1000 steps): label -> its state_dict."""
    from autograder.authoring.reference.reversal import train_reversal

    states = {}
    for label in KINDS:
        model = untrained(label)  # the seed also fixes the training batches drawn after it
        train_reversal(model, STEPS, batch_size=BATCH, half_len=HALF, vocab_size=VOCAB, lr=LR)
        states[label] = model.state_dict()
    return states


def trained(states: dict[str, dict], label: str) -> torch.nn.Module:
    """A fresh copy of the trained model `label`, in training mode as train_reversal leaves it."""
    model = untrained(label)
    model.load_state_dict(states[label])
    return model.train()

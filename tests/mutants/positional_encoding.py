"""Mutants and variants for notebook 01."""
import math

import torch
from torch import nn

from autograder.mistakes.positional_encoding import EmbeddingWithTable
from autograder.reference.positional_encoding import positional_encoding as reference_pe


def pe_base_1000(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    angle = position / 1000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


def pe_even_d_model_only(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    angle = position / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(max_len, -1)  # odd: one column too many


def pe_transposed(max_len, d_model):
    return reference_pe(d_model, max_len).T if max_len != d_model else reference_pe(max_len, d_model).T


def pe_float64(max_len, d_model):
    return reference_pe(max_len, d_model).double()


def pe_loops(max_len, d_model):
    table = torch.zeros(max_len, d_model)
    for p in range(max_len):
        for col in range(d_model):
            frequency = 1 / 10000 ** ((col - col % 2) / d_model)
            table[p, col] = math.sin(p * frequency) if col % 2 == 0 else math.cos(p * frequency)
    return table


def pe_exp_log(max_len, d_model):
    position = torch.arange(max_len).float().unsqueeze(1)
    frequency = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)[:, : d_model // 2]
    return table


class embedding_no_length_check(EmbeddingWithTable):
    def forward(self, tokens):
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.shape[-1]]


class embedding_table_not_a_buffer(nn.Module):  # the table stays on the CPU in float32 whatever .to() says
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.d_model, self.max_len = d_model, max_len
        self.table = reference_pe(max_len, d_model)

    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError("too long")
        out = self.embed(tokens) * math.sqrt(self.d_model) + self.table[: tokens.shape[-1]].to(tokens.device)
        return out.float()


class embedding_persistent_buffer(EmbeddingWithTable):  # correct: the table saved in the state dict as well
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__(vocab_size, d_model, max_len)
        self.register_buffer("pe", reference_pe(max_len, d_model))

    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError(f"sequence longer than max_len={self.max_len}")
        return self.embed(tokens) * self.d_model ** 0.5 + self.pe[: tokens.shape[-1]]


MUTANTS = [
    ("positional_encoding", pe_base_1000),
    ("positional_encoding", pe_even_d_model_only),
    ("positional_encoding", pe_transposed),
    ("positional_encoding", pe_float64),
    ("TokenAndPositionEmbedding", embedding_no_length_check),
    ("TokenAndPositionEmbedding", embedding_table_not_a_buffer),
]

VARIANTS = [
    ("positional_encoding", pe_loops),
    ("positional_encoding", pe_exp_log),
    ("TokenAndPositionEmbedding", embedding_persistent_buffer),
]

"""Known mistakes in notebook 01."""
import math

import torch
from torch import nn

from autograder.authoring.mistakes import mistake
from autograder.authoring.reference.positional_encoding import positional_encoding as reference_pe


def _table(max_len, d_model, *, first=torch.sin, second=torch.cos, exponent=lambda col, d: col / d,
           start=0, interleave=True):
    """A sinusoid table with one detail changed; `exponent(col, d)` gives the power of 10000."""
    position = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]
    cols = torch.arange(d_model, dtype=torch.float64)
    pair = 2 * torch.div(cols, 2, rounding_mode="floor")
    if interleave:
        angle = position / 10000 ** exponent(pair, d_model)
        is_first = (cols % 2 == 0)
    else:
        half = math.ceil(d_model / 2)
        pair = 2 * torch.where(cols < half, cols, cols - half)
        angle = position / 10000 ** exponent(pair, d_model)
        is_first = cols < half
    return torch.where(is_first, first(angle), second(angle)).float()


@mistake("positional_encoding", "sine and cosine are swapped: even columns 0, 2, 4, ... hold the sine, odd columns the cosine.")
def sin_cos_swapped(max_len, d_model):
    return _table(max_len, d_model, first=torch.cos, second=torch.sin)


@mistake("positional_encoding", "the exponent is half what it should be: column pair i uses 10000^(2i/d_model), "
         "and 2i is the even column's index (0, 2, 4, ...), not the pair number (0, 1, 2, ...).")
def exponent_halved(max_len, d_model):
    return _table(max_len, d_model, exponent=lambda col, d: (col / 2) / d)


@mistake("positional_encoding", "the exponent is twice what it should be: for columns 2i and 2i+1 the power is "
         "2i/d_model; you multiplied the even column index, which already is 2i, by 2 again.")
def exponent_doubled(max_len, d_model):
    return _table(max_len, d_model, exponent=lambda col, d: 2 * col / d)


@mistake("positional_encoding", "the cosine column 2i+1 uses its own index in the exponent; both columns of a pair "
         "share the frequency 1/10000^(2i/d_model).")
def cosine_uses_own_index(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float64)[:, None]
    cols = torch.arange(d_model, dtype=torch.float64)
    angle = position / 10000 ** (cols / d_model)
    return torch.where(cols % 2 == 0, torch.sin(angle), torch.cos(angle)).float()


@mistake("positional_encoding", "sines and cosines are in two blocks (all sines, then all cosines); the encoding "
         "interleaves them: column 2i is a sine, column 2i+1 the cosine of the same angle.")
def halves_not_interleaved(max_len, d_model):
    return _table(max_len, d_model, interleave=False)


@mistake("positional_encoding", "positions start at 1; the first position is p = 0, so row 0 is [0, 1, 0, 1, ...].")
def positions_from_one(max_len, d_model):
    return _table(max_len, d_model, start=1)


class EmbeddingWithTable(nn.Module):
    """The layer's correct __init__ (embedding and table buffer), for mistakes that differ in forward only."""

    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("pe", reference_pe(max_len, d_model), persistent=False)


@mistake("TokenAndPositionEmbedding", "the token embeddings are not scaled: multiply them by sqrt(d_model) "
         "before adding the positional encoding.")
class unscaled_embedding(EmbeddingWithTable):
    def forward(self, tokens):
        return self.embed(tokens) + self.pe[: tokens.shape[-1]]


@mistake("TokenAndPositionEmbedding", "the positional encoding is scaled too: only the token embeddings are "
         "multiplied by sqrt(d_model), then the encoding is added as it is.")
class both_scaled(EmbeddingWithTable):
    def forward(self, tokens):
        return (self.embed(tokens) + self.pe[: tokens.shape[-1]]) * math.sqrt(self.d_model)


@mistake("TokenAndPositionEmbedding", "the embeddings are divided by sqrt(d_model); they should be multiplied by it.")
class divided_by_sqrt(EmbeddingWithTable):
    def forward(self, tokens):
        return self.embed(tokens) / math.sqrt(self.d_model) + self.pe[: tokens.shape[-1]]


@mistake("TokenAndPositionEmbedding", "the embeddings are scaled by d_model; the paper scales by sqrt(d_model).")
class scaled_by_d_model(EmbeddingWithTable):
    def forward(self, tokens):
        return self.embed(tokens) * self.d_model + self.pe[: tokens.shape[-1]]


@mistake("TokenAndPositionEmbedding", "the encoding rows are taken from the end of the table; a sequence of "
         "length T gets rows 0 to T-1 (PE[:T]).")
class last_rows(EmbeddingWithTable):
    def forward(self, tokens):
        T = tokens.shape[-1]
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[self.max_len - T:]


def _rotation(k, d_model, dtype=None, device=None, *, exponent=lambda col, d: col / d, backwards=False,
              pairs="interleaved"):
    """A block rotation with one detail changed; `exponent(col, d)` gives the power of 10000 for even column col."""
    if d_model % 2:
        raise ValueError("odd d_model")
    half = d_model // 2
    frequency = 10000.0 ** -exponent(torch.arange(0, d_model, 2, dtype=torch.float64), d_model)
    angle = k * frequency if pairs != "same_angle" else torch.full((half,), float(k), dtype=torch.float64)
    cos, sin = torch.diag(torch.cos(angle)), torch.diag(torch.sin(angle))
    if backwards:
        sin = -sin
    rotation = torch.zeros(d_model, d_model, dtype=torch.float64)
    first, second = (slice(0, half), slice(half, None)) if pairs == "halves" else (slice(0, None, 2), slice(1, None, 2))
    rotation[first, first], rotation[first, second] = cos, sin
    rotation[second, first], rotation[second, second] = -sin, cos
    return rotation.to(dtype=torch.get_default_dtype() if dtype is None else dtype, device=device)


@mistake("offset_rotation", "each block is the transpose of what it should be, so it turns the wrong way: your matrix "
         "gives PE[p - k], not PE[p + k]. The new sine is cos(kw)·sin + sin(kw)·cos; the minus sign belongs in the "
         "cosine's row (lower left of each block).")
def rotation_backwards(k, d_model, dtype=None, device=None):
    return _rotation(k, d_model, dtype, device, backwards=True)


@mistake("offset_rotation", "the exponent is half what it should be: pair i has frequency 1/10000^(2i/d_model), where "
         "2i is its even column's index (0, 2, 4, ...), not the pair number (0, 1, 2, ...). Use the frequencies of "
         "your table.")
def rotation_exponent_halved(k, d_model, dtype=None, device=None):
    return _rotation(k, d_model, dtype, device, exponent=lambda col, d: (col / 2) / d)


@mistake("offset_rotation", "the blocks pair column i with column i + d_model/2 (the 'rotate half' layout some "
         "libraries use); in this course's table the sine and cosine of one frequency sit side by side, in columns "
         "2i and 2i+1, so each block sits on those rows and columns.")
def rotation_on_halves(k, d_model, dtype=None, device=None):
    return _rotation(k, d_model, dtype, device, pairs="halves")


@mistake("offset_rotation", "every pair is turned by the same angle k; pair i turns by k·w_i, k times its own "
         "frequency w_i = 1/10000^(2i/d_model).")
def rotation_same_angle(k, d_model, dtype=None, device=None):
    return _rotation(k, d_model, dtype, device, pairs="same_angle")

"""Dive into Deep Learning (Zhang, Lipton, Li, Smola), its PyTorch code: https://github.com/d2l-ai/d2l-en,
chapter_attention-mechanisms-and-transformers/ (attention-scoring-functions.md, multihead-attention.md,
self-attention-and-positional-encoding.md, transformer.md) and chapter_recurrent-neural-networks/text-sequence.md
(`Vocab`), as saved in d2l/torch.py; code under MIT-0.

Adapted to the exercise API only where it differs: masks (True = may attend) where d2l passes valid lengths, so
its `sequence_mask` compares positions with lengths and `masked_softmax` fills the masked scores; nn.Linear with a
bias for LazyLinear without one; dense1, dense2 are fc1, fc2; attention1, attention2, ffn are self_attn,
cross_attn, ff and the LayerNorms of its AddNorms norm1, norm2, norm3; pre-norm is added for norm_first=True and
final norms for it; `bmm` gets its 3-D inputs by folding the leading axes; the positional table is 2-D with the
max_len ValueError; `Vocab.build`, `encode`, `decode` call its constructor, `__getitem__` and `to_tokens`.
Its own choices stay: `masked_softmax` with -1e6, `repeat_interleave` of the mask over heads, `transpose_qkv` /
`transpose_output`, `X[~mask] = value`, float32 `torch.pow` frequencies, AddNorm's nn.LayerNorm, the
alphabetically sorted vocabulary.
"""
import collections
import math

import torch
from torch import nn

from tests.wild import Student, mistake

SOURCE = "https://github.com/d2l-ai/d2l-en (chapter_attention-mechanisms-and-transformers, d2l/torch.py)"
IMPORTS = "import collections\nimport math\n\nimport torch\nfrom torch import nn"


# d2l-en, self-attention-and-positional-encoding.md: the table `P` of `PositionalEncoding.__init__`.
def positional_encoding(max_len, d_model):
    P = torch.zeros((max_len, d_model))
    X = torch.arange(max_len, dtype=torch.float32).reshape(
        -1, 1) / torch.pow(10000, torch.arange(
        0, d_model, 2, dtype=torch.float32) / d_model)
    P[:, 0::2] = torch.sin(X)
    P[:, 1::2] = torch.cos(X)
    return P


# d2l-en, transformer.md: `TransformerEncoder`'s embedding, `self.pos_encoding(self.embedding(X) *
# math.sqrt(self.d_model))`, with `PositionalEncoding.forward` (its P kept as a plain attribute, moved to X's
# device in forward; the dropout left out; the max_len ValueError added).
class TokenAndPositionEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.P = positional_encoding(max_len, d_model)

    def forward(self, X):
        if X.shape[-1] > self.max_len:
            raise ValueError(f"{X.shape[-1]} steps exceed max_len={self.max_len}")
        X = self.embed(X) * math.sqrt(self.d_model)
        X = X + self.P[:X.shape[-2], :].to(X.device)
        return X


# d2l-en, attention-scoring-functions.md: `DotProductAttention.forward` without valid_lens (bmm on the leading axes
# folded into one).
def attention(queries, keys, values):
    d = queries.shape[-1]
    batch = queries.shape[:-2]
    queries = queries.reshape(-1, *queries.shape[-2:])
    keys = keys.reshape(-1, *keys.shape[-2:])
    values = values.reshape(-1, *values.shape[-2:])
    # Swap the last two dimensions of keys with keys.transpose(1, 2)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
    attention_weights = nn.functional.softmax(scores, dim=-1)
    output = torch.bmm(attention_weights, values)
    return output.reshape(*batch, *output.shape[1:]), attention_weights.reshape(*batch, *scores.shape[1:])


# d2l-en, transformer.md: `TransformerDecoderBlock`'s training-time dec_valid_lens,
# `torch.arange(1, num_steps + 1)`, as a mask by `_sequence_mask`'s comparison (the first T_k - T_q keys are an
# earlier prefix every query sees).
def causal_mask(T_q, T_k=None, device=None):
    T_k = T_q if T_k is None else T_k
    dec_valid_lens = torch.arange(1, T_q + 1, device=device) + (T_k - T_q)
    return torch.arange(T_k, dtype=torch.float32, device=device)[None, :] < dec_valid_lens[:, None]


# d2l-en, attention-scoring-functions.md: `masked_softmax`'s `_sequence_mask`, the mask of valid_len, with the
# axis of queries.
def padding_mask(lengths, T):
    mask = torch.arange((T), dtype=torch.float32,
                        device=lengths.device)[None, :] < lengths[:, None]
    return mask.unsqueeze(1)


# d2l-en, attention-scoring-functions.md: `masked_softmax`, the API's mask in place of valid_lens.
def masked_softmax(X, mask):
    """Perform softmax operation by masking elements on the last axis."""
    if mask is None:
        return nn.functional.softmax(X, dim=-1)
    # On the last axis, replace masked elements with a very large negative
    # value, whose exponentiation outputs 0
    X = X.clone()
    X[~mask.expand_as(X)] = -1e6
    return nn.functional.softmax(X, dim=-1)


# d2l-en, attention-scoring-functions.md: `DotProductAttention.forward` (bmm on the leading axes folded into one).
def masked_attention(queries, keys, values, mask=None):
    d = queries.shape[-1]
    batch = torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2],
                                   () if mask is None else mask.shape[:-2])
    queries = queries.expand(*batch, *queries.shape[-2:]).reshape(-1, *queries.shape[-2:])
    keys = keys.expand(*batch, *keys.shape[-2:]).reshape(-1, *keys.shape[-2:])
    values = values.expand(*batch, *values.shape[-2:]).reshape(-1, *values.shape[-2:])
    if mask is not None:
        mask = mask.expand(*batch, queries.shape[1], keys.shape[1]).reshape(-1, queries.shape[1], keys.shape[1])
    # Swap the last two dimensions of keys with keys.transpose(1, 2)
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
    attention_weights = masked_softmax(scores, mask)
    output = torch.bmm(attention_weights, values)
    return output.reshape(*batch, *output.shape[1:]), attention_weights.reshape(*batch, *scores.shape[1:])


# d2l-en, attention-scoring-functions.md: `DotProductAttention`.
class DotProductAttention(nn.Module):
    """Scaled dot product attention."""
    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    # Shape of queries: (batch_size, no. of queries, d)
    # Shape of keys: (batch_size, no. of key-value pairs, d)
    # Shape of values: (batch_size, no. of key-value pairs, value dimension)
    # Shape of mask: (batch_size, no. of queries, no. of key-value pairs)
    def forward(self, queries, keys, values, mask=None):
        d = queries.shape[-1]
        # Swap the last two dimensions of keys with keys.transpose(1, 2)
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        self.attention_weights = masked_softmax(scores, mask)
        return torch.bmm(self.dropout(self.attention_weights), values)


# d2l-en, multihead-attention.md: `MultiHeadAttention` (nn.Linear with a bias for LazyLinear; a mask repeated for
# every head as d2l repeats valid_lens; the attention weights returned).
class MultiHeadAttention(nn.Module):
    """Multi-head attention."""
    def __init__(self, d_model, n_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError("d_model must be a multiple of n_heads")
        self.n_heads = n_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, queries, x_kv=None, mask=None):
        keys = queries if x_kv is None else x_kv
        values = keys
        batch_size, num_queries, num_kv = queries.shape[0], queries.shape[1], keys.shape[1]
        # Shape of queries, keys, or values:
        # (batch_size, no. of queries or key-value pairs, d_model)
        # After transposing, shape of output queries, keys, or values:
        # (batch_size * n_heads, no. of queries or key-value pairs,
        # d_model / n_heads)
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))

        if mask is not None:
            if mask.dim() <= 3:
                # On axis 0, copy the first item (scalar or vector) for n_heads
                # times, then copy the next item, and so on
                mask = torch.repeat_interleave(mask.expand(batch_size, num_queries, num_kv),
                                               repeats=self.n_heads, dim=0)
            else:
                mask = mask.expand(batch_size, self.n_heads, num_queries, num_kv).reshape(
                    -1, num_queries, num_kv)

        # Shape of output: (batch_size * n_heads, no. of queries,
        # d_model / n_heads)
        output = self.attention(queries, keys, values, mask)
        # Shape of output_concat: (batch_size, no. of queries, d_model)
        output_concat = self.transpose_output(output)
        weights = self.attention.attention_weights.reshape(batch_size, self.n_heads, num_queries, num_kv)
        return self.W_o(output_concat), weights

    def transpose_qkv(self, X):
        """Transposition for parallel computation of multiple attention heads."""
        # Shape of input X: (batch_size, no. of queries or key-value pairs,
        # d_model). Shape of output X: (batch_size, no. of queries or
        # key-value pairs, n_heads, d_model / n_heads)
        X = X.reshape(X.shape[0], X.shape[1], self.n_heads, -1)
        # Shape of output X: (batch_size, n_heads, no. of queries or key-value
        # pairs, d_model / n_heads)
        X = X.permute(0, 2, 1, 3)
        # Shape of output: (batch_size * n_heads, no. of queries or key-value
        # pairs, d_model / n_heads)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X):
        """Reverse the operation of transpose_qkv."""
        X = X.reshape(-1, self.n_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)


# d2l-en, transformer.md: `PositionWiseFFN` (dense1, dense2 -> fc1, fc2; nn.Linear for LazyLinear).
class FeedForward(nn.Module):
    """The positionwise feed-forward network."""
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(d_ff, d_model)

    def forward(self, X):
        return self.fc2(self.relu(self.fc1(X)))


# d2l-en, transformer.md: `TransformerEncoderBlock` with its `AddNorm`s as a method (their nn.LayerNorms named
# norm1, norm2; pre-norm added for norm_first=True).
class TransformerBlock(nn.Module):
    """The Transformer encoder block."""
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def addnorm(self, ln, X, sublayer):
        """The residual connection followed by layer normalization."""
        if self.norm_first:
            return X + self.dropout(sublayer(ln(X)))
        return ln(self.dropout(sublayer(X)) + X)

    def forward(self, X, mask=None):
        Y = self.addnorm(self.norm1, X, lambda X: self.attn(X, X, mask)[0])
        return self.addnorm(self.norm2, Y, self.ff)


# d2l-en, transformer.md: `TransformerDecoderBlock` (attention1, attention2, ffn -> self_attn, cross_attn, ff;
# AddNorms as a method, their LayerNorms norm1, norm2, norm3; the masks given rather than valid lengths, the
# causal one in evaluation too; no state cache; pre-norm added).
class DecoderBlock(nn.Module):
    # The i-th block in the Transformer decoder
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def addnorm(self, ln, X, sublayer):
        if self.norm_first:
            return X + self.dropout(sublayer(ln(X)))
        return ln(self.dropout(sublayer(X)) + X)

    def forward(self, X, memory, self_mask=None, memory_mask=None):
        enc_outputs, dec_mask, enc_mask = memory, self_mask, memory_mask
        # Self-attention
        Y = self.addnorm(self.norm1, X, lambda X: self.self_attn(X, X, dec_mask)[0])
        # Encoder-decoder attention. Shape of enc_outputs:
        # (batch_size, num_steps, d_model)
        Z = self.addnorm(self.norm2, Y, lambda Y: self.cross_attn(Y, enc_outputs, enc_mask)[0])
        return self.addnorm(self.norm3, Z, self.ff)


# d2l-en, transformer.md: `TransformerEncoder`, `TransformerDecoder` and `EncoderDecoder` in one (embedding and
# pos_encoding -> the course's TokenAndPositionEmbedding; dense -> lm_head; blks -> encoder, decoder; final norms
# added for pre-norm; valid lengths made masks).
class EncoderDecoderTransformer(nn.Module):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_encoder_layers,
                 n_decoder_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = TokenAndPositionEmbedding(src_vocab_size, d_model, max_len)
        self.tgt_embedding = TokenAndPositionEmbedding(tgt_vocab_size, d_model, max_len)
        self.encoder = nn.ModuleList()
        for i in range(n_encoder_layers):
            self.encoder.append(TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first))
        self.decoder = nn.ModuleList()
        for i in range(n_decoder_layers):
            self.decoder.append(DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first))
        self.encoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, tgt_vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, tgt, src_lengths=None):
        enc_X, dec_X, valid_lens = src, tgt, src_lengths
        enc_mask = None if valid_lens is None else padding_mask(valid_lens, enc_X.shape[1])
        X = self.dropout(self.src_embedding(enc_X))
        for blk in self.encoder:
            X = blk(X, enc_mask)
        enc_outputs = self.encoder_norm(X)
        dec_mask = causal_mask(dec_X.shape[1], device=dec_X.device)
        X = self.dropout(self.tgt_embedding(dec_X))
        for blk in self.decoder:
            X = blk(X, enc_outputs, dec_mask, enc_mask)
        return self.lm_head(self.decoder_norm(X))


# d2l-en, chapter_recurrent-neural-networks/text-sequence.md: `Vocab` (`build`, `encode`, `decode` added, calling
# its constructor, __getitem__ and to_tokens).
class Vocab:
    """Vocabulary for text."""
    def __init__(self, tokens=[], min_freq=0, reserved_tokens=[]):
        # Flatten a 2D list if needed
        if tokens and isinstance(tokens[0], list):
            tokens = [token for line in tokens for token in line]
        # Count token frequencies
        counter = collections.Counter(tokens)
        self.token_freqs = sorted(counter.items(), key=lambda x: x[1],
                                  reverse=True)
        # The list of unique tokens
        self.idx_to_token = list(sorted(set(['<unk>'] + reserved_tokens + [
            token for token, freq in self.token_freqs if freq >= min_freq])))
        self.token_to_idx = {token: idx
                             for idx, token in enumerate(self.idx_to_token)}

    @classmethod
    def build(cls, tokens, min_freq=1):
        return cls(tokens, min_freq)

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, tokens):
        if not isinstance(tokens, (list, tuple)):
            return self.token_to_idx.get(tokens, self.unk)
        return [self.__getitem__(token) for token in tokens]

    def to_tokens(self, indices):
        if hasattr(indices, '__len__') and len(indices) > 1:
            return [self.idx_to_token[int(index)] for index in indices]
        return self.idx_to_token[indices]

    @property
    def unk(self):  # Index for the unknown token
        return self.token_to_idx['<unk>']

    def encode(self, tokens):
        return self[list(tokens)]

    def decode(self, ids):
        return self.to_tokens(ids)


_MASKED_ROW = ("masked_softmax fills masked scores with -1e6, so a query with no allowed key gets uniform weights "
               "over the masked keys, where the API asks for zeros")

_DEFAULT_INIT = ("nn.Embedding keeps PyTorch's default initialisation (standard deviation 1); the exercise starts it "
                 "at 1/sqrt(d_model), so that a scaled token vector is not sqrt(2 d_model) times longer than its "
                 "position's")

STUDENTS = {
    "d2l": Student(SOURCE, IMPORTS, {
        "positional_encoding": [positional_encoding],
        "token_and_position_embedding": [TokenAndPositionEmbedding],
        "attention": [attention],
        "causal_mask": [causal_mask],
        "padding_mask": [padding_mask],
        "masked_attention": [masked_softmax, masked_attention],
        "multi_head_attention": [masked_softmax, DotProductAttention, MultiHeadAttention],
        "feed_forward": [FeedForward],
        "transformer_block": [TransformerBlock],
        "decoder_block": [DecoderBlock],
        "encoder_decoder_transformer": [EncoderDecoderTransformer],
        "vocab": [Vocab],
    }, mistakes={
        "token_and_position_embedding": mistake(_DEFAULT_INIT, "check_token_and_position_embedding",
                                                "hidden_token_and_position_embedding"),
        "positional_encoding": mistake("P[:, 1::2] = cos(X) cannot take an odd d_model: the cosine columns are "
                                       "one fewer than the frequencies", "check_positional_encoding",
                                       "hidden_positional_encoding"),
        "masked_attention": mistake(_MASKED_ROW, "check_masked_attention", "hidden_masked_attention"),
        "vocab": mistake("to_tokens returns a bare token, not a list, for anything but two or more ids, and fails "
                         "on a one-element list (list indices must be integers)", "check_vocab", "hidden_vocab"),
    }),
}

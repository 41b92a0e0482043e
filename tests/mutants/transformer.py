"""Mutants and variants for notebook 05. The generate_cached ones call forward_with_cache by the notebook's name, where
their check and hidden test put a stand-in."""
import math

import torch
from torch import nn
from torch.nn import functional as F

from autograder.authoring.mistakes import for_exercise
from autograder.authoring.reference import transformer as ref
from autograder.authoring.reference.masking import masked_attention
from autograder.authoring.reference.transformer import forward_with_cache  # noqa: F401 (generate_cached's read it)
from autograder.authoring.reference.attention_block import LayerNorm, MultiHeadAttention, TransformerBlock
from autograder.authoring.reference.masking import causal_mask, padding_mask
from autograder.authoring.reference.positional_encoding import TokenAndPositionEmbedding


# ---------------------------------------------------------------- DecoderOnlyTransformer

class tied_head(ref.DecoderOnlyTransformer):  # weight tying: one fewer matrix than the formula
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lm_head.weight = self.embedding.embed.weight


class returns_probabilities(ref.DecoderOnlyTransformer):  # softmax in forward: probabilities, not logits
    def forward(self, tokens):
        return super().forward(tokens).softmax(-1)


class post_norm_with_final_norm(ref.DecoderOnlyTransformer):  # a LayerNorm at the end of post-norm too
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__(vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout, norm_first)
        self.norm_final = LayerNorm(d_model)


class blocks_ignore_norm_first(ref.DecoderOnlyTransformer):  # every block built post-norm
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__(vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout, norm_first)
        self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout) for _ in range(n_layers)])


class mask_for_max_len(ref.DecoderOnlyTransformer):  # the mask of max_len sliced wrongly: column block of the end
    def forward(self, tokens):
        T, L = tokens.shape[-1], self.embedding.max_len
        mask = causal_mask(L, device=tokens.device)[:T, L - T:]
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.norm_final(x))


class dropout_always_on(ref.DecoderOnlyTransformer):  # F.dropout without training=self.training
    def forward(self, tokens):
        mask = causal_mask(tokens.shape[-1], device=tokens.device)
        x = F.dropout(self.embedding(tokens), 0.1)
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.norm_final(x))


class decoder_only_sequential_variant(nn.Module):  # blocks as a loop over a ModuleList built by append; mask inline
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
        self.blocks = nn.ModuleList()
        for _ in range(n_layers):
            self.blocks.append(TransformerBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first))
        self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        T = tokens.size(1)
        allowed = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()[None]  # (1, T, T)
        hidden = self.embedding(tokens)
        for i in range(len(self.blocks)):
            hidden = self.blocks[i](hidden, mask=allowed)
        hidden = self.norm_final(hidden)
        return hidden @ self.lm_head.weight.T + self.lm_head.bias


class decoder_only_norm_flag_variant(nn.Module):  # norm_final applied by a flag in forward, Identity stored
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.use_final_norm = norm_first
        self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
        self.blocks = nn.ModuleList(TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                    for _ in range(n_layers))
        self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        mask = torch.tril(torch.ones(tokens.shape[1], tokens.shape[1], device=tokens.device)).bool()
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x, mask.expand(tokens.shape[0], -1, -1))
        if self.use_final_norm:
            x = self.norm_final(x)
        return self.lm_head(x)


# ---------------------------------------------------------------- DecoderBlock

class cross_before_self(ref.DecoderBlock):  # the two attentions in the wrong order
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            x = x + self.cross_attn(self.norm2(x), memory, memory_mask)[0]
            h = self.norm1(x)
            x = x + self.self_attn(h, h, self_mask)[0]
            return x + self.ff(self.norm3(x))
        x = self.norm2(x + self.cross_attn(x, memory, memory_mask)[0])
        x = self.norm1(x + self.self_attn(x, x, self_mask)[0])
        return self.norm3(x + self.ff(x))


class one_norm_for_all(ref.DecoderBlock):  # norm1 used for every sub-layer
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        n = self.norm1
        if self.norm_first:
            h = n(x)
            x = x + self.self_attn(h, h, self_mask)[0]
            x = x + self.cross_attn(n(x), memory, memory_mask)[0]
            return x + self.ff(n(x))
        x = n(x + self.self_attn(x, x, self_mask)[0])
        x = n(x + self.cross_attn(x, memory, memory_mask)[0])
        return n(x + self.ff(x))


class shared_attention(ref.DecoderBlock):  # one MultiHeadAttention for self- and cross-attention
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.cross_attn = self.self_attn


class masks_swapped(ref.DecoderBlock):  # memory_mask given to the self-attention and vice versa (T == S only)
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if x.shape[1] != memory.shape[1]:
            return super().forward(x, memory, self_mask, memory_mask)
        return super().forward(x, memory, memory_mask, self_mask)


class decoder_block_sublayer_variant(nn.Module):  # a helper for "residual around a normed sub-layer"; 4-d masks
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = ref.FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)

    def _sub(self, x, norm, layer):
        return x + layer(norm(x)) if self.norm_first else norm(x + layer(x))

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        four = (lambda m: None if m is None else m.reshape(*([1] * (4 - m.dim())), *m.shape) if m.dim() < 3
                else m.unsqueeze(1))
        x = self._sub(x, self.norm1, lambda h: self.self_attn(h, h, four(self_mask))[0])
        x = self._sub(x, self.norm2, lambda h: self.cross_attn(h, memory, four(memory_mask))[0])
        return self._sub(x, self.norm3, self.ff)


class decoder_block_torch_norms_variant(ref.DecoderBlock):  # torch's nn.LayerNorm with eps=1e-12 (issue 25.2)
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model, eps=1e-12) for _ in range(3))


# ---------------------------------------------------------------- EncoderDecoderTransformer

class decoder_reads_first_encoder_layer(ref.EncoderDecoderTransformer):  # memory taken too early
    def forward(self, src, tgt, src_lengths=None):
        pad = None if src_lengths is None else padding_mask(src_lengths, src.shape[-1])
        memory = self.encoder_norm(self.encoder[0](self.src_embedding(src), pad))
        x = self.tgt_embedding(tgt)
        for block in self.decoder:
            x = block(x, memory, causal_mask(tgt.shape[-1], device=tgt.device), pad)
        return self.lm_head(self.decoder_norm(x))


class one_embedding(ref.EncoderDecoderTransformer):  # the target embedded with the source table (mod its size)
    def forward(self, src, tgt, src_lengths=None):
        pad = None if src_lengths is None else padding_mask(src_lengths, src.shape[-1])
        memory = self.src_embedding(src)
        for block in self.encoder:
            memory = block(memory, pad)
        memory = self.encoder_norm(memory)
        x = self.src_embedding(tgt % self.src_embedding.embed.num_embeddings)
        for block in self.decoder:
            x = block(x, memory, causal_mask(tgt.shape[-1], device=tgt.device), pad)
        return self.lm_head(self.decoder_norm(x))


class padding_on_the_left(ref.EncoderDecoderTransformer):  # treats the last src_lengths tokens as the real ones
    def forward(self, src, tgt, src_lengths=None):
        if src_lengths is None:
            return super().forward(src, tgt)
        S = src.shape[-1]
        pad = (torch.arange(S, device=src.device) >= S - src_lengths[:, None])[:, None]
        memory = self.src_embedding(src)
        for block in self.encoder:
            memory = block(memory, pad)
        memory = self.encoder_norm(memory)
        x = self.tgt_embedding(tgt)
        for block in self.decoder:
            x = block(x, memory, causal_mask(tgt.shape[-1], device=tgt.device), pad)
        return self.lm_head(self.decoder_norm(x))


class encoder_decoder_methods_variant(ref.EncoderDecoderTransformer):  # encode / decode methods, masks inline
    def encode(self, src, src_lengths):
        keep = None
        if src_lengths is not None:
            keep = torch.arange(src.shape[1], device=src.device).expand(len(src_lengths), -1) < src_lengths[:, None]
            keep = keep[:, None, :]
        h = self.src_embedding(src)
        for layer in self.encoder:
            h = layer(h, mask=keep)
        return self.encoder_norm(h), keep

    def decode(self, tgt, memory, keep):
        T = tgt.shape[1]
        causal = ~torch.triu(torch.ones(T, T, dtype=torch.bool, device=tgt.device), diagonal=1)
        y = self.tgt_embedding(tgt)
        for layer in self.decoder:
            y = layer(y, memory, self_mask=causal, memory_mask=None if keep is None else keep.expand(-1, T, -1))
        return self.lm_head(self.decoder_norm(y))

    def forward(self, src, tgt, src_lengths=None):
        memory, keep = self.encode(src, src_lengths)
        return self.decode(tgt, memory, keep)


# ---------------------------------------------------------------- generate

def _generic(model, prompt, max_new_tokens, choose, *, crop=lambda t, L: t[:, -L:], eval_mode=True, grad=False,
             restore=True):
    was = model.training
    if eval_mode:
        model.eval()
    L = model.embedding.max_len
    tokens = prompt
    with torch.set_grad_enabled(grad):
        for _ in range(max_new_tokens):
            logits = model(crop(tokens, L))[:, -1]
            tokens = torch.cat([tokens, choose(logits)], dim=1)
    if restore:
        model.train(was)
    return tokens


def _standard(temperature, top_k, generator):
    def choose(logits):
        if temperature == 0:
            return logits.argmax(-1, keepdim=True)
        logits = logits / temperature
        if top_k is not None and top_k < logits.shape[-1]:
            kth = logits.topk(top_k, -1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return torch.multinomial(logits.softmax(-1), 1, generator=generator)
    return choose


def ignores_generator(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _generic(model, prompt, max_new_tokens, _standard(temperature, top_k, None))


def no_eval_mode(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator), eval_mode=False)


def with_gradients(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator), grad=True)


def leaves_eval_mode(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator), restore=False)


def crops_one_short(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator),
                    crop=lambda t, L: t[:, -(L - 1):])


def crops_from_the_start(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator),
                    crop=lambda t, L: t[:, :L])


def returns_new_tokens_only(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    out = _generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator))
    return out[:, prompt.shape[1]:]


def top_k_ignored(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _generic(model, prompt, max_new_tokens, _standard(temperature, None, generator))


def top_k_from_probabilities_no_renormalise(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    def choose(logits):  # zeroes the tail of the probabilities; multinomial renormalises, but k - 1 are kept
        if temperature == 0:
            return logits.argmax(-1, keepdim=True)
        p = (logits / temperature).softmax(-1)
        if top_k is not None and top_k < p.shape[-1]:
            kth = p.topk(top_k, -1).values[:, -1:]
            p = torch.where(p > kth, p, 0.0) if top_k > 1 else torch.where(p >= kth, p, 0.0)
        return torch.multinomial(p, 1, generator=generator)
    return _generic(model, prompt, max_new_tokens, choose)


def gumbel_max_variant(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    def choose(logits):
        if temperature == 0:
            return logits.argmax(-1, keepdim=True)
        logits = logits / temperature
        if top_k is not None:
            values, _ = torch.sort(logits, dim=-1, descending=True)
            cutoff = values[:, min(top_k, logits.shape[-1]) - 1: min(top_k, logits.shape[-1])]
            logits = torch.where(logits >= cutoff, logits, torch.full_like(logits, float("-inf")))
        u = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=logits.dtype)
        gumbel = -torch.log(-torch.log(u.clamp_min(1e-12)))
        return (logits + gumbel).argmax(-1, keepdim=True)
    return _generic(model, prompt, max_new_tokens, choose)


def inverse_cdf_variant(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was = model.training
    model.eval()
    out = prompt.clone()
    with torch.inference_mode():
        for _ in range(max_new_tokens):
            start = max(0, out.shape[1] - model.embedding.max_len)
            logits = model(out[:, start:])[:, -1, :].clone()
            if temperature == 0:
                nxt = torch.topk(logits, 1, dim=-1).indices
            else:
                if top_k is not None and top_k < logits.shape[-1]:
                    idx = logits.argsort(dim=-1, descending=True)[:, top_k:]
                    logits.scatter_(1, idx, float("-inf"))
                cdf = F.softmax(logits / temperature, dim=-1).cumsum(-1)
                u = torch.rand(cdf.shape[0], 1, generator=generator, device=cdf.device, dtype=cdf.dtype)
                nxt = torch.searchsorted(cdf, u * cdf[:, -1:]).clamp_max(cdf.shape[-1] - 1)
            out = torch.cat((out, nxt), dim=-1)
    model.train(was)
    return out.clone()


def top_k_gather_variant(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """Samples among the top-k values only, then maps the drawn index back to the token id."""
    def choose(logits):
        if temperature == 0:
            return torch.max(logits, dim=-1).indices.unsqueeze(-1)
        k = logits.shape[-1] if top_k is None else min(top_k, logits.shape[-1])
        values, indices = torch.topk(logits / temperature, k, dim=-1)
        drawn = torch.multinomial(F.softmax(values, dim=-1), num_samples=1, generator=generator)
        return indices.gather(-1, drawn)
    return _generic(model, prompt, max_new_tokens, choose)



# ---------------------------------------------------------------- wiring in some blocks only; dropout left on (mutants)

class last_block_post_norm(ref.DecoderOnlyTransformer):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__(vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout, norm_first)
        self.blocks[-1].norm_first = False


class decoder_only_dropout_in_eval(ref.DecoderOnlyTransformer):  # F.dropout without training=self.training
    def forward(self, tokens):
        mask = causal_mask(tokens.shape[-1], device=tokens.device)
        x = F.dropout(self.embedding(tokens), self.dropout.p)
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.norm_final(x))


class decoder_block_dropout_in_eval(ref.DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        p = self.dropout.p
        if self.norm_first:
            h = self.norm1(x)
            x = x + F.dropout(self.self_attn(h, h, self_mask)[0], p)
            x = x + F.dropout(self.cross_attn(self.norm2(x), memory, memory_mask)[0], p)
            return x + F.dropout(self.ff(self.norm3(x)), p)
        x = self.norm1(x + F.dropout(self.self_attn(x, x, self_mask)[0], p))
        x = self.norm2(x + F.dropout(self.cross_attn(x, memory, memory_mask)[0], p))
        return self.norm3(x + F.dropout(self.ff(x), p))


def _encoder_decoder_forward(model, src, tgt, src_lengths, *, encoder_mask_in=lambda i: True,
                             memory_mask_in=lambda i: True, embed=lambda x: x):
    pad = None if src_lengths is None else padding_mask(src_lengths, src.shape[-1])
    memory = embed(model.src_embedding(src))
    for i, block in enumerate(model.encoder):
        memory = block(memory, pad if encoder_mask_in(i) else None)
    memory = model.encoder_norm(memory)
    x = embed(model.tgt_embedding(tgt))
    for i, block in enumerate(model.decoder):
        x = block(x, memory, causal_mask(tgt.shape[-1], device=tgt.device), pad if memory_mask_in(i) else None)
    return model.lm_head(model.decoder_norm(x))


class padding_only_in_first_decoder_block(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encoder_decoder_forward(self, src, tgt, src_lengths, memory_mask_in=lambda i: i == 0)


class padding_only_in_first_encoder_block(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encoder_decoder_forward(self, src, tgt, src_lengths, encoder_mask_in=lambda i: i == 0)


class encoder_decoder_dropout_in_eval(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encoder_decoder_forward(self, src, tgt, src_lengths, embed=lambda x: F.dropout(x, self.dropout.p))


def top_k_above_vocabulary_fails(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    def choose(logits):  # torch.topk raises when top_k exceeds the vocabulary
        if temperature == 0:
            return logits.argmax(-1, keepdim=True)
        logits = logits / temperature
        if top_k is not None:
            kth = logits.topk(top_k, -1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return torch.multinomial(logits.softmax(-1), 1, generator=generator)
    return _generic(model, prompt, max_new_tokens, choose)


# ---------------------------------------------------------------- more correct variants

class decoder_only_buffers_variant(nn.Module):
    """A causal mask of max_len stored as a buffer and sliced, ARENA's IGNORE buffer, sizes read with int()."""

    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
        self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, vocab_size)
        self.register_buffer("causal", torch.ones(max_len, max_len, dtype=torch.bool).tril())
        self.register_buffer("IGNORE", torch.tensor(-1e5))
        self.drop = nn.Dropout(dropout)

    def forward(self, tokens):
        T = int(tokens.shape[1])
        x = self.drop(self.embedding(tokens))
        for block in self.blocks:
            x = block(x, self.causal[:T, :T])
        return self.lm_head(self.norm_final(x))


class decoder_block_buffer_variant(ref.DecoderBlock):  # an extra persistent buffer and a parameter-free submodule
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.register_buffer("IGNORE", torch.tensor(-1e5))
        self.act = nn.Identity()


def _encoder_decoder_with_wrong_block(wrong) -> type:
    """A correct model whose DecoderBlocks are a known mistake: the model's check and hidden test put PyTorch's
    decoder layer in their place, so the model keeps its points."""

    class model(ref.EncoderDecoderTransformer):
        def __init__(self, src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_encoder_layers, n_decoder_layers,
                     max_len, dropout=0.0, norm_first=True):
            super().__init__(src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_encoder_layers,
                             n_decoder_layers, max_len, dropout, norm_first)
            self.decoder = nn.ModuleList([wrong(d_model, n_heads, d_ff, dropout, norm_first)
                                          for _ in range(n_decoder_layers)])

    model.__name__ = model.__qualname__ = f"encoder_decoder_with_{wrong.__name__}"
    return model


MODELS_WITH_WRONG_BLOCKS = [_encoder_decoder_with_wrong_block(m.impl) for m in for_exercise("DecoderBlock")]


def generate_python_lists_variant(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """The sequences kept as Python lists (.tolist()), the crop by list slicing, max_len read with int(), the greedy
    token of each row read with .item(), top-k by sorting, each step's tokens appended from .tolist()."""
    was_training = model.training
    model.eval()
    rows = prompt.tolist()
    max_len = int(model.embedding.max_len)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(torch.tensor([row[-max_len:] for row in rows], device=prompt.device))[:, -1]
            if temperature == 0:
                chosen = torch.tensor([row_logits.argmax().item() for row_logits in logits])
            else:
                logits = logits / temperature
                if top_k is not None and top_k < logits.shape[-1]:
                    cutoff = logits.sort(dim=-1, descending=True).values[:, top_k - 1:top_k]
                    logits = logits.masked_fill(logits < cutoff, float("-inf"))
                chosen = torch.multinomial(logits.softmax(-1), 1, generator=generator)[:, 0]
            for row, token in zip(rows, chosen.tolist()):
                row.append(token)
    model.train(was_training)
    return torch.tensor(rows, dtype=torch.long, device=prompt.device)



def generate_row_by_row_variant(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """Issue 51: each row of the prompt decoded on its own, one model call per row and token (a (1, T) batch), the
    temperature and top-k applied to that row's vector of logits (sorted, the k-th value as the threshold), one
    torch.multinomial per token. Correct, and B times the model calls of a batched loop."""
    was_training = model.training
    model.eval()
    L = model.embedding.max_len
    rows = []
    with torch.no_grad():
        for b in range(prompt.shape[0]):
            row = prompt[b]
            for _ in range(max_new_tokens):
                logits = model(row[-L:].unsqueeze(0))[0, -1]
                if temperature == 0:
                    nxt = logits.argmax().reshape(1)
                else:
                    logits = logits / temperature
                    if top_k is not None and top_k < logits.numel():
                        threshold = torch.sort(logits, descending=True).values[top_k - 1]
                        logits = torch.where(logits >= threshold, logits, torch.tensor(float("-inf"),
                                                                                      device=logits.device))
                    nxt = torch.multinomial(torch.softmax(logits, dim=0), 1, generator=generator)
                row = torch.cat([row, nxt])
            rows.append(row)
    model.train(was_training)
    return torch.stack(rows)


def generate_top_k_per_row_variant(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """Issue 51: one model call per token for the whole batch, then a Python loop over the rows: each row's logits
    top-k filtered by its own topk and sampled by its own torch.multinomial."""
    was_training = model.training
    model.eval()
    tokens = prompt.clone()
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(tokens[:, -model.embedding.max_len:])[:, -1, :]
            chosen = []
            for row in logits:
                if temperature == 0:
                    chosen.append(int(row.argmax()))
                    continue
                row = row / temperature
                if top_k is not None and top_k < row.shape[0]:
                    values, indices = torch.topk(row, top_k)
                    row = torch.full_like(row, float("-inf")).scatter(0, indices, values)
                chosen.append(int(torch.multinomial(row.softmax(0), 1, generator=generator)))
            tokens = torch.cat([tokens, torch.tensor(chosen, device=tokens.device)[:, None]], dim=1)
    model.train(was_training)
    return tokens


class mask_on_default_device(ref.DecoderOnlyTransformer):  # causal_mask(T) without device=: the mask stays on the CPU
    def forward(self, tokens):
        mask = causal_mask(tokens.shape[-1])
        x = self.dropout(self.embedding(tokens))
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.norm_final(x))


def next_token_from_the_host(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    # each new token goes through a Python list and back: a CPU tensor joined to the prompt's device
    return _generic(model, prompt, max_new_tokens, lambda logits: torch.tensor(
        _standard(temperature, top_k, generator)(logits).tolist()))


# ---------------------------------------------------------------- logits up to a constant at each position

class decoder_only_log_probabilities(ref.DecoderOnlyTransformer):  # VARIANT: log_softmax of the head's output
    def forward(self, tokens):
        return F.log_softmax(super().forward(tokens), dim=-1)


class decoder_only_max_subtracted(ref.DecoderOnlyTransformer):  # VARIANT: each position less its largest logit
    def forward(self, tokens):
        logits = super().forward(tokens)
        return logits - logits.amax(dim=-1, keepdim=True).detach()


class encoder_decoder_log_probabilities(ref.EncoderDecoderTransformer):  # VARIANT: log_softmax of the head's output
    def forward(self, src, tgt, src_lengths=None):
        return super().forward(src, tgt, src_lengths).log_softmax(-1)


class log_softmax_over_positions(ref.DecoderOnlyTransformer):  # a constant per vocabulary entry, not per position
    def forward(self, tokens):
        return super().forward(tokens).log_softmax(dim=-2)


class logits_scaled_per_position(ref.DecoderOnlyTransformer):  # multiplied, not shifted: a sharper softmax further on
    def forward(self, tokens):
        logits = super().forward(tokens)
        T = logits.shape[-2]
        return logits * (1 + torch.arange(T, device=logits.device, dtype=logits.dtype) / T)[:, None]


class logits_shifted_across_vocabulary(ref.DecoderOnlyTransformer):  # a shift that differs from token to token
    def forward(self, tokens):
        logits = super().forward(tokens)
        V = logits.shape[-1]
        return logits + 0.1 * torch.arange(V, device=logits.device, dtype=logits.dtype) / V


class encoder_decoder_logits_doubled(ref.EncoderDecoderTransformer):  # a temperature of 1/2 baked into the head
    def forward(self, src, tgt, src_lengths=None):
        return 2 * super().forward(src, tgt, src_lengths)


# ---------------------------------------------------------------- forward_with_cache

def _embedded(model, tokens, T_past):
    emb = model.embedding
    T = T_past + tokens.shape[1]
    if T > emb.max_len:
        raise ValueError(f"{T} positions, more than max_len={emb.max_len}")
    return emb.embed(tokens) * math.sqrt(emb.embed.embedding_dim) + emb.pe[T_past:T]


def _finish_block(block, x, attended):
    """The rest of a block once its attention's output (after W_o) is known."""
    if block.norm_first:
        x = x + attended
        return x + block.ff(block.norm2(x))
    x = block.norm1(x + attended)
    return block.norm2(x + block.ff(x))


def _heads(t, n_heads):  # (B, T, d_model) -> (B, n_heads, T, d_head)
    B, T, d = t.shape
    return t.view(B, T, n_heads, d // n_heads).transpose(1, 2)


def _merged(t):  # (B, n_heads, T, d_head) -> (B, T, d_model)
    B, h, T, d = t.shape
    return t.transpose(1, 2).reshape(B, T, h * d)


def _plain(model, tokens, cache=None, *, mask_of=None, cat_dim=-2, final_norm=True, length_check=True):
    """forward_with_cache with a list of (K, V) per layer, each (B, n_heads, T, d_head); the mask is
    mask_of(T_new, T, device) (causal_mask(T_new, T) on the device by default), the new keys are appended along
    cat_dim."""
    T_past = 0 if cache is None else cache[0][0].shape[-2]
    T_new = tokens.shape[1]
    emb = model.embedding
    if length_check:
        x = _embedded(model, tokens, T_past)
    else:  # the table's rows run out: a shape error, not a ValueError
        x = emb.embed(tokens) * math.sqrt(emb.embed.embedding_dim) + emb.pe[T_past:T_past + T_new]
    mask = (mask_of or (lambda q, k, device: causal_mask(q, k, device=device)))(T_new, T_past + T_new, tokens.device)
    kept = []
    for i, block in enumerate(model.blocks):
        attn = block.attn
        h = block.norm1(x) if block.norm_first else x
        q, k, v = (_heads(W(h), attn.n_heads) for W in (attn.W_q, attn.W_k, attn.W_v))
        if cache is not None:
            k, v = torch.cat([cache[i][0], k], dim=cat_dim), torch.cat([cache[i][1], v], dim=cat_dim)
        kept.append((k, v))
        x = _finish_block(block, x, attn.W_o(_merged(masked_attention(q, k, v, mask)[0])))
    return model.lm_head(model.norm_final(x) if final_norm else x), kept


def forward_with_cache_list_variant(model, tokens, cache=None):  # a list of (K, V) per layer, helpers of its own
    return _plain(model, tokens, cache)


def square_mask(model, tokens, cache=None):  # causal_mask(T_new): ignores the cache (several tokens onto one crash)
    return _plain(model, tokens, cache, mask_of=lambda q, k, device: causal_mask(q, device=device))


def mask_on_the_cpu(model, tokens, cache=None):  # causal_mask(T_new, T) without device=: right on the CPU only
    return _plain(model, tokens, cache, mask_of=lambda q, k, device: causal_mask(q, k))


def appended_along_the_heads(model, tokens, cache=None):  # torch.cat(..., dim=1): the heads' axis, not the positions'
    return _plain(model, tokens, cache, cat_dim=1)


def no_max_len_check(model, tokens, cache=None):
    return _plain(model, tokens, cache, length_check=False)


def no_final_norm_cached(model, tokens, cache=None):
    return _plain(model, tokens, cache, final_norm=False)


def runs_the_whole_model(model, tokens, cache=None):  # "caches" the tokens and runs model(all of them)
    seen = tokens if cache is None else torch.cat([cache, tokens], dim=1)
    return model(seen)[:, -tokens.shape[1]:], seen


def projects_cached_inputs_again(model, tokens, cache=None):
    """Caches what enters each layer's attention and projects all of it again: right logits, no saving."""
    T_past = 0 if cache is None else cache[0].shape[1]
    x = _embedded(model, tokens, T_past)
    T_new = tokens.shape[1]
    mask = causal_mask(T_new, T_past + T_new, device=tokens.device)
    kept = []
    for i, block in enumerate(model.blocks):
        attn = block.attn
        h = block.norm1(x) if block.norm_first else x
        everything = h if cache is None else torch.cat([cache[i], h], dim=1)
        kept.append(everything)
        q = _heads(attn.W_q(h), attn.n_heads)
        k, v = _heads(attn.W_k(everything), attn.n_heads), _heads(attn.W_v(everything), attn.n_heads)
        x = _finish_block(block, x, attn.W_o(_merged(masked_attention(q, k, v, mask)[0])))
    return model.lm_head(model.norm_final(x)), kept


def forward_with_cache_stacked_variant(model, tokens, cache=None):
    """The whole cache as one tensor (n_layers, 2, B, n_heads, T, d_head), attention by scaled_dot_product_attention."""
    T_past = 0 if cache is None else cache.shape[-2]
    x = _embedded(model, tokens, T_past)
    T_new = tokens.shape[1]
    allowed = torch.ones(T_new, T_past + T_new, dtype=torch.bool, device=tokens.device).tril(T_past)
    layers = []
    for i, block in enumerate(model.blocks):
        attn = block.attn
        h = block.norm1(x) if block.norm_first else x
        q, k, v = (_heads(W(h), attn.n_heads) for W in (attn.W_q, attn.W_k, attn.W_v))
        if cache is not None:
            k, v = torch.cat([cache[i, 0], k], dim=-2), torch.cat([cache[i, 1], v], dim=-2)
        layers.append(torch.stack([k, v]))
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        x = _finish_block(block, x, attn.W_o(_merged(heads)))
    return model.lm_head(model.norm_final(x)), torch.stack(layers)


def forward_with_cache_before_split_variant(model, tokens, cache=None):
    """Keys and values cached as (B, T, d_model), as W_k and W_v give them, split into heads after each append;
    a dict cache; the attention written out with einsum and -1e9 for the masked scores."""
    layers = [] if cache is None else cache["layers"]
    T_past = 0 if cache is None else cache["length"]
    x = _embedded(model, tokens, T_past)
    B, T_new, d_model = x.shape
    T = T_past + T_new
    blocked = torch.arange(T, device=x.device)[None, :] > torch.arange(T_past, T, device=x.device)[:, None]
    kept = []
    for i, block in enumerate(model.blocks):
        attn = block.attn
        h = block.norm1(x) if block.norm_first else x
        k_all, v_all = attn.W_k(h), attn.W_v(h)
        if layers:
            k_all, v_all = torch.cat([layers[i][0], k_all], dim=1), torch.cat([layers[i][1], v_all], dim=1)
        kept.append((k_all, v_all))
        q, k, v = _heads(attn.W_q(h), attn.n_heads), _heads(k_all, attn.n_heads), _heads(v_all, attn.n_heads)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
        weights = scores.masked_fill(blocked, -1e9).softmax(-1)
        x = _finish_block(block, x, attn.W_o(_merged(torch.einsum("bhqk,bhkd->bhqd", weights, v))))
    return model.lm_head(model.norm_final(x)), {"layers": kept, "length": T}


def forward_with_cache_one_position_at_a_time_variant(model, tokens, cache=None):
    """A loop over the new positions: each goes through the model alone, onto the cache the one before it left."""
    if cache is None:
        cache = [None] * len(model.blocks)
    T_past = 0 if cache[0] is None else cache[0][0].shape[-2]
    if T_past + tokens.shape[1] > model.embedding.max_len:
        raise ValueError("past max_len")
    outs = []
    for t in range(tokens.shape[1]):
        position = T_past + t
        x = _embedded(model, tokens[:, t:t + 1], position)
        new = []
        for i, block in enumerate(model.blocks):
            attn = block.attn
            h = block.norm1(x) if block.norm_first else x
            q, k, v = (_heads(W(h), attn.n_heads) for W in (attn.W_q, attn.W_k, attn.W_v))
            if cache[i] is not None:
                k, v = torch.cat([cache[i][0], k], dim=2), torch.cat([cache[i][1], v], dim=2)
            new.append((k, v))
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # one query sees all
            x = _finish_block(block, x, attn.W_o(_merged(weights @ v)))
        cache = new
        outs.append(model.lm_head(model.norm_final(x)))
    return torch.cat(outs, dim=1), cache


# ---------------------------------------------------------------- generate_cached

def _cached_generic(model, prompt, max_new_tokens, choose, *, check=lambda T0, n, L: T0 + n > L, feed=None,
                    eval_mode=True, grad=False, restore=True):
    """generate_cached with one detail changed. `feed(tokens, chosen)` gives (what the next call reads, whether it
    gets the cache); by default the chosen token, with it."""
    if check(prompt.shape[1], max_new_tokens, model.embedding.max_len):
        raise ValueError("longer than max_len: use generate")
    was = model.training
    if eval_mode:
        model.eval()
    tokens, fed, cache, hand_on = prompt, prompt, None, True
    with torch.set_grad_enabled(grad):
        for _ in range(max_new_tokens):
            logits, cache = forward_with_cache(model, fed, cache if hand_on else None)
            chosen = choose(logits[:, -1])
            tokens = torch.cat([tokens, chosen], dim=1)
            fed, hand_on = (chosen, True) if feed is None else feed(tokens, chosen)
    if restore:
        model.train(was)
    return tokens


def whole_text_each_step(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator),
                           feed=lambda tokens, chosen: (tokens, True))


def recomputes_without_a_cache(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator),
                           feed=lambda tokens, chosen: (tokens, False))


def no_length_check(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator),
                           check=lambda T0, n, L: False)


def cached_ignores_generator(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, top_k, None))


def cached_no_eval_mode(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator), eval_mode=False)


def cached_with_gradients(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator), grad=True)


def cached_leaves_eval_mode(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator), restore=False)


def cached_returns_new_tokens_only(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, top_k, generator))[:, prompt.shape[1]:]


def cached_top_k_ignored(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_generic(model, prompt, max_new_tokens, _standard(temperature, None, generator))


def generate_cached_prompt_token_by_token_variant(model, prompt, max_new_tokens, temperature=1.0, top_k=None,
                                                  generator=None):
    """The prompt fed one token at a time, the last token chosen fed too (one pass more), a while loop, the length
    checked up front."""
    if prompt.shape[1] + max_new_tokens > model.embedding.max_len:
        raise ValueError("the text would be longer than max_len: use generate, which crops")
    was = model.training
    model.eval()
    choose = _standard(temperature, top_k, generator)
    with torch.no_grad():
        cache = None
        for t in range(prompt.shape[1]):
            logits, cache = forward_with_cache(model, prompt[:, t:t + 1], cache)
        tokens = prompt
        while tokens.shape[1] < prompt.shape[1] + max_new_tokens:
            chosen = choose(logits[:, -1])
            tokens = torch.cat([tokens, chosen], dim=1)
            logits, cache = forward_with_cache(model, chosen, cache)
    model.train(was)
    return tokens


def generate_cached_python_lists_variant(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """The new tokens kept in a Python list of (B, 1) tensors and joined at the end; top-k by sorting."""
    if prompt.shape[1] + max_new_tokens > int(model.embedding.max_len):
        raise ValueError("too long for a cache: use generate")
    was = model.training
    model.eval()
    chosen, cache = [], None
    with torch.no_grad():
        for step in range(max_new_tokens):
            logits, cache = forward_with_cache(model, prompt if step == 0 else chosen[-1], cache)
            logits = logits[:, -1]
            if temperature == 0:
                chosen.append(torch.max(logits, dim=-1).indices[:, None])
                continue
            logits = logits / temperature
            if top_k is not None and top_k < logits.shape[-1]:
                cutoff = logits.sort(dim=-1, descending=True).values[:, top_k - 1:top_k]
                logits = logits.masked_fill(logits < cutoff, float("-inf"))
            chosen.append(torch.multinomial(F.softmax(logits, dim=-1), num_samples=1, generator=generator))
    model.train(was)
    return torch.cat([prompt, *chosen], dim=1)


MUTANTS = [
    ("DecoderOnlyTransformer", tied_head),
    ("DecoderOnlyTransformer", returns_probabilities),
    ("DecoderOnlyTransformer", post_norm_with_final_norm),
    ("DecoderOnlyTransformer", blocks_ignore_norm_first),
    ("DecoderOnlyTransformer", mask_for_max_len),
    ("DecoderOnlyTransformer", dropout_always_on),
    ("DecoderBlock", cross_before_self),
    ("DecoderBlock", one_norm_for_all),
    ("DecoderBlock", shared_attention),
    ("DecoderBlock", masks_swapped),
    ("EncoderDecoderTransformer", decoder_reads_first_encoder_layer),
    ("EncoderDecoderTransformer", one_embedding),
    ("EncoderDecoderTransformer", padding_on_the_left),
    ("generate", ignores_generator),
    ("generate", no_eval_mode),
    ("generate", with_gradients),
    ("generate", leaves_eval_mode),
    ("generate", crops_one_short),
    ("generate", crops_from_the_start),
    ("generate", returns_new_tokens_only),
    ("generate", top_k_ignored),
    ("generate", top_k_from_probabilities_no_renormalise),
    ("DecoderOnlyTransformer", last_block_post_norm),
    ("DecoderOnlyTransformer", decoder_only_dropout_in_eval),
    ("DecoderBlock", decoder_block_dropout_in_eval),
    ("EncoderDecoderTransformer", padding_only_in_first_decoder_block),
    ("EncoderDecoderTransformer", padding_only_in_first_encoder_block),
    ("EncoderDecoderTransformer", encoder_decoder_dropout_in_eval),
    ("generate", top_k_above_vocabulary_fails),
    ("DecoderOnlyTransformer", mask_on_default_device),
    ("generate", next_token_from_the_host),
    ("DecoderOnlyTransformer", log_softmax_over_positions),
    ("DecoderOnlyTransformer", logits_scaled_per_position),
    ("DecoderOnlyTransformer", logits_shifted_across_vocabulary),
    ("EncoderDecoderTransformer", encoder_decoder_logits_doubled),
    ("forward_with_cache", square_mask),
    ("forward_with_cache", mask_on_the_cpu),
    ("forward_with_cache", appended_along_the_heads),
    ("forward_with_cache", runs_the_whole_model),
    ("forward_with_cache", projects_cached_inputs_again),
    ("forward_with_cache", no_max_len_check),
    ("forward_with_cache", no_final_norm_cached),
    ("generate_cached", whole_text_each_step),
    ("generate_cached", recomputes_without_a_cache),
    ("generate_cached", no_length_check),
    ("generate_cached", cached_ignores_generator),
    ("generate_cached", cached_no_eval_mode),
    ("generate_cached", cached_with_gradients),
    ("generate_cached", cached_leaves_eval_mode),
    ("generate_cached", cached_returns_new_tokens_only),
    ("generate_cached", cached_top_k_ignored),
]

VARIANTS = [
    ("DecoderOnlyTransformer", decoder_only_sequential_variant),
    ("DecoderOnlyTransformer", decoder_only_norm_flag_variant),
    ("DecoderBlock", decoder_block_sublayer_variant),
    ("EncoderDecoderTransformer", encoder_decoder_methods_variant),
    ("generate", gumbel_max_variant),
    ("generate", inverse_cdf_variant),
    ("generate", top_k_gather_variant),
    ("DecoderOnlyTransformer", decoder_only_buffers_variant),
    ("DecoderBlock", decoder_block_buffer_variant),
    ("DecoderBlock", decoder_block_torch_norms_variant),
    ("generate", generate_python_lists_variant),
    ("generate", generate_row_by_row_variant),
    ("generate", generate_top_k_per_row_variant),
    ("DecoderOnlyTransformer", decoder_only_log_probabilities),
    ("DecoderOnlyTransformer", decoder_only_max_subtracted),
    ("EncoderDecoderTransformer", encoder_decoder_log_probabilities),
    ("forward_with_cache", forward_with_cache_list_variant),
    ("forward_with_cache", forward_with_cache_stacked_variant),
    ("forward_with_cache", forward_with_cache_before_split_variant),
    ("forward_with_cache", forward_with_cache_one_position_at_a_time_variant),
    ("generate_cached", generate_cached_prompt_token_by_token_variant),
    ("generate_cached", generate_cached_python_lists_variant),
] + [("EncoderDecoderTransformer", model) for model in MODELS_WITH_WRONG_BLOCKS]

# Mutants that differ from a correct implementation only on a second real device (tests/test_mutants.py skips them
# where the CPU is the only device, saying so).
NEEDS_SECOND_DEVICE = {mask_on_default_device, next_token_from_the_host, mask_on_the_cpu}

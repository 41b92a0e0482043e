"""Known mistakes in notebook 05. Each model mistake subclasses the reference, so its weights load
with the same names (load_state_dict(strict=True)); only `forward` (or the sampling loop) is wrong. The mistakes of
`generate_cached` call `forward_with_cache` by the notebook's name, where their check and hidden test put a stand-in."""
import math

import torch

from autograder.authoring.mistakes import mistake
from autograder.authoring.reference import transformer as ref
from autograder.authoring.reference.transformer import forward_with_cache  # noqa: F401 (read by generate_cached's)


# ---------------------------------------------------------------- DecoderOnlyTransformer

def _run_blocks(model, x, mask):
    for block in model.blocks:
        x = block(x, mask)
    return x


@mistake("DecoderOnlyTransformer", "the blocks got no causal mask, so every position reads the tokens after it: the "
         "logits at position t already saw the token they are meant to predict. Build causal_mask(T) on the tokens' "
         "device and pass it to every block.")
class no_causal_mask(ref.DecoderOnlyTransformer):
    def forward(self, tokens):
        return self.lm_head(self.norm_final(_run_blocks(self, self.embedding(tokens), None)))


@mistake("DecoderOnlyTransformer", "the causal mask is upside down: True means the query MAY attend to that key, so "
         "position t may read positions 0..t (the lower triangle), not the ones after it.")
class inverted_causal_mask(ref.DecoderOnlyTransformer):
    def forward(self, tokens):
        mask = ~ref.causal_mask(tokens.shape[-1], device=tokens.device)
        return self.lm_head(self.norm_final(_run_blocks(self, self.embedding(tokens), mask)))


@mistake("DecoderOnlyTransformer", "the final norm is missing: with norm_first=True nothing normalises the stream "
         "after the last block, so apply norm_final to the last block's output, before lm_head.")
class no_final_norm(ref.DecoderOnlyTransformer):
    def forward(self, tokens):
        mask = ref.causal_mask(tokens.shape[-1], device=tokens.device)
        return self.lm_head(_run_blocks(self, self.embedding(tokens), mask))


@mistake("DecoderOnlyTransformer", "norm_final is applied to the embeddings, before the blocks; it belongs after "
         "the last block, right before lm_head.")
class final_norm_before_blocks(ref.DecoderOnlyTransformer):
    def forward(self, tokens):
        mask = ref.causal_mask(tokens.shape[-1], device=tokens.device)
        return self.lm_head(_run_blocks(self, self.norm_final(self.embedding(tokens)), mask))


@mistake("DecoderOnlyTransformer", "every block reads the embeddings instead of the previous block's output, so only "
         "the last block counts: chain them, x = block(x, mask).")
class blocks_not_chained(ref.DecoderOnlyTransformer):
    def forward(self, tokens):
        mask = ref.causal_mask(tokens.shape[-1], device=tokens.device)
        x = self.embedding(tokens)
        out = x
        for block in self.blocks:
            out = block(x, mask)
        return self.lm_head(self.norm_final(out))


@mistake("DecoderOnlyTransformer", "the blocks are skipped: the head reads the embeddings directly. Run the "
         "embeddings through every block, in order, before norm_final and lm_head.")
class blocks_skipped(ref.DecoderOnlyTransformer):
    def forward(self, tokens):
        return self.lm_head(self.norm_final(self.embedding(tokens)))


@mistake("DecoderOnlyTransformer", "only the first block got the causal mask: the blocks after it read the future "
         "again, because attention in every block mixes positions. Give the same causal mask to every block.")
class causal_mask_in_first_block_only(ref.DecoderOnlyTransformer):
    def forward(self, tokens):
        mask = ref.causal_mask(tokens.shape[-1], device=tokens.device)
        x = self.embedding(tokens)
        for i, block in enumerate(self.blocks):
            x = block(x, mask if i == 0 else None)
        return self.lm_head(self.norm_final(x))


@mistake("DecoderOnlyTransformer", "norm_final is applied after every block; it belongs once, after the last block, "
         "right before lm_head (each pre-norm block normalises what enters its sub-layers by itself).")
class final_norm_after_every_block(ref.DecoderOnlyTransformer):
    def forward(self, tokens):
        mask = ref.causal_mask(tokens.shape[-1], device=tokens.device)
        x = self.embedding(tokens)
        for block in self.blocks:
            x = self.norm_final(block(x, mask))
        return self.lm_head(x)


# ---------------------------------------------------------------- DecoderBlock

def _post(block, x, memory, self_mask, memory_mask, *, self_kv=None, cross_kv="memory", residual=True):
    self_out = block.self_attn(x, x if self_kv is None else self_kv, self_mask)[0]
    x = block.norm1(x + self_out if residual else self_out)
    kv = memory if cross_kv == "memory" else x
    cross = block.cross_attn(x, kv, memory_mask if cross_kv == "memory" else None)[0]
    x = block.norm2(x + cross if residual else cross)
    return block.norm3(x + block.ff(x))


def _pre(block, x, memory, self_mask, memory_mask, *, cross_kv="memory", residual=True, norm_memory=False):
    h = block.norm1(x)
    x = x + block.self_attn(h, h, self_mask)[0]
    q = block.norm2(x)
    if cross_kv == "memory":
        kv, mask = (block.norm2(memory) if norm_memory else memory), memory_mask
    else:
        kv, mask = q, None
    cross = block.cross_attn(q, kv, mask)[0]
    x = x + cross if residual else cross
    return x + block.ff(block.norm3(x))


@mistake("DecoderBlock", "the self-attention ignores self_mask, so each target position reads the ones after it. "
         "Pass self_mask to self_attn.")
class self_attention_unmasked(ref.DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        return (_pre if self.norm_first else _post)(self, x, memory, None, memory_mask)


@mistake("DecoderBlock", "the cross-attention takes its keys and values from the decoder itself: it is a second "
         "self-attention and never reads the encoder. The queries come from x, the keys and values from memory: "
         "cross_attn(x, memory, memory_mask).")
class cross_attention_keys_from_decoder(ref.DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        return (_pre if self.norm_first else _post)(self, x, memory, self_mask, memory_mask, cross_kv="x")


@mistake("DecoderBlock", "the cross-attention ignores memory_mask, so it reads the padding of the source. Pass "
         "memory_mask to cross_attn.")
class memory_mask_ignored(ref.DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        return (_pre if self.norm_first else _post)(self, x, memory, self_mask, None)


@mistake("DecoderBlock", "the skip connection around the cross-attention is missing: add its output to x "
         "(x + CrossAttn(...)) instead of replacing x with it.")
class cross_attention_residual_missing(ref.DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        return (_pre if self.norm_first else _post)(self, x, memory, self_mask, memory_mask, residual=False)


@mistake("DecoderBlock", "with norm_first=True the memory is normalised too (by norm2); only the query side x goes "
         "through norm2: cross_attn(norm2(x), memory, ...). The encoder normalises its own output.")
class memory_normalised(ref.DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if not self.norm_first:
            return super().forward(x, memory, self_mask, memory_mask)
        return _pre(self, x, memory, self_mask, memory_mask, norm_memory=True)


@mistake("DecoderBlock", "the block ignores norm_first and always normalises after each addition (post-norm); with "
         "norm_first=True normalise what enters each sub-layer: x + SubLayer(norm(x)).")
class always_post_norm(ref.DecoderBlock):
    def forward(self, x, memory, self_mask=None, memory_mask=None):
        return _post(self, x, memory, self_mask, memory_mask)


# ---------------------------------------------------------------- EncoderDecoderTransformer

def _encdec(model, src, tgt, src_lengths, *, encoder_mask=True, cross_mask=True, causal=True, use_encoder=True,
            encoder_norm=True):
    pad = None if src_lengths is None else ref.padding_mask(src_lengths, src.shape[-1])
    memory = model.src_embedding(src)
    if use_encoder:
        for block in model.encoder:
            memory = block(memory, pad if encoder_mask else None)
    if encoder_norm:
        memory = model.encoder_norm(memory)
    self_mask = ref.causal_mask(tgt.shape[-1], device=tgt.device) if causal else None
    x = model.tgt_embedding(tgt)
    for block in model.decoder:
        x = block(x, memory, self_mask, pad if cross_mask else None)
    return model.lm_head(model.decoder_norm(x))


@mistake("EncoderDecoderTransformer", "src_lengths is ignored: the encoder and the cross-attention read the padding "
         "of the source. Build padding_mask(src_lengths, S) and give it to both.")
class ignores_src_padding(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encdec(self, src, tgt, src_lengths, encoder_mask=False, cross_mask=False)


@mistake("EncoderDecoderTransformer", "the padding mask reaches the encoder but not the cross-attention: the decoder "
         "still reads the source's padding. Pass it to every decoder block as memory_mask too.")
class padding_only_in_encoder(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encdec(self, src, tgt, src_lengths, cross_mask=False)


@mistake("EncoderDecoderTransformer", "the padding mask reaches the cross-attention but not the encoder: the real "
         "source tokens still read the padding inside the encoder. Give it to every encoder block too.")
class padding_only_in_cross_attention(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encdec(self, src, tgt, src_lengths, encoder_mask=False)


@mistake("EncoderDecoderTransformer", "the decoder's self-attention has no causal mask, so each target position reads "
         "the target tokens after it (under teacher forcing: the answer). Pass causal_mask(T) as self_mask.")
class decoder_not_causal(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encdec(self, src, tgt, src_lengths, causal=False)


@mistake("EncoderDecoderTransformer", "the decoder reads the source embeddings: the encoder blocks are skipped. The "
         "memory is the output of the last encoder block (then encoder_norm).")
class encoder_skipped(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encdec(self, src, tgt, src_lengths, use_encoder=False)


@mistake("EncoderDecoderTransformer", "encoder_norm is missing: with norm_first=True the memory is the last encoder "
         "block's output passed through encoder_norm.")
class no_encoder_norm(ref.EncoderDecoderTransformer):
    def forward(self, src, tgt, src_lengths=None):
        return _encdec(self, src, tgt, src_lengths, encoder_norm=False)


# ---------------------------------------------------------------- generate

def _loop(model, prompt, max_new_tokens, choose, *, crop=True, feed_back=None, position=-1):
    """A generation loop with one detail changed. `choose(logits)` picks (B, 1); `feed_back(logits, chosen)`
    gives what is appended to the model's context when it differs from what is returned."""
    was_training = model.training
    model.eval()
    max_len = model.embedding.max_len
    shown = context = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(context[:, -max_len:] if crop else context)[:, position, :]
            chosen = choose(logits)
            shown = torch.cat([shown, chosen], dim=1)
            context = torch.cat([context, chosen if feed_back is None else feed_back(logits, chosen)], dim=1)
    model.train(was_training)
    return shown


def _sampler(temperature, top_k, generator, *, divide=True, k_extra=0):
    def choose(logits):
        if temperature == 0:
            return logits.argmax(-1, keepdim=True)
        if divide is not None:
            logits = logits / temperature if divide else logits * temperature
        if top_k is not None and top_k + k_extra < logits.shape[-1]:
            kth = torch.topk(logits, top_k + k_extra, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)
    return choose


@mistake("generate", "at temperature 1 your tokens are always the argmax: greedy decoding is for temperature=0 only. "
         "Otherwise draw the next token from softmax(logits / temperature) with torch.multinomial(..., generator=generator).")
def always_argmax(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, max_new_tokens, lambda logits: logits.argmax(-1, keepdim=True))


@mistake("generate", "the sampled token is returned, but the argmax is fed back into the model: the next step must "
         "read the token you actually chose, so append that one to the context.")
def feeds_back_argmax(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator),
                 feed_back=lambda logits, chosen: logits.argmax(-1, keepdim=True))


@mistake("generate", "the temperature has no effect on your samples: divide the logits by the temperature before the "
         "softmax (below 1 sharpens the distribution, above 1 flattens it).")
def ignores_temperature(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator, divide=None))


@mistake("generate", "the logits are multiplied by the temperature; divide them by it, so that a high temperature "
         "flattens the distribution and a low one sharpens it.")
def multiplies_by_temperature(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator, divide=False))


@mistake("generate", "top-k keeps k + 1 tokens: keep exactly the k largest logits of each row (the k-th largest "
         "itself included) and set the others to -inf.")
def top_k_keeps_one_more(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator, k_extra=1))


@mistake("generate", "the context is not cropped: once the sequence is longer than max_len the model sees positions "
         "it has no encoding for. Feed it only the last max_len tokens, tokens[:, -max_len:].")
def no_cropping(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator), crop=False)


@mistake("generate", "the next token is chosen from the logits of the first position; the prediction of what "
         "follows the sequence is at the last position, logits[:, -1, :].")
def first_position_logits(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator), position=0)


# ---------------------------------------------------------------- forward_with_cache

def _cached(model, tokens, cache, *, mask="offset", restart_positions=False, shared=False, values_from_keys=False,
            new_first=False, keep_new_only=False, post_norm_reads_norm1=False, scaled=True):
    """forward_with_cache with one detail changed. Its cache is a list of (K, V) per layer, each (B, n_heads, T,
    d_head); one (K, V) for the whole model when `shared`."""
    B, T_new = tokens.shape
    T_past = 0 if cache is None else (cache[0] if shared else cache[0][0]).shape[-2]
    T = T_past + T_new
    if T > model.embedding.max_len:
        raise ValueError(f"{T} positions, more than max_len={model.embedding.max_len}")
    d_model = model.embedding.embed.embedding_dim
    first = 0 if restart_positions else T_past
    x = model.embedding.embed(tokens) * (math.sqrt(d_model) if scaled else 1.0) + model.embedding.pe[first:first + T_new]
    if mask == "offset":
        allowed = ref.causal_mask(T_new, T, device=tokens.device)
    elif mask == "none_with_cache":
        allowed = ref.causal_mask(T_new, device=tokens.device) if cache is None else None
    else:  # "first_rows"
        allowed = ref.causal_mask(T, device=tokens.device)[:T_new]
    kept = []
    for layer, block in enumerate(model.blocks):
        attn = block.attn
        h = block.norm1(x) if block.norm_first or post_norm_reads_norm1 else x
        Q, K, V = (W(h).view(B, T_new, attn.n_heads, -1).transpose(1, 2) for W in (attn.W_q, attn.W_k, attn.W_v))
        new = (K, V)
        if cache is not None:
            K_past, V_past = cache if shared else cache[layer]
            if new_first:
                K, V = torch.cat([K, K_past], dim=2), torch.cat([V, V_past], dim=2)
            else:
                K, V = torch.cat([K_past, K], dim=2), torch.cat([V_past, V], dim=2)
        keys, values = new if keep_new_only else (K, V)
        kept.append((keys, keys if values_from_keys else values))
        heads, _ = ref.masked_attention(Q, K, V, allowed)
        out = attn.W_o(heads.transpose(1, 2).reshape(B, T_new, d_model))
        if block.norm_first:
            x = x + out
            x = x + block.ff(block.norm2(x))
        else:
            x = block.norm1(x + out)
            x = block.norm2(x + block.ff(x))
    return model.lm_head(model.norm_final(x)), (kept[-1] if shared else kept)


@mistake("forward_with_cache", "the new tokens get no mask once the cache is not empty: one new token may read every "
         "position, but fed several at a time onto a cache, each new token reads the new tokens after it. With a cache "
         "the mask is causal_mask(T_new, T_past + T_new): new query i reads the keys up to position T_past + i.")
def no_mask_with_cache(model, tokens, cache=None):
    return _cached(model, tokens, cache, mask="none_with_cache")


@mistake("forward_with_cache", "the mask is the first T_new rows of causal_mask(T_past + T_new): those rows are the "
         "queries of positions 0, 1, ..., so the new tokens read only the first keys. The new tokens are the last "
         "T_new positions: causal_mask(T_new, T_past + T_new) puts them there with its offset.")
def mask_rows_from_the_start(model, tokens, cache=None):
    return _cached(model, tokens, cache, mask="first_rows")


@mistake("forward_with_cache", "the positional encoding starts again at position 0 for every piece: a token fed after "
         "T_past cached ones sits at position T_past, so add the rows pe[T_past : T_past + T_new], not the first ones.")
def positions_restart(model, tokens, cache=None):
    return _cached(model, tokens, cache, restart_positions=True)


@mistake("forward_with_cache", "every layer reads the same cached keys and values, one pair for the whole model: each "
         "layer has keys and values of its own, computed from what enters that layer. Keep one (K, V) per layer.")
def one_cache_for_all_layers(model, tokens, cache=None):
    return _cached(model, tokens, cache, shared=True)


@mistake("forward_with_cache", "the cache gives back the keys where the values belong: the cached positions' values "
         "come out equal to their keys. Keep the values (from W_v) beside the keys (from W_k).")
def values_are_the_keys(model, tokens, cache=None):
    return _cached(model, tokens, cache, values_from_keys=True)


@mistake("forward_with_cache", "the new keys and values go before the cached ones: the mask reads the key columns in "
         "the order of the positions, so the cached positions come first and the new ones after them.")
def new_keys_first(model, tokens, cache=None):
    return _cached(model, tokens, cache, new_first=True)


@mistake("forward_with_cache", "the cache you return holds the keys and values of the new tokens only: it must hold "
         "every position so far, the cached ones and the new ones, for the next call to read.")
def cache_holds_new_positions_only(model, tokens, cache=None):
    return _cached(model, tokens, cache, keep_new_only=True)


@mistake("forward_with_cache", "in post-norm (norm_first=False) the attention reads x itself, not norm1(x): there norm1 "
         "comes after the skip connection, x = norm1(x + attention). Only pre-norm normalises what enters the "
         "attention, so only there are the cached keys and values made from norm1(x).")
def post_norm_attention_reads_norm1(model, tokens, cache=None):
    return _cached(model, tokens, cache, post_norm_reads_norm1=True)


@mistake("forward_with_cache", "the token embeddings are not scaled: notebook 01's layer multiplies embed(tokens) by "
         "sqrt(d_model) before it adds the positional rows.")
def embedding_not_scaled(model, tokens, cache=None):
    return _cached(model, tokens, cache, scaled=False)


# ---------------------------------------------------------------- generate_cached

def _cached_loop(model, prompt, max_new_tokens, choose, *, hand_on=True, keep_first_cache=False, first_position=-1):
    """A cached generation loop with one detail changed; it calls the notebook's forward_with_cache by that name (its
    check and hidden test put a stand-in there)."""
    if prompt.shape[1] + max_new_tokens > model.embedding.max_len:
        raise ValueError("longer than max_len: use generate")
    was_training = model.training
    model.eval()
    tokens, fed, cache = prompt, prompt, None
    with torch.no_grad():
        for step in range(max_new_tokens):
            logits, returned = forward_with_cache(model, fed, cache if hand_on else None)
            cache = returned if cache is None or not keep_first_cache else cache
            chosen = choose(logits[:, first_position if step == 0 else -1, :])
            tokens = torch.cat([tokens, chosen], dim=1)
            fed = chosen
    model.train(was_training)
    return tokens


@mistake("generate_cached", "each new token goes into forward_with_cache without the cache, so the model sees that "
         "token alone, at position 0. Hand every call after the first the cache the call before it returned.")
def cache_not_handed_on(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator), hand_on=False)


@mistake("generate_cached", "every step hands forward_with_cache the prompt's cache, never the newer ones: the model "
         "sees the prompt and the newest token, and none of the tokens between. Keep the cache each call returns.")
def prompt_cache_kept(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator), keep_first_cache=True)


@mistake("generate_cached", "the first new token is chosen from the logits of the prompt's first position; what "
         "follows the prompt is predicted at its last position, logits[:, -1, :].")
def prompt_first_position(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_loop(model, prompt, max_new_tokens, _sampler(temperature, top_k, generator), first_position=0)


@mistake("generate_cached", "at a temperature above 0 your tokens are always the argmax: greedy decoding is for "
         "temperature=0 only. Otherwise draw as generate does, torch.multinomial(probabilities, 1, "
         "generator=generator).")
def always_argmax_cached(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return _cached_loop(model, prompt, max_new_tokens, lambda logits: logits.argmax(-1, keepdim=True))

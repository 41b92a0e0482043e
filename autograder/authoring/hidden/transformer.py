"""Hidden tests for notebook 05: fresh configurations whose parameters get fresh weights by name on each side (the names
and shapes themselves are an observation), outputs on every device and dtype, in eval mode (with dropout > 0 too), at
every depth from 1 to 4 and for sequences of one token, logits judged up to a constant at each position (so
log-probabilities pass); `DecoderBlock` with stand-ins in its parts, as notebook 04's block test;
`EncoderDecoderTransformer` with torch's decoder layer in place of each DecoderBlock, so that a mistake there costs
points once; `generate` on hand-made toy language models (one with dropout), its samples judged against the exact
probabilities the grader computes itself; `forward_with_cache` on models made of PyTorch's layers, fed in pieces;
`generate_cached` on the toy models with a stand-in for forward_with_cache, token for token."""
from dataclasses import dataclass, field

import torch

from autograder.authoring.hidden.attention_block import case_seed, described, fresh_weights, with_stand_ins
from autograder.authoring.hidden.models import StandInDecoderBlock, pair_probabilities
from autograder.authoring.hidden.observe import HiddenTestFailed, Observations, Rule, describe, generator, grid, hidden_test
from autograder.authoring.reference.masking import causal_mask, padding_mask  # notebook 03: loaded in graded kernels already
from autograder.authoring.reference.positional_encoding import positional_encoding  # notebook 01: so is this
from course.checks.stand_ins import earlier_pieces_replaced
from course.checks.transformer import (DECODER_BLOCK_PARTS, SAMPLES, SAMPLING_TOLERANCE, LanguageModelParts,
                                       RecomputingForwardWithCache, _joint_frequencies, toy_model)
from course.device import available_devices


def _int(g, low, high) -> int:
    return int(torch.randint(low, high, (1,), generator=g))


def _shape(tensor) -> str:
    return "None" if tensor is None else str(tuple(tensor.shape))


def _on(tensor, device, dtype=None):
    """A copy on `device` (in `dtype`): a change in place by the code under test stays with this call."""
    if tensor is None:
        return None
    return tensor.to(device, dtype, copy=True) if dtype is not None else tensor.to(device, copy=True)


def _dropout(config: dict, dropout: float) -> tuple[dict, str]:
    """`config` with `dropout` when it is above 0, and the words that say the model runs in eval mode."""
    return ({**config, "dropout": dropout}, " in eval mode") if dropout else (config, "")


def observe_decoder_only_transformer(DecoderOnlyTransformer, seed: int = 501) -> Observations:
    seen = Observations()
    g = generator(seed)
    # Every depth from 1 to 4 in both norm orders (so a mask, a norm or an order applied in only some blocks shows),
    # sequences of one token and of max_len tokens, and dropout > 0 in eval mode (no dropout at all).
    cases = [(1, True, 0.0, "some"), (2, False, 0.0, "max_len"), (3, True, 0.0, "max_len"), (4, False, 0.2, "some"),
             (3, False, 0.0, "one"), (2, True, 0.3, "max_len"), (4, True, 0.0, "some"), (1, False, 0.0, "one")]
    for case, (n_layers, norm_first, dropout, length) in enumerate(cases, start=1):
        n_heads = _int(g, 1, 4)
        config = dict(vocab_size=_int(g, 2, 30), d_model=n_heads * _int(g, 2, 7), n_heads=n_heads, d_ff=_int(g, 4, 40),
                      n_layers=n_layers, max_len=_int(g, 2, 12), norm_first=norm_first)
        config, mode = _dropout(config, dropout)
        weights_seed = case_seed(g)
        T = {"one": 1, "max_len": config["max_len"], "some": _int(g, 2, config["max_len"] + 1)}[length]
        tokens = torch.randint(0, config["vocab_size"], (_int(g, 1, 4), T), generator=g)
        what = f"case {case}: {described('DecoderOnlyTransformer', config)}{mode}"
        model = fresh_weights(seen, DecoderOnlyTransformer(**config).double(), what, weights_seed).eval()
        for device, dtype in grid():
            logits = model.to(device, dtype)(_on(tokens, device))
            seen.logits(f"logits of {what} for tokens {_shape(tokens)} ({device.type}, {dtype})", logits, dtype)
    return seen


DECODER_STAND_INS = "with stand-ins for self_attn, cross_attn, ff and norm1-3"


DECODER_STAND_INS = "with stand-ins for self_attn, cross_attn, ff and norm1-3"


def observe_decoder_block(DecoderBlock, seed: int = 502) -> Observations:
    """With stand-ins built on torch's own layers in self_attn, cross_attn, ff and norm1-3, as notebook 04's block
    test does: it grades how the block joins its parts (a mistake in a part costs points in that part's test)."""
    """With stand-ins built on torch's own layers in self_attn, cross_attn, ff and norm1-3, as notebook 04's block
    test does: it grades how the block joins its parts (a mistake in a part costs points in that part's test)."""
    seen = Observations()
    g = generator(seed)
    # (T, S or None for S = T, norm_first, dropout): as many memory positions as targets in both norm orders (a mask
    # given to the wrong attention fits), one target, one memory position, dropout > 0 in eval mode.
    cases = [(None, None, False, 0.0), (None, None, True, 0.0), ("some", "some", False, 0.0),
             ("some", "some", True, 0.0), (1, 5, True, 0.0), (4, 1, False, 0.0), ("some", "some", True, 0.3),
             ("some", "some", False, 0.4)]
    for case, (T, S, norm_first, dropout) in enumerate(cases, start=1):
        n_heads = _int(g, 1, 4)
        config, mode = _dropout(dict(d_model=n_heads * _int(g, 2, 7), n_heads=n_heads, d_ff=_int(g, 4, 40),
                                     norm_first=norm_first), dropout)
        weights_seed = case_seed(g)
        B = _int(g, 1, 4)
        T = _int(g, 1, 9) if T in (None, "some") else T
        S = T if S is None else _int(g, 1, 9) if S == "some" else S
        x = torch.randn(B, T, config["d_model"], generator=g, dtype=torch.float64)
        memory = torch.randn(B, S, config["d_model"], generator=g, dtype=torch.float64)
        masks = [(None, None), (causal_mask(T), padding_mask(torch.randint(1, S + 1, (B,), generator=g), S)),
                 (torch.rand(B, T, T, generator=g) < 0.7, torch.rand(B, T, S, generator=g) < 0.7)]
        what = f"case {case}: {described('DecoderBlock', config)}{mode} {DECODER_STAND_INS}"
        block = with_stand_ins(seen, what, DecoderBlock, config, **DECODER_BLOCK_PARTS)
        block = fresh_weights(seen, block.double(), what, weights_seed).eval()
        for self_mask, memory_mask in masks:
            for device, dtype in grid():
                out = block.to(device, dtype)(_on(x, device, dtype), _on(memory, device, dtype), _on(self_mask, device),
                                              _on(memory_mask, device))
                seen.close(f"{what}, x {_shape(x)}, memory {_shape(memory)}, masks {_shape(self_mask)}/"
                           f"{_shape(memory_mask)} ({device.type}, {dtype})", out, dtype)
    return seen


def encoder_decoder_with_stand_ins(EncoderDecoderTransformer, config: dict) -> torch.nn.Module:
    """`EncoderDecoderTransformer(**config)` with torch's decoder layer in place of every DecoderBlock: built with
    the stand-in class in place of the notebook's own, then put in every place of `decoder` in case the model made
    its blocks another way. A mistake in DecoderBlock costs points in its own test only."""
    with earlier_pieces_replaced(EncoderDecoderTransformer.__init__, DecoderBlock=StandInDecoderBlock):
        model = EncoderDecoderTransformer(**config)
    for i in range(len(model.decoder)):
        model.decoder[i] = StandInDecoderBlock(config["d_model"], config["n_heads"], config["d_ff"],
                                               norm_first=config["norm_first"])
    return model


def observe_encoder_decoder_transformer(EncoderDecoderTransformer, seed: int = 503) -> Observations:
    seen = Observations()
    g = generator(seed)
    # (encoder layers, decoder layers, norm_first, dropout, T): depths 1 to 3 on each side in both norm orders (a
    # mask or a norm in only some blocks shows), a target of one token, dropout > 0 in eval mode.
    cases = [(1, 2, True, 0.0, "some"), (2, 1, False, 0.0, "some"), (3, 3, True, 0.0, "some"),
             (2, 3, False, 0.0, 1), (3, 1, True, 0.3, "some"), (1, 1, False, 0.2, "some")]
    for case, (n_encoder_layers, n_decoder_layers, norm_first, dropout, T) in enumerate(cases, start=1):
        n_heads = _int(g, 1, 4)
        config = dict(src_vocab_size=_int(g, 2, 30), tgt_vocab_size=_int(g, 2, 30), d_model=n_heads * _int(g, 2, 6),
                      n_heads=n_heads, d_ff=_int(g, 4, 30), n_encoder_layers=n_encoder_layers,
                      n_decoder_layers=n_decoder_layers, max_len=_int(g, 3, 11), norm_first=norm_first)
        config, mode = _dropout(config, dropout)
        weights_seed = case_seed(g)
        B, S = _int(g, 1, 4), _int(g, 2, config["max_len"] + 1)
        T = _int(g, 2, config["max_len"] + 1) if T == "some" else T
        src = torch.randint(0, config["src_vocab_size"], (B, S), generator=g)
        tgt = torch.randint(0, config["tgt_vocab_size"], (B, T), generator=g)
        what = (f"case {case}: {described('EncoderDecoderTransformer', config)}{mode}, torch's decoder layer in place "
                "of each DecoderBlock")
        model = fresh_weights(seen, encoder_decoder_with_stand_ins(EncoderDecoderTransformer, config).double(), what,
                              weights_seed).eval()
        lengths = torch.randint(1, S + 1, (B,), generator=g)
        lengths[0] = 1  # a source of one real token
        for src_lengths in (None, lengths):
            for device, dtype in grid():
                logits = model.to(device, dtype)(_on(src, device), _on(tgt, device), _on(src_lengths, device))
                seen.logits(f"{what}, src {_shape(src)}, tgt {_shape(tgt)}, src_lengths "
                            f"{None if src_lengths is None else src_lengths.tolist()} ({device.type}, {dtype})",
                            logits, dtype)
    return seen


# ---- generate ----

@dataclass(frozen=True, eq=False)
class FollowsDistribution(Rule):
    """Sampled pair frequencies within `tolerance` of the exact `probabilities`. The rule that judges is the
    reference's, made in the grader's process, so the probabilities are computed there, never in the student's
    kernel; the reference's own (noisy) frequencies are not used."""
    probabilities: torch.Tensor = field(repr=False)
    tolerance: float = SAMPLING_TOLERANCE

    def judge(self, what, student, reference):
        actual = student.get("tensor") if isinstance(student, dict) else None
        if not isinstance(actual, torch.Tensor) or tuple(actual.shape) != tuple(self.probabilities.shape):
            return f"{what}: expected frequencies of shape {tuple(self.probabilities.shape)}, got {describe(student)}"
        gap = (actual.double() - self.probabilities.double()).abs().max().item()
        if not gap <= self.tolerance:  # NaN fails too
            return f"{what}: the samples do not follow the model's distribution (largest gap {gap:.3f})"
        return None


def _toy(g, vocab_size: int, max_len: int, follow: float) -> dict:
    """The weights of a hand-made toy language model (course.checks.transformer.ToyLanguageModel): the next token
    depends on the last one, on the first of the context window and on the window's length, so a context that is
    cropped wrongly, or a token fed back other than the one drawn, changes the distribution."""
    return {"follow": follow * torch.randn(vocab_size, vocab_size, generator=g, dtype=torch.float64),
            "start": 0.5 * torch.randn(vocab_size, vocab_size, generator=g, dtype=torch.float64),
            "position": 0.5 * torch.randn(4 * max_len + 8, vocab_size, generator=g, dtype=torch.float64),
            "max_len": max_len}


def _tokens(out, what: str) -> torch.Tensor:
    if not isinstance(out, torch.Tensor) or out.dim() != 2:
        raise HiddenTestFailed(f"{what}: expected a LongTensor (B, T0 + max_new_tokens), got {describe(out)}")
    return out


def _modes(seen: Observations, model, what: str, was_training: bool) -> None:
    """What the toy model recorded of its calls during one generate, and the mode generate left it in."""
    seen.claim(f"{what}: the model ran in training mode (dropout on); call model.eval() before generating",
               not any(training for training, _ in model.calls))
    seen.claim(f"{what}: the model ran with gradients on; wrap its calls in torch.no_grad()",
               not any(grad for _, grad in model.calls))
    seen.claim(f"{what}: generate left a model that was {'training' if was_training else 'in eval mode'} in "
               f"{'eval' if was_training else 'training'} mode; put it back in the mode it was in",
               model.training == was_training)


def _sampled_pairs(seen: Observations, generate, model, fixture: dict, prompt, cases, seed: int) -> None:
    V, T0 = fixture["follow"].shape[0], prompt.shape[1]
    for temperature, top_k in cases:
        model.eval()
        probabilities = pair_probabilities(model, prompt, temperature, top_k if top_k and top_k < V else None)
        what = (f"sampled pairs at temperature {temperature}, top_k={top_k} (a model of {V} tokens with max_len "
                f"{fixture['max_len']}, a prompt of {T0} tokens, {SAMPLES} samples)")
        out = _tokens(generate(model, prompt.expand(SAMPLES, -1).clone(), 2, temperature=temperature, top_k=top_k,
                               generator=torch.Generator().manual_seed(seed)), what)
        seen.judged_by(what, _joint_frequencies(out[:, -2:], V), FollowsDistribution(probabilities))


def observe_generate(generate, seed: int = 504) -> Observations:
    seen = Observations()
    g = generator(seed)
    V, max_len = _int(g, 4, 9), _int(g, 3, 7)
    fixture = _toy(g, V, max_len, follow=2.0)
    # Greedy (and top_k=1), prompts shorter and longer than max_len; the model starts in training mode with
    # dropout, so a generate without eval() differs.
    for T0, new in [(1, 4), (max_len - 1, 6), (max_len + 4, 3)]:
        prompt = torch.randint(0, V, (3, T0), generator=g)
        for device, dtype in grid():
            model = toy_model(fixture, device, dtype, dropout=0.3).train()
            what = f"greedy generate, prompt {_shape(prompt)}, {new} new tokens ({device.type}, {dtype})"
            seen.exact(what, _tokens(generate(model, _on(prompt, device), new, temperature=0), what))
            _modes(seen, model, what, was_training=True)
            model.train()
            temperature = 1.0 if T0 == 1 else 0.4
            what = (f"generate with top_k=1 at temperature {temperature}, prompt {_shape(prompt)}, {new} new tokens "
                    f"({device.type}, {dtype})")
            seen.exact(what, _tokens(generate(model, _on(prompt, device), new, temperature=temperature, top_k=1,
                                              generator=torch.Generator(device).manual_seed(3)), what))
    prompt = torch.randint(0, V, (2, 3), generator=g)
    seen.exact(f"generate with max_new_tokens=0, prompt {_shape(prompt)}: the prompt itself",
               _tokens(generate(toy_model(fixture), prompt.clone(), 0, temperature=0), "max_new_tokens=0"))
    # Seeded sampling on every device: reproducible, the prompt kept, the model left in eval mode.
    for device in available_devices():
        model = toy_model(fixture, device).eval()
        prompt = torch.randint(0, V, (4, 2), generator=g)
        what = f"seeded sampling on {device.type}, prompt {_shape(prompt)}, {2 * max_len} new tokens"
        first, second = (_tokens(generate(model, _on(prompt, device), 2 * max_len, temperature=1.3, top_k=V - 1,
                                          generator=torch.Generator(device).manual_seed(21)), what) for _ in range(2))
        seen.claim(f"{what}: two calls with generators seeded alike gave different tokens", torch.equal(first, second))
        seen.exact(f"{what}: the shape of the result", tuple(first.shape), show=True)
        seen.exact(f"{what}: the first {prompt.shape[1]} tokens of each row (the prompt)", first[:, :prompt.shape[1]])
        _modes(seen, model, what, was_training=False)
    # The distribution of two sampled tokens, judged against the exact probabilities.
    model = toy_model(fixture)
    prompt = torch.randint(0, V, (1, max_len - 1), generator=g)
    _sampled_pairs(seen, generate, model, fixture, prompt, [(1.0, None), (0.6, None), (1.8, 2), (0.9, V), (1.2, V + 2)],
                   seed=8)
    # The same on a toy model whose next token depends strongly on the last one, with a prompt longer than max_len:
    # the token that was drawn must be the one fed back, through the crop.
    fixture = _toy(g, 5, 4, follow=1.5)
    prompt = torch.randint(0, 5, (1, fixture["max_len"] + 2), generator=g)
    _sampled_pairs(seen, generate, toy_model(fixture), fixture, prompt, [(1.0, None), (0.7, 3)], seed=9)
    return seen


test_decoder_only_transformer = hidden_test(observe_decoder_only_transformer)
test_decoder_block = hidden_test(observe_decoder_block)
test_encoder_decoder_transformer = hidden_test(observe_encoder_decoder_transformer)
test_generate = hidden_test(observe_generate)


# ---- forward_with_cache ----

def _pieces_of(lengths) -> list[tuple[int, int]]:
    return [(sum(lengths[:i]), n) for i, n in enumerate(lengths)]


def observe_forward_with_cache(forward_with_cache, seed: int = 505) -> Observations:
    """On models made of PyTorch's layers with the exercise's names (course.checks.transformer.LanguageModelParts),
    fresh sizes and weights by name: the logits of every piece (pieces of one token and of several, onto an empty and
    a full cache) on every device and dtype, whether the keys and values of cached positions were projected again,
    and the ValueError past max_len."""
    seen = Observations()
    g = generator(seed)
    # (n_layers, norm_first, the lengths of the pieces, positions left over in max_len): depths 1 to 4 in both norm
    # orders, several tokens onto a cache of one (a mask or an order of keys that forgets the cache shows), one token
    # at a time, a prompt alone, and pieces that fill max_len, after which one more token must raise.
    cases = [(1, True, [3, 1, 2], 2), (2, False, [1, 1, 1, 4], 0), (3, True, [5, 2, 1, 3], 1), (2, True, [6], 0),
             (4, False, [2, 3, 1], 3), (2, False, [4, 1, 1, 2], 0)]
    for case, (n_layers, norm_first, lengths, spare) in enumerate(cases, start=1):
        n_heads = _int(g, 1, 4)
        config = dict(vocab_size=_int(g, 2, 30), d_model=n_heads * _int(g, 2, 7), n_heads=n_heads, d_ff=_int(g, 4, 40),
                      n_layers=n_layers, max_len=sum(lengths) + spare, norm_first=norm_first)
        weights_seed = case_seed(g)
        tokens = torch.randint(0, config["vocab_size"], (_int(g, 1, 4), sum(lengths)), generator=g)
        what = f"case {case}: forward_with_cache on {described('DecoderOnlyTransformer', config)}"
        model = LanguageModelParts(**config, pe=positional_encoding(config["max_len"], config["d_model"]))
        model = fresh_weights(seen, model.double(), what, weights_seed).eval()
        for device, dtype in grid():
            model.to(device, dtype)
            cache = None
            for start, n in _pieces_of(lengths):
                model.projected.clear()
                result = forward_with_cache(model, _on(tokens[:, start:start + n], device), cache)
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise HiddenTestFailed(f"{what}: expected a tuple (logits, cache), got {describe(result)}")
                logits, cache = result
                piece = f"tokens {start}..{start + n - 1} of {_shape(tokens)} after {start} cached ({device.type}, {dtype})"
                seen.logits(f"{what}: the logits of {piece}", logits, dtype)
                seen.claim(f"{what}: for {piece}, attn.W_k or attn.W_v projected more positions than the {n} new ones; "
                           "the cache keeps the keys and values of the earlier positions",
                           not model.projected or max(model.projected) <= n)
            if spare == 0:
                one_more = _on(tokens[:, :1], device)
                seen.raises(f"{what}: one more token onto a cache of max_len positions ({device.type}, {dtype})",
                            lambda: forward_with_cache(model, one_more, cache))
        too_long = torch.randint(0, config["vocab_size"], (1, config["max_len"] + 1), generator=g)
        seen.raises(f"{what}: {config['max_len'] + 1} tokens and no cache", lambda: forward_with_cache(model, too_long))
    return seen


# ---- generate_cached ----

def observe_generate_cached(generate_cached, seed: int = 506) -> Observations:
    """On hand-made toy language models (one with dropout), with course.checks.transformer.RecomputingForwardWithCache
    in the place of forward_with_cache on both sides (its cache is the tokens so far): greedy tokens on every device
    and dtype, seeded sampling with and without top-k on every device (token for token: the reference draws as generate
    does), the cache handed on and every position fed once, the prompt alone for max_new_tokens=0, the ValueError past
    max_len and none at it, eval mode, no_grad and the mode restored."""
    seen = Observations()
    g = generator(seed)
    V, max_len = _int(g, 4, 9), _int(g, 6, 12)
    fixture = _toy(g, V, max_len, follow=2.0)
    stand_in = RecomputingForwardWithCache()
    with earlier_pieces_replaced(generate_cached, forward_with_cache=stand_in):
        for T0, new in [(1, max_len - 1), (3, 4), (max_len - 2, 1)]:
            prompt = torch.randint(0, V, (3, T0), generator=g)
            for device, dtype in grid():
                model = toy_model(fixture, device, dtype, dropout=0.3).train()
                what = f"greedy generate_cached, prompt {_shape(prompt)}, {new} new tokens ({device.type}, {dtype})"
                stand_in.clear()
                seen.exact(what, _tokens(generate_cached(model, _on(prompt, device), new, temperature=0), what))
                _modes(seen, model, what, was_training=True)
                seen.claim(f"{what}: each call of forward_with_cache should get the cache the call before returned "
                           "(None the first time), and each position should go in once",
                           stand_in.wiring(T0, new) is None)
        for device in available_devices():
            model = toy_model(fixture, device).eval()
            for T0, new, temperature, top_k, draw in [(2, max_len - 2, 1.2, None, 21), (1, 5, 0.7, 3, 22),
                                                      (3, 4, 1.5, V, 23)]:
                prompt = torch.randint(0, V, (4, T0), generator=g)
                what = (f"generate_cached sampling at temperature {temperature}, top_k={top_k}, prompt {_shape(prompt)}, "
                        f"{new} new tokens, a generator seeded {draw} on {device.type}")
                stand_in.clear()
                seen.exact(what, _tokens(generate_cached(model, _on(prompt, device), new, temperature=temperature,
                                                         top_k=top_k, generator=torch.Generator(device).manual_seed(draw)),
                                         what))
                _modes(seen, model, what, was_training=False)
        model = toy_model(fixture)
        prompt = torch.randint(0, V, (2, 3), generator=g)
        seen.exact(f"generate_cached with max_new_tokens=0, prompt {_shape(prompt)}: the prompt itself",
                   _tokens(generate_cached(model, prompt.clone(), 0, temperature=0), "max_new_tokens=0"))
        seen.raises(f"generate_cached with a prompt of 3 tokens and {max_len - 2} new ones, max_len {max_len}",
                    lambda: generate_cached(model, prompt.clone(), max_len - 2, temperature=0))
        seen.raises(f"generate_cached with a prompt of 3 tokens and {max_len - 3} new ones, max_len {max_len}",
                    lambda: generate_cached(model, prompt.clone(), max_len - 3, temperature=0))
    return seen


test_forward_with_cache = hidden_test(observe_forward_with_cache)
test_generate_cached = hidden_test(observe_generate_cached)

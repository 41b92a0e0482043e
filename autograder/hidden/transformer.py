"""Hidden tests for notebook 05: fresh configurations, the student's weights copied into the reference by name,
outputs compared on every device and dtype; `generate` against the reference on a fresh reference model."""
import torch

from autograder.hidden.models import pair_probabilities, random_state
from autograder.hidden.compare import HiddenTestFailed, assert_equal, assert_matches, generator, grid
from autograder.reference import transformer as ref
from course.checks.transformer import SAMPLING_TOLERANCE, _joint_frequencies, toy_model
from course.device import available_devices


def _copy_into_reference(student, reference, what: str, g) -> None:
    """Random values into the student's parameters, then the same values into the reference, by name."""
    state = random_state(reference, g)
    own = dict(student.named_parameters())
    if set(own) != set(state):
        missing, extra = sorted(set(state) - set(own)), sorted(set(own) - set(state))
        raise HiddenTestFailed(f"{what}: parameter names differ from the exercise's (missing {missing[:4]}, "
                               f"unexpected {extra[:4]})")
    with torch.no_grad():
        for name, p in own.items():
            if tuple(p.shape) != tuple(state[name].shape):
                raise HiddenTestFailed(f"{what}: {name} has shape {tuple(p.shape)}, expected {tuple(state[name].shape)}")
            p.copy_(state[name])
    reference.load_state_dict({k: v.detach().clone() for k, v in student.state_dict().items() if k in state},
                              strict=False)


def _int(g, low, high) -> int:
    return int(torch.randint(low, high, (1,), generator=g))


def test_decoder_only_transformer(DecoderOnlyTransformer, trials: int = 3, seed: int = 501) -> None:
    g = generator(seed)
    for trial in range(trials):
        n_heads = _int(g, 1, 4)
        config = dict(vocab_size=_int(g, 2, 30), d_model=n_heads * _int(g, 2, 7), n_heads=n_heads, d_ff=_int(g, 4, 40),
                      n_layers=_int(g, 1, 4), max_len=_int(g, 2, 12), norm_first=trial % 2 == 0)
        student, reference = DecoderOnlyTransformer(**config).double(), ref.DecoderOnlyTransformer(**config).double()
        _copy_into_reference(student, reference, f"DecoderOnlyTransformer({config})", g)
        tokens = torch.randint(0, config["vocab_size"], (_int(g, 1, 4), _int(g, 1, config["max_len"] + 1)), generator=g)
        for device, dtype in grid():
            s, r = student.to(device, dtype).eval(), reference.to(device, dtype).eval()
            t = tokens.to(device)
            assert_matches(f"logits of {config} for tokens {tuple(tokens.shape)} ({device.type}, {dtype})", s(t),
                           r(t).detach(), dtype)


def test_decoder_block(DecoderBlock, trials: int = 4, seed: int = 502) -> None:
    g = generator(seed)
    for trial in range(trials):
        n_heads = _int(g, 1, 4)
        config = dict(d_model=n_heads * _int(g, 2, 7), n_heads=n_heads, d_ff=_int(g, 4, 40), norm_first=trial % 2 == 1)
        student, reference = DecoderBlock(**config).double(), ref.DecoderBlock(**config).double()
        _copy_into_reference(student, reference, f"DecoderBlock({config})", g)
        B, T, S = _int(g, 1, 4), _int(g, 1, 9), _int(g, 1, 9)
        x = torch.randn(B, T, config["d_model"], generator=g, dtype=torch.float64)
        memory = torch.randn(B, S, config["d_model"], generator=g, dtype=torch.float64)
        masks = [(None, None), (ref.causal_mask(T), ref.padding_mask(torch.randint(1, S + 1, (B,), generator=g), S)),
                 (torch.rand(B, T, T, generator=g) < 0.7, torch.rand(B, T, S, generator=g) < 0.7)]
        for self_mask, memory_mask in masks:
            for device, dtype in grid():
                s, r = student.to(device, dtype), reference.to(device, dtype)
                args = (x.to(device, dtype), memory.to(device, dtype),
                        None if self_mask is None else self_mask.to(device),
                        None if memory_mask is None else memory_mask.to(device))
                what = (f"DecoderBlock({config}), x {tuple(x.shape)}, memory {tuple(memory.shape)}, masks "
                        f"{None if self_mask is None else tuple(self_mask.shape)}/"
                        f"{None if memory_mask is None else tuple(memory_mask.shape)} ({device.type}, {dtype})")
                assert_matches(what, s(*args), r(*args).detach(), dtype)


def test_encoder_decoder_transformer(EncoderDecoderTransformer, trials: int = 3, seed: int = 503) -> None:
    g = generator(seed)
    for trial in range(trials):
        n_heads = _int(g, 1, 4)
        config = dict(src_vocab_size=_int(g, 2, 30), tgt_vocab_size=_int(g, 2, 30), d_model=n_heads * _int(g, 2, 6),
                      n_heads=n_heads, d_ff=_int(g, 4, 30), n_encoder_layers=_int(g, 1, 3),
                      n_decoder_layers=_int(g, 1, 3), max_len=_int(g, 2, 11), norm_first=trial % 2 == 0)
        student = EncoderDecoderTransformer(**config).double()
        reference = ref.EncoderDecoderTransformer(**config).double()
        _copy_into_reference(student, reference, f"EncoderDecoderTransformer({config})", g)
        B, S, T = _int(g, 1, 4), _int(g, 1, config["max_len"] + 1), _int(g, 1, config["max_len"] + 1)
        src = torch.randint(0, config["src_vocab_size"], (B, S), generator=g)
        tgt = torch.randint(0, config["tgt_vocab_size"], (B, T), generator=g)
        for lengths in (None, torch.randint(1, S + 1, (B,), generator=g)):
            for device, dtype in grid():
                s, r = student.to(device, dtype).eval(), reference.to(device, dtype).eval()
                src_lengths = None if lengths is None else lengths.to(device)
                what = (f"EncoderDecoderTransformer({config}), src {tuple(src.shape)}, tgt {tuple(tgt.shape)}, "
                        f"src_lengths {None if lengths is None else lengths.tolist()} ({device.type}, {dtype})")
                assert_matches(what, s(src.to(device), tgt.to(device), src_lengths),
                               r(src.to(device), tgt.to(device), src_lengths).detach(), dtype)


def _model(g, dropout=0.0):
    config = dict(vocab_size=_int(g, 4, 9), d_model=8, n_heads=2, d_ff=16, n_layers=2, max_len=_int(g, 3, 7),
                  dropout=dropout)
    model = ref.DecoderOnlyTransformer(**config).double()
    model.load_state_dict(random_state(model, g), strict=True)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)  # sharper distributions: sampling and temperature show more clearly
    return model, config


def test_generate(generate, seed: int = 504) -> None:
    g = generator(seed)
    model, config = _model(g, dropout=0.3)
    V, max_len = config["vocab_size"], config["max_len"]
    # Greedy (and top_k=1) against the reference, prompts shorter and longer than max_len; the model starts in
    # training mode with dropout, so a generate without eval() differs.
    for T0, new in [(1, 4), (max_len - 1, 6), (max_len + 4, 3)]:
        prompt = torch.randint(0, V, (3, T0), generator=g)
        for device, dtype in grid():
            m = model.to(device, dtype).train()
            expected = ref.generate(m, prompt.to(device), new, temperature=0)
            m.train()
            assert_equal(f"greedy generate, prompt {tuple(prompt.shape)}, {new} new tokens ({device.type}, {dtype})",
                         generate(m, prompt.to(device), new, temperature=0), expected)
            if not m.training:
                raise HiddenTestFailed("generate left a model that was training in eval mode")
            assert_equal(f"generate with top_k=1, prompt {tuple(prompt.shape)} ({device.type}, {dtype})",
                         generate(m, prompt.to(device), new, temperature=1.0, top_k=1,
                                  generator=torch.Generator(device).manual_seed(3)), expected)
    model = model.to("cpu", torch.float64).eval()
    # Seeded determinism on every device.
    for device in available_devices():
        m = model.to(device)
        prompt = torch.randint(0, V, (4, 2), generator=g).to(device)
        first, second = (generate(m, prompt, 2 * max_len, temperature=1.3, top_k=V - 1,
                                  generator=torch.Generator(device).manual_seed(21)) for _ in range(2))
        if not torch.equal(first, second):
            raise HiddenTestFailed(f"seeded sampling on {device.type} is not reproducible")
        if first.shape != (4, 2 + 2 * max_len) or not torch.equal(first[:, :2], prompt):
            raise HiddenTestFailed("a sampled result has the wrong shape or does not start with the prompt")
    model = model.to("cpu")
    # The distribution of two sampled tokens against the exact probabilities.
    prompt = torch.randint(0, V, (1, max_len - 1), generator=g)
    for temperature, top_k in [(1.0, None), (0.6, None), (1.8, 2), (0.9, V)]:
        probabilities = pair_probabilities(model, prompt, temperature, top_k if top_k and top_k < V else None)
        out = generate(model, prompt.expand(20000, -1).clone(), 2, temperature=temperature, top_k=top_k,
                       generator=torch.Generator().manual_seed(8))
        freq = _joint_frequencies(out[:, -2:], V)
        if (freq - probabilities).abs().max() > SAMPLING_TOLERANCE:
            raise HiddenTestFailed(f"sampled pairs at temperature {temperature}, top_k={top_k} do not follow the "
                                   f"model's distribution (largest gap {(freq - probabilities).abs().max().item():.3f})")
    # The same on a fresh toy model whose next token depends strongly on the last one, with a prompt longer
    # than max_len: the token that was drawn must be the one fed back, through the crop.
    V, max_len = 5, 4
    toy = toy_model({"follow": 1.5 * torch.randn(V, V, generator=g, dtype=torch.float64),
                     "start": 0.5 * torch.randn(V, V, generator=g, dtype=torch.float64),
                     "position": 0.5 * torch.randn(4 * max_len, V, generator=g, dtype=torch.float64), "max_len": max_len})
    prompt = torch.randint(0, V, (1, max_len + 2), generator=g)
    for temperature, top_k in [(1.0, None), (0.7, 3)]:
        probabilities = pair_probabilities(toy, prompt, temperature, top_k)
        out = generate(toy, prompt.expand(20000, -1).clone(), 2, temperature=temperature, top_k=top_k,
                       generator=torch.Generator().manual_seed(9))
        gap = (_joint_frequencies(out[:, -2:], V) - probabilities).abs().max()
        if gap > SAMPLING_TOLERANCE:
            raise HiddenTestFailed(f"sampled pairs at temperature {temperature}, top_k={top_k} do not follow the "
                                   f"model's distribution (largest gap {gap.item():.3f})")

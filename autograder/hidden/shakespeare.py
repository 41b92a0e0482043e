"""Hidden tests for notebook 07: `tokenize` on fresh texts and on the whole corpus; `Vocab` on fresh token lists;
`chunk` and `train_val_split` on fresh sizes; `evaluate` against the reference on reference models with dropout;
`sample` against the reference (greedy text and the exact distribution of the next token), with the reference
`tokenize` standing in for the student's so that a tokenize mistake costs points once."""
import math

import torch

from autograder.hidden.models import next_probabilities, random_state
from autograder.hidden.compare import HiddenTestFailed, generator, reference_globals
from autograder.reference import shakespeare as ref
from course.checks.shakespeare import SAMPLING_TOLERANCE, next_word_frequencies
from course.checks.transformer import toy_model
from course.device import available_devices
from course.shakespeare import load_shakespeare

PIECES = ["the", "King", "o'er", " ", "  ", "\n", "\n\n", ",", ", ", ".\n", "!", "?", "--", "_x_", "42", "caf\u00e9",
          "\u00e6on", "[Exit]", "\t", "'Tis", "A", "z9"]


def _int(g, low, high) -> int:
    return int(torch.randint(low, high, (1,), generator=g))


def _random_text(g) -> str:
    return "".join(PIECES[_int(g, 0, len(PIECES))] for _ in range(_int(g, 0, 40)))


def test_tokenize(tokenize, trials: int = 40, seed: int = 701) -> None:
    g = generator(seed)
    for _ in range(trials):
        text = _random_text(g)
        if tokenize(text) != ref.tokenize(text):
            raise HiddenTestFailed(f"tokenize({text!r}) differs from the expected tokens")
    corpus = load_shakespeare()
    tokens = tokenize(corpus)
    if not isinstance(tokens, list) or "".join(tokens) != corpus:
        raise HiddenTestFailed("the tokens of the whole corpus do not join back into the corpus")
    if tokens != ref.tokenize(corpus):
        raise HiddenTestFailed("the tokens of the whole corpus differ from the expected tokens")


def test_vocab(Vocab, trials: int = 6, seed: int = 702) -> None:
    g = generator(seed)
    words = [f"w{i}" for i in range(30)] + [" ", ",", "\n"]
    for trial in range(trials):
        n = _int(g, 1, 300)
        skew = torch.rand(len(words), generator=g) ** 3  # some frequent words, many rare ones, ties
        picks = torch.multinomial(skew + 1e-3, n, replacement=True, generator=g).tolist()
        tokens = [words[i] for i in picks]
        probe = tokens[: _int(g, 0, 20)] + ["unseen", "w99"] + [words[_int(g, 0, len(words))] for _ in range(5)]
        for min_freq in (1, 2, 3):
            mine, theirs = Vocab.build(list(tokens), min_freq=min_freq), ref.Vocab.build(tokens, min_freq=min_freq)
            what = f"Vocab.build(<{n} tokens>, min_freq={min_freq})"
            if len(mine) != len(theirs):
                raise HiddenTestFailed(f"{what}: len differs from the reference")
            if mine.encode(probe) != theirs.encode(probe):
                raise HiddenTestFailed(f"{what}: encode gives different ids")
            ids = list(range(len(theirs)))
            if list(mine.decode(ids)) != theirs.decode(ids) or list(mine.decode(torch.tensor(ids))) != theirs.decode(ids):
                raise HiddenTestFailed(f"{what}: decode gives different tokens (from a list or a tensor of ids)")
    empty = Vocab.build([])
    if len(empty) != 1 or empty.encode(["a"]) != [0]:
        raise HiddenTestFailed("Vocab.build([]) should hold <unk> only")


def test_chunk(chunk, trials: int = 10, seed: int = 703) -> None:
    g = generator(seed)
    for _ in range(trials):
        length, seq_len = _int(g, 0, 200), _int(g, 1, 20)
        ids = torch.randint(0, 1000, (length,), generator=g)
        out, expected = chunk(ids.clone(), seq_len), ref.chunk(ids, seq_len)
        if not (isinstance(out, torch.Tensor) and out.dtype == expected.dtype and torch.equal(out, expected)):
            raise HiddenTestFailed(f"chunk(ids of length {length}, seq_len={seq_len}) differs from the expected windows")
    for device in available_devices():
        out = chunk(torch.arange(30, device=device), 4)
        if out.device.type != device.type:
            raise HiddenTestFailed(f"chunk moved the ids off {device.type}")


def test_train_val_split(train_val_split, trials: int = 12, seed: int = 704) -> None:
    g = generator(seed)
    for _ in range(trials):
        n, width = _int(g, 2, 300), _int(g, 1, 5)
        fraction = [0.1, 0.05, 0.2, 0.5, 0.33, 0.25][_int(g, 0, 6)]
        chunks = torch.randperm(n * width, generator=g).reshape(n, width)
        out = train_val_split(chunks.clone(), fraction)
        what = f"train_val_split(<{n} windows>, {fraction})"
        if not (isinstance(out, tuple) and len(out) == 2):
            raise HiddenTestFailed(f"{what}: expected a tuple (train, val)")
        train, val = out
        n_val = len(val)
        if n_val not in {math.floor(fraction * n), math.ceil(fraction * n)}:
            raise HiddenTestFailed(f"{what}: val has {n_val} windows")
        if not (torch.equal(train, chunks[: n - n_val]) and torch.equal(val, chunks[n - n_val:])):
            raise HiddenTestFailed(f"{what}: train must be the windows before val, val the last ones, in order")


def _reference_model(g, V: int, max_len: int, dropout: float) -> torch.nn.Module:
    model = ref.DecoderOnlyTransformer(V, 16, 2, 32, 2, max_len, dropout=dropout)
    model.load_state_dict({k: v.float() for k, v in random_state(model, g).items()}, strict=True)
    return model


def test_evaluate(evaluate, seed: int = 705) -> None:
    g = generator(seed)
    for trial, (n, seq_len, batch_size) in enumerate([(17, 9, 5), (6, 4, 6), (11, 12, 32)]):
        V = _int(g, 5, 40)
        model = _reference_model(g, V, seq_len, dropout=0.3)
        chunks = torch.randint(0, V, (n, seq_len), generator=g)
        for device in available_devices():
            m = model.to(device)
            expected = ref.evaluate(m, chunks, batch_size)
            training = trial % 2 == 0
            m.train(training)
            out = evaluate(m, chunks, batch_size)
            what = f"evaluate on {n} windows of {seq_len} tokens, batch_size={batch_size} ({device.type})"
            if not isinstance(out, float):
                raise HiddenTestFailed(f"{what}: expected a Python float")
            if not math.isclose(out, expected, rel_tol=1e-4):
                raise HiddenTestFailed(f"{what}: the loss differs from the reference")
            if m.training != training:
                raise HiddenTestFailed(f"{what}: the model was not put back in its mode")


WORDS = ["<unk>", " ", "to", "be", "or", "not", ",", ".", "\n", "that", "is", "the", "question"]


def test_sample(sample, seed: int = 706) -> None:
    g = generator(seed)
    vocab = ref.Vocab(WORDS)
    model = _reference_model(g, len(WORDS), 8, dropout=0.2)
    with torch.no_grad():
        model.lm_head.weight.mul_(6.0)  # a model with opinions, so that temperature and top-k matter
    with reference_globals(sample, tokenize=ref.tokenize):
        for device in available_devices():
            m = model.to(device)
            for prompt, n_tokens in [("to be", 12), ("question, dragon", 6)]:
                expected = ref.sample(m, vocab, prompt, n_tokens, temperature=0)
                if sample(m, vocab, prompt, n_tokens, temperature=0) != expected:
                    raise HiddenTestFailed(f"greedy sample of {n_tokens} tokens after {prompt!r} ({device.type}) differs")
                top1 = sample(m, vocab, prompt, n_tokens, temperature=1.0, top_k=1,
                              generator=torch.Generator(device).manual_seed(1))
                if top1 != expected:
                    raise HiddenTestFailed("sampling with top_k=1 should give the greedy text")
        V = len(WORDS)  # the distribution on a hand-made model: thousands of calls must stay fast
        toy = toy_model({"follow": 1.5 * torch.randn(V, V, generator=g, dtype=torch.float64),
                         "start": 0.5 * torch.randn(V, V, generator=g, dtype=torch.float64),
                         "position": 0.5 * torch.randn(12, V, generator=g, dtype=torch.float64), "max_len": 4})
        prompt_ids = torch.tensor([vocab.encode(ref.tokenize("not"))])
        for temperature, top_k in [(0.7, None), (1.3, 2)]:
            probabilities = next_probabilities(toy, prompt_ids, temperature, top_k)[0].double()
            try:
                freq = next_word_frequencies(sample, toy, vocab, "not", temperature, top_k, generator(seed + 1))
            except ValueError as error:
                raise HiddenTestFailed(str(error)) from None
            if (freq - probabilities).abs().max() > SAMPLING_TOLERANCE:
                raise HiddenTestFailed(f"the next word does not follow the model's distribution at temperature "
                                       f"{temperature}, top_k={top_k}")
        model = model.cpu()
        runs = [sample(model, vocab, "to", 15, temperature=2.0, generator=generator(s)) for s in (4, 4, 5)]
        if runs[0] != runs[1] or runs[0] == runs[2]:
            raise HiddenTestFailed("seeded generators should reproduce the text, and different seeds differ")

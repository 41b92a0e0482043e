"""Hidden tests for notebook 07: `tokenize` on fresh texts and on the whole corpus; `Vocab` on fresh token lists;
`chunk` and `train_val_split` on fresh sizes; `evaluate` on notebook-05 models with dropout; `sample` (greedy text,
the distribution of the next token, reproducible seeds) with stand-ins for `tokenize` and the vocabulary, so that a
mistake there costs points once.

Everything is recorded as data and judged by the rules in the grader's process (`autograder.authoring.hidden.observe`): the
whole corpus as a count and a digest of its tokens, the sampled frequencies against the exact probabilities of the
model, which the rule carries from the reference's run."""
import hashlib
import math
import re
from dataclasses import dataclass, field

import torch

from autograder.authoring.hidden.models import next_probabilities, random_state
from autograder.authoring.hidden.observe import (HiddenTestFailed, Observations, Rule, describe, generator, hidden_test,
                                       tensor_of)
from autograder.authoring.reference.transformer import DecoderOnlyTransformer
from course.checks.shakespeare import (SAMPLING_TOLERANCE, TinyLanguageModel, WordList, group_names, loop_outputs, next_word_frequencies,
                                       run_loop)
from course.checks.stand_ins import earlier_pieces_replaced
from course.checks.transformer import toy_model
from course.device import available_devices
from course.shakespeare import load_shakespeare

PIECES = ["the", "King", "o'er", " ", "  ", "\n", "\n\n", ",", ", ", ".\n", "!", "?", "--", "_x_", "42", "caf\u00e9",
          "\u00e6on", "[Exit]", "\t", "'Tis", "A", "z9"]


def _int(g, low, high) -> int:
    return int(torch.randint(low, high, (1,), generator=g))


def _random_text(g) -> str:
    return "".join(PIECES[_int(g, 0, len(PIECES))] for _ in range(_int(g, 0, 40)))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _or_raised(call):
    """What `call()` returns, or the name of the exception it raises, as an observation like any other: an exception
    in one case then fails on the first case that differs, in order, as a comparison would."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001: which one is the observation
        return {"raised": type(exc).__name__}


# ---------------------------------------------------------------- tokenize

def _token_list(out, what: str) -> list:
    if not isinstance(out, list):
        raise HiddenTestFailed(f"{what}: expected a list of strings, got {describe(out)}")
    return out


def observe_tokenize(tokenize, trials: int = 40, seed: int = 701) -> Observations:
    seen = Observations()
    g = generator(seed)
    texts = ["", "   ", "A", "The THE the"] + [_random_text(g) for _ in range(trials)]  # empty, no word, case kept
    for text in dict.fromkeys(texts):  # a text drawn twice is observed once
        what = f"tokenize({text!r})"
        seen.exact(what, _token_list(tokenize(text), what))
    corpus = load_shakespeare()
    what = "tokenize(<the whole corpus>)"
    tokens = _token_list(tokenize(corpus), what)
    if not all(type(token) is str for token in tokens):
        raise HiddenTestFailed(f"{what}: expected a list of strings")
    seen.exact("the tokens of the whole corpus, joined back together (they should give the corpus)",
               _digest("".join(tokens)))
    seen.exact("the tokens of the whole corpus (their number and each token)",
               [len(tokens), _digest("\x00".join(tokens))])
    return seen


# ---------------------------------------------------------------- Vocab

def observe_vocab(Vocab, trials: int = 6, seed: int = 702) -> Observations:
    seen = Observations()
    g = generator(seed)
    words = [f"w{i}" for i in range(30)] + [" ", ",", "\n", "The", "the", "THE", "A", "a"]  # case is kept
    for trial in range(trials):
        n = _int(g, 1, 300)
        skew = torch.rand(len(words), generator=g) ** 3  # some frequent words, many rare ones, ties
        picks = torch.multinomial(skew + 1e-3, n, replacement=True, generator=g).tolist()
        tokens = [words[i] for i in picks]
        probe = tokens[: _int(g, 0, 20)] + ["unseen", "w99"] + [words[_int(g, 0, len(words))] for _ in range(5)]
        counts = {token: tokens.count(token) for token in set(tokens)}
        for min_freq in (1, 2, 3, n + 1):  # the last keeps no token at all
            vocab = Vocab.build(list(tokens), min_freq=min_freq)
            what = f"Vocab.build(<{n} tokens, case {trial + 1}>, min_freq={min_freq})"
            ids = list(range(1 + sum(count >= min_freq for count in counts.values())))  # every id, <unk> included
            seen.exact(f"{what}: len", len(vocab))
            seen.exact(f"{what}: the ids encode gives for {len(probe)} tokens", vocab.encode(list(probe)))
            seen.exact(f"{what}: the tokens decode gives for a list of every id",
                       _or_raised(lambda: list(vocab.decode(list(ids)))))
            seen.exact(f"{what}: the tokens decode gives for a tensor of every id",
                       _or_raised(lambda: list(vocab.decode(torch.tensor(ids)))))
    empty = Vocab.build([])
    seen.exact("Vocab.build([]) should hold <unk> only: its len and the ids of encode(['a'])",
               [len(empty), empty.encode(["a"])])
    return seen


# ---------------------------------------------------------------- chunk

def observe_chunk(chunk, trials: int = 10, seed: int = 703) -> Observations:
    seen = Observations()
    g = generator(seed)
    for trial in range(trials):
        length, seq_len = _int(g, 0, 200), _int(g, 1, 20)
        ids = torch.randint(0, 1000, (length,), generator=g)
        seen.exact(f"chunk(ids of length {length}, seq_len={seq_len}) (case {trial + 1})",
                   _or_raised(lambda: chunk(ids.clone(), seq_len)))
    for length, seq_len in [(3, 5), (0, 4), (7, 7)]:  # fewer ids than seq_len: no window; exactly one window
        ids = torch.randint(0, 1000, (length,), generator=g)
        seen.exact(f"chunk(ids of length {length}, seq_len={seq_len})", _or_raised(lambda: chunk(ids.clone(), seq_len)))
    for device in available_devices():
        seen.exact(f"chunk(torch.arange(30) on {device.type}, 4)",
                   _or_raised(lambda: chunk(torch.arange(30, device=device), 4)))
    return seen


# ---------------------------------------------------------------- train_val_split

@dataclass(frozen=True)
class ContiguousSplit(Rule):
    """[train, val] of `n` windows: val holds round(fraction * n) windows (Python's round, as the docstring says: an
    exact .5 goes to the even number), and train and val are the windows before it and the last ones, in order (the
    reference's train and val, put back together, are the windows)."""
    n: int
    fraction: float

    def judge(self, what, student, reference):
        parts = [tensor_of(v) for v in student] if isinstance(student, list) and len(student) == 2 else [None]
        if any(part is None for part in parts):
            return f"{what}: expected a tuple (train, val) of two tensors"
        train, val = parts
        windows = torch.cat([tensor_of(v) for v in reference])
        n_val = round(self.fraction * self.n)
        if len(val) != n_val:
            return f"{what}: val has {len(val)} windows, not round({self.fraction} * {self.n}) = {n_val}"
        if not (train.dtype == val.dtype == windows.dtype and tuple(train.shape) == (self.n - n_val, *windows.shape[1:])
                and torch.equal(train, windows[: self.n - n_val]) and torch.equal(val, windows[self.n - n_val:])):
            return f"{what}: train must be the windows before val, val the last ones, in order"
        return None


def observe_train_val_split(train_val_split, trials: int = 12, seed: int = 704) -> Observations:
    seen = Observations()
    g = generator(seed)
    # Fresh sizes and fractions, then edges: none or all windows for validation, exact .5 ties (to the even number).
    drawn = [(_int(g, 2, 300), [0.1, 0.05, 0.2, 0.5, 0.33, 0.25][_int(g, 0, 6)]) for _ in range(trials)]
    edges = [(4, 0.1), (30, 0.0), (7, 1.0), (1, 0.5), (11, 0.5), (13, 0.5), (6, 0.25), (14, 0.25), (23, 0.125)]
    for trial, (n, fraction) in enumerate(drawn + edges):
        width = _int(g, 1, 5)
        chunks = torch.randperm(n * width, generator=g).reshape(n, width)
        what = f"train_val_split(<{n} windows>, {fraction}) (case {trial + 1})"
        out = train_val_split(chunks.clone(), fraction)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise HiddenTestFailed(f"{what}: expected a tuple (train, val)")
        seen.judged_by(what, list(out), ContiguousSplit(n, fraction))
    return seen


# ---------------------------------------------------------------- evaluate

@dataclass(frozen=True)
class RelativelyClose(Rule):
    """A Python float within `rel_tol` of the reference's."""
    rel_tol: float = 1e-4

    def judge(self, what, student, reference):
        if type(student) is not float:
            return f"{what}: expected a Python float"
        return None if math.isclose(student, reference, rel_tol=self.rel_tol) else f"{what}: the loss differs from the reference"


def _reference_model(g, V: int, max_len: int, dropout: float) -> torch.nn.Module:
    """A notebook-05 model with weights drawn from `g`."""
    model = DecoderOnlyTransformer(V, 16, 2, 32, 2, max_len, dropout=dropout)
    model.load_state_dict({k: v.float() for k, v in random_state(model, g).items()}, strict=True)
    return model


def observe_evaluate(evaluate, seed: int = 705) -> Observations:
    seen = Observations()
    g = generator(seed)
    for trial, (n, seq_len, batch_size) in enumerate([(17, 9, 5), (6, 4, 6), (11, 12, 32)]):
        V = _int(g, 5, 40)
        model = _reference_model(g, V, seq_len, dropout=0.3)
        chunks = torch.randint(0, V, (n, seq_len), generator=g)
        for device in available_devices():
            m = model.to(device)
            training = trial % 2 == 0  # a model in training mode, with dropout, must be evaluated in eval mode
            m.train(training)
            out = evaluate(m, chunks, batch_size)
            what = f"evaluate on {n} windows of {seq_len} tokens, batch_size={batch_size} ({device.type})"
            if not isinstance(out, float):
                raise HiddenTestFailed(f"{what}: expected a Python float")
            seen.judged_by(what, float(out), RelativelyClose())
            seen.claim(f"{what}: the model was not put back in its mode", m.training == training)
    return seen


# ---------------------------------------------------------------- sample

@dataclass(frozen=True, eq=False)
class FollowsDistribution(Rule):
    """Sampled next-word frequencies within `tolerance` of the exact `probabilities`. The rule that judges is the
    reference's, made in the grader's process, so the probabilities are computed there, never taken from the
    student's kernel; the reference's own (noisy) frequencies are not used."""
    probabilities: torch.Tensor = field(repr=False)
    tolerance: float = SAMPLING_TOLERANCE

    def judge(self, what, student, reference):
        actual = tensor_of(student)
        if actual is None or tuple(actual.shape) != tuple(self.probabilities.shape):
            return f"{what}: expected frequencies of shape {tuple(self.probabilities.shape)}, got {describe(student)}"
        gap = (actual.double() - self.probabilities.double()).abs().max().item()
        return None if gap <= self.tolerance else f"{what} (largest gap {gap:.3f})"


@dataclass(frozen=True)
class Reproducible(Rule):
    """[a, b, c]: texts from generators seeded s, s, s': a equals b and differs from c."""

    def judge(self, what, student, reference):
        runs = student if isinstance(student, list) and len(student) == 3 else [None, 0, 1]
        return what if runs[0] != runs[1] or runs[0] == runs[2] else None


WORDS = ["<unk>", " ", "to", "be", "or", "not", ",", ".", "\n", "that", "is", "the", "question"]


def observe_sample(sample, seed: int = 706) -> Observations:
    seen = Observations()
    g = generator(seed)

    def tokenize(text: str) -> list[str]:
        """Stands in for the notebook's own (observed in its own cell), so that a tokenize mistake costs once."""
        return [piece for piece in re.split(r"\b", text) if piece != ""]

    vocab = WordList(WORDS)  # a fixed vocabulary (id i is WORDS[i]) in place of a Vocab
    model = _reference_model(g, len(WORDS), 8, dropout=0.2)
    with torch.no_grad():
        model.lm_head.weight.mul_(6.0)  # a model with opinions, so that temperature and top-k matter
    with earlier_pieces_replaced(sample, tokenize=tokenize):
        for device in available_devices():
            m = model.to(device)
            seen.exact(f"sample of 0 tokens after 'to be' ({device.type}): the prompt alone",
                       sample(m, vocab, "to be", 0, temperature=0))
            for prompt, n_tokens in [("to be", 12), ("question, dragon", 6)]:
                what = f"sample of {n_tokens} tokens after {prompt!r} ({device.type})"
                seen.exact(f"greedy {what}", sample(m, vocab, prompt, n_tokens, temperature=0))
                seen.exact(f"{what} at temperature 1.0 with top_k=1 (which should give the greedy text)",
                           sample(m, vocab, prompt, n_tokens, temperature=1.0, top_k=1,
                                  generator=torch.Generator(device).manual_seed(1)))
        V = len(WORDS)  # the distribution on a hand-made model: thousands of calls must stay fast
        toy = toy_model({"follow": 1.5 * torch.randn(V, V, generator=g, dtype=torch.float64),
                         "start": 0.5 * torch.randn(V, V, generator=g, dtype=torch.float64),
                         "position": 0.5 * torch.randn(12, V, generator=g, dtype=torch.float64), "max_len": 4})
        prompt_ids = torch.tensor([vocab.encode(tokenize("not"))])
        for temperature, top_k in [(0.7, None), (1.3, 2)]:
            probabilities = next_probabilities(toy, prompt_ids, temperature, top_k)[0].double()
            try:
                freq = next_word_frequencies(sample, toy, vocab, "not", temperature, top_k, generator(seed + 1))
            except ValueError as error:
                raise HiddenTestFailed(str(error)) from None
            seen.judged_by(f"the next word does not follow the model's distribution at temperature {temperature}, "
                           f"top_k={top_k}", freq, FollowsDistribution(probabilities))
        model = model.cpu()
        runs = [sample(model, vocab, "to", 15, temperature=2.0, generator=generator(s)) for s in (4, 4, 5)]
        seen.judged_by("seeded generators should reproduce the text, and different seeds differ", runs, Reproducible())
        wide = sample(model, vocab, "to", 15, temperature=2.0, top_k=len(WORDS) + 3, generator=generator(4))
        seen.claim(f"with top_k={len(WORDS) + 3}, above the vocabulary size, every token should stay possible: the "
                   "text should be the one top_k=None gives with the same seed", wide == runs[0])
    return seen


test_tokenize = hidden_test(observe_tokenize)
test_vocab = hidden_test(observe_vocab)
test_chunk = hidden_test(observe_chunk)
test_train_val_split = hidden_test(observe_train_val_split)
test_evaluate = hidden_test(observe_evaluate)
test_sample = hidden_test(observe_sample)


# ---------------------------------------------------------------- parameter_groups, learning_rate, train_model

def observe_parameter_groups(parameter_groups, seed: int = 707) -> Observations:
    seen = Observations()
    g = generator(seed)
    for norm_first in (True, False):
        V, heads = _int(g, 5, 30), _int(g, 1, 3)
        model = DecoderOnlyTransformer(V, 4 * heads, heads, 8, _int(g, 1, 3), 6, norm_first=norm_first)
        what = f"parameter_groups of a DecoderOnlyTransformer (norm_first={norm_first})"
        found = group_names(parameter_groups(model, 0.05), model)
        if isinstance(found, str):
            raise HiddenTestFailed(f"{what}: {found}")
        seen.exact(f"{what}: the names of the decayed and of the undecayed parameters", found)
        seen.exact(f"{what}: the weight decays of the groups",
                   sorted(float(group.get("weight_decay", 0.0)) for group in parameter_groups(model, 0.05)))
    return seen


def observe_learning_rate(learning_rate, seed: int = 708) -> Observations:
    seen = Observations()
    g = generator(seed)
    for trial in range(4):
        warmup = [0, 1, _int(g, 2, 30), _int(g, 2, 30)][trial]
        total = warmup + _int(g, 1, 80)
        max_lr = float(torch.rand(1, generator=g)) * 0.01 + 1e-4
        min_lr = [0.0, max_lr / 10, 0.0, max_lr * float(torch.rand(1, generator=g))][trial]
        rates = [learning_rate(step, max_lr, warmup, total, min_lr) for step in range(total)]
        what = f"learning_rate(step, {max_lr:.3g}, warmup_steps={warmup}, total_steps={total}, min_lr={min_lr:.3g})"
        if not all(isinstance(r, float) for r in rates):
            raise HiddenTestFailed(f"{what}: expected a Python float")
        seen.judged_by(f"{what} for every step", rates, RatesClose())
    return seen


@dataclass(frozen=True)
class RatesClose(Rule):
    """Lists of floats of the same length, each within `rel_tol` of the reference's."""
    rel_tol: float = 1e-9

    def judge(self, what, student, reference):
        if not isinstance(student, list) or len(student) != len(reference):
            return f"{what}: expected {len(reference)} values"
        return None if all(math.isclose(a, b, rel_tol=self.rel_tol, abs_tol=1e-15) for a, b in zip(student, reference)) \
            else f"{what}: the values differ from the reference"


def tiny_state(g, vocab_size: int, d_model: int) -> dict:
    """The weights of a TinyLanguageModel, drawn from `g` (float64), LayerNorm's included."""
    shapes = {name: p.shape for name, p in TinyLanguageModel(vocab_size, d_model).named_parameters()}
    return {name: (1.0 if name == "norm.weight" else 0.0) + 0.5 * torch.randn(shape, generator=g, dtype=torch.float64)
            for name, shape in shapes.items()}


def loop_case(g, vocab_size: int, d_model: int, settings: dict, seed: int) -> dict:
    """What train_model is tried on: weights; training windows (ids below vocab_size - 1) and validation windows
    (starting with vocab_size - 1, so that a model call shows which it read); a table of rates for the stand-in
    schedule; the stand-in split of the parameters; and a stand-in score whose lowest point is near the starting
    weights (so the best is an early validation, not the last)."""
    V = vocab_size
    state = tiny_state(g, V, d_model)
    return {"state": state, "settings": dict(settings), "seed": seed, "val_marker": V - 1,
            "train_windows": torch.randint(0, V - 1, (16, 9), generator=g),
            "val_windows": torch.cat([torch.full((6, 1), V - 1), torch.randint(0, V, (6, 8), generator=g)], 1),
            "rates": [settings["max_lr"] * (0.3 + torch.rand(1, generator=g).item()) for _ in range(settings["steps"])],
            "decayed": [name for name, value in state.items() if value.dim() >= 2],
            "target": {name: value + 0.01 * torch.randn(value.shape, generator=g, dtype=torch.float64)
                       for name, value in state.items()}}


def observe_train_model(train_model, seed: int = 709) -> Observations:
    seen = Observations()
    g = generator(seed)
    for trial in range(2):
        steps = _int(g, 8, 20)
        settings = dict(steps=steps, batch_size=_int(g, 2, 6), max_lr=0.02 + 0.05 * float(torch.rand(1, generator=g)),
                        warmup_steps=_int(g, 1, 4), weight_decay=0.2 + 0.3 * float(torch.rand(1, generator=g)),
                        max_grad_norm=0.1 + 0.2 * float(torch.rand(1, generator=g)), eval_every=_int(g, 2, 5),
                        eval_windows=_int(g, 2, 6))
        case = loop_case(g, _int(g, 6, 14), _int(g, 3, 8), settings, seed=seed + trial)
        for device in available_devices():
            what = f"train_model, {steps} updates of a tiny model ({device.type}, case {trial + 1})"
            history, model, (groups, schedule, score) = run_loop(train_model, case, device)
            if not (isinstance(history, dict) and all(k in history for k in ("train", "eval_step", "best_step"))):
                raise HiddenTestFailed(f"{what}: expected a history with \"train\", \"eval_step\" and \"best_step\"")
            outputs = loop_outputs(history, model)
            seen.close(f"{what}: the loss of every update", torch.tensor(outputs["train"], dtype=torch.float64),
                       torch.float32)
            seen.exact(f"{what}: the updates after which validation ran", outputs["eval_step"], show=True)
            seen.exact(f"{what}: best_step", int(history["best_step"]), show=True)
            for name, weights in outputs["final"].items():
                seen.close(f"{what}: the weights it ends with ({name})", weights, torch.float32)
            seen.exact(f"{what}: the steps learning_rate was asked for", schedule.steps_asked())
            seen.claim(f"{what}: the optimizer should be made once from parameter_groups", len(groups.calls) == 1)
            seen.claim(f"{what}: the model should train in training mode and score validation through evaluate",
                       all(t for t, grad, _ in model.calls if grad) and
                       not any(int(tokens[0, 0]) == case["val_marker"] for _, _, tokens in model.calls))
    return seen


test_parameter_groups = hidden_test(observe_parameter_groups)
test_learning_rate = hidden_test(observe_learning_rate)
test_train_model = hidden_test(observe_train_model)

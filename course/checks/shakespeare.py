"""Visible checks for notebook 07: `tokenize`, `Vocab`, `chunk`, `train_val_split`, `evaluate`, `sample`, and the
training loop: `parameter_groups`, `learning_rate`, `train_model`."""
from __future__ import annotations

import math

import torch
from torch import nn

from course.checks.compare import expect_tensor, known_mistake
from course.checks.report import assert_written, fail, run_steps
from course.checks.stand_ins import earlier_pieces_replaced, notebook_globals
from course.checks.transformer import expect_evaluation_mode, toy_model
from course.device import available_devices
from course.fixtures import load


def _fixture(exercise: str) -> dict:
    return load("shakespeare")[exercise]


def _named(output, mistakes: dict) -> str:
    """"\n  This is a known mistake: ..." for the stored mistake whose output equals `output`, else ""."""
    for mistake in mistakes.values():
        if mistake["output"] == output:
            return f"\n  This is a known mistake: {mistake['message']}"
    return ""


# ---------------------------------------------------------------- tokenize

def check_tokenize(tokenize) -> None:
    """A list of non-empty strings; the stored tokens of stored texts (naming known mistakes); the tokens join back
    into the text."""
    cases = _fixture("tokenize")["cases"]

    def strings():
        out = tokenize(cases[0]["text"])
        if not isinstance(out, list):
            fail(f"tokenize should return a list of strings, but it returned a {type(out).__name__}.")
        if not all(isinstance(t, str) for t in out):
            fail("Every token should be a string.")
        if "" in out:
            fail(f"The tokens contain empty strings.{_named(out, cases[0]['mistakes'])}")
        empty = tokenize("")
        if empty != []:
            fail(f"tokenize(\"\") should be [] (an empty text has no tokens), but it is {empty!r}.")

    def stored():
        for case in cases:
            out = tokenize(case["text"])
            if out == case["expected"]:
                continue
            fail(f"tokenize({case['text']!r}) gave\n    {out!r}\n  expected\n    {case['expected']!r}"
                 f"{_named(out, case['mistakes'])}")

    def joins_back():
        for case in cases:
            out = tokenize(case["text"])
            if "".join(out) != case["text"]:
                fail(f"\"\".join(tokenize(text)) should give back the text, but for {case['text']!r} it gives "
                     f"{''.join(out)!r}.{_named(out, case['mistakes'])}")

    run_steps("tokenize", [
        ("returns a list of non-empty strings", strings),
        ("splits stored texts into the expected tokens", stored),
        ("\"\".join(tokens) gives back the text", joins_back),
    ])


# ---------------------------------------------------------------- Vocab

def vocab_outputs(Vocab, tokens: list[str], probe: list[str]) -> dict:
    """What a vocabulary of `tokens` says, with min_freq 1, 2 and one above every count: its size, the ids of `probe`
    and every token by id."""
    outputs = {}
    for min_freq in (1, 2, len(tokens) + 1):
        vocab = Vocab.build(tokens, min_freq=min_freq)
        outputs[f"len (min_freq={min_freq})"] = len(vocab)
        outputs[f"encode(probe) (min_freq={min_freq})"] = list(vocab.encode(probe))
        outputs[f"decode(all ids) (min_freq={min_freq})"] = list(vocab.decode(list(range(len(vocab)))))
    return outputs


def check_vocab(Vocab) -> None:
    """Types; <unk> is id 0 and unknown tokens encode to it; ids by frequency; min_freq; decode undoes encode and takes
    tensors; the stored ids of stored tokens (naming known mistakes)."""
    fixture = _fixture("Vocab")
    tokens, probe, expected = fixture["tokens"], fixture["probe"], fixture["expected"]

    def types():
        vocab = Vocab.build(tokens)
        if not isinstance(vocab, Vocab):
            fail(f"Vocab.build should return a Vocab, but it returned a {type(vocab).__name__}. It is a "
                 "@classmethod: make the vocabulary with cls(...) and return it.")
        ids = vocab.encode(tokens[:5])
        if not (isinstance(ids, list) and all(type(i) is int for i in ids)):
            fail(f"encode should return a list of Python ints, but it returned {ids!r}.")
        back = vocab.decode(ids)
        if not (isinstance(back, list) and all(isinstance(t, str) for t in back)):
            fail(f"decode should return a list of strings (the tokens), but it returned {back!r}.")

    def unknown():
        vocab = Vocab.build(tokens)
        if vocab.decode([0]) != ["<unk>"]:
            fail(f"Id 0 should be \"<unk>\", but decode([0]) gives {vocab.decode([0])!r}.{_named_vocab()}")
        if vocab.encode(["dragon", "wyvern"]) != [0, 0]:
            fail(f"Tokens that are not in the vocabulary should encode to 0 (\"<unk>\"), but encode(['dragon', "
                 f"'wyvern']) gives {vocab.encode(['dragon', 'wyvern'])!r}.{_named_vocab()}")

    def _named_vocab() -> str:
        return _named(vocab_outputs(Vocab, tokens, probe), fixture["mistakes"])

    def ordered():
        got = vocab_outputs(Vocab, tokens, probe)
        for key, want in expected.items():
            if got[key] != want:
                fail(f"For the tokens\n    {' '.join(tokens)!r}\n  {key} gives\n    {got[key]!r}\n  expected\n    {want!r}"
                     f"\n  Id 0 is \"<unk>\"; ids 1, 2, ... go from the most to the least frequent token, ties in order "
                     f"of first appearance; min_freq keeps tokens seen at least min_freq times (none, when no token is "
                     f"that frequent); \"The\" and \"the\" are different tokens.{_named_vocab()}")

    def round_trip():
        vocab = Vocab.build(tokens)
        if vocab.decode(vocab.encode(tokens)) != tokens:
            fail("decode(encode(tokens)) should give back the tokens the vocabulary was built from.")
        ids = vocab.encode(probe)
        if vocab.decode(torch.tensor(ids)) != vocab.decode(ids):
            fail("decode should take a tensor of ids as well as a list (int(i) turns a tensor element into an int).")
        again = Vocab.build(list(tokens))
        if again.encode(tokens) != vocab.encode(tokens):
            fail("Two vocabularies built from the same tokens gave different ids: the ids must not depend on chance "
                 "(a set has no fixed order).")

    run_steps("Vocab", [
        ("build, len, encode and decode return a Vocab, an int, a list of ints and a list of strings", types),
        ("id 0 is <unk>, and unknown tokens encode to it", unknown),
        ("ids go from the most to the least frequent token, case kept; min_freq leaves out rare tokens", ordered),
        ("decode(encode(tokens)) gives the tokens back, from a list or a tensor of ids", round_trip),
    ])


# ---------------------------------------------------------------- chunk

def check_chunk(chunk) -> None:
    """Shape (len(ids) // seq_len, seq_len), dtype and device; the stored windows (naming known mistakes); windows do
    not overlap; on every device."""
    fixture = _fixture("chunk")

    def stored():
        for case in fixture["cases"]:
            ids, seq_len, expected = case["ids"], case["seq_len"], case["expected"]
            out = chunk(ids.clone(), seq_len)
            what = f"chunk(ids of length {len(ids)}, seq_len={seq_len})"
            if isinstance(out, torch.Tensor) and torch.equal(out.cpu(), expected):
                continue
            named = known_mistake(out.detach().cpu().double(), case["mistakes"], torch.float64) \
                if isinstance(out, torch.Tensor) else None
            hint = f"\n  This is a known mistake: {named}" if named else ""
            if isinstance(out, torch.Tensor) and tuple(out.shape) != tuple(expected.shape):
                fail(f"{what} has shape {tuple(out.shape)}; expected {tuple(expected.shape)}: N = len(ids) // seq_len "
                     f"= {len(ids) // seq_len} windows of {seq_len} ids.{hint}")
            expect_tensor(what, out, shape=expected.shape)
            row = int(torch.nonzero((out.cpu() != expected).any(1))[0])
            fail(f"{what}: window {row} is {out[row].tolist()}, expected {expected[row].tolist()}.{hint}")

    def dtype_and_device(device):
        def step():
            ids = torch.arange(50, device=device)
            out = chunk(ids, 7)
            expect_tensor("chunk(ids, 7)", out, shape=(7, 7), device=device)
            if out.dtype != ids.dtype:
                fail(f"The windows should keep the dtype of the ids ({ids.dtype}), but they have {out.dtype}.")
        return step

    def no_overlap():
        ids = torch.arange(1000)
        out = chunk(ids, 10)
        if len(torch.unique(out)) != out.numel():
            fail(f"Some ids are in more than one window.\n  This is a known mistake: "
                 f"{fixture['messages']['overlapping_windows']}")

    steps = [("cuts stored ids into the expected windows", stored),
             ("no id is in two windows", no_overlap)]
    steps += [(f"keeps the dtype and the device ({d.type})", dtype_and_device(d)) for d in available_devices()]
    run_steps("chunk", steps)


# ---------------------------------------------------------------- train_val_split

def _rows(t: torch.Tensor) -> list[tuple]:
    return [tuple(r) for r in t.tolist()]


def check_train_val_split(train_val_split) -> None:
    """Two tensors of windows; no window in both and none lost; validation is the last round(val_fraction * N) windows
    in order (Python's round, none or all of them too), training the ones before. A known mistake is named only when
    the split gives exactly its stored train and val on every stored case (its fingerprint)."""
    fixture = _fixture("train_val_split")

    def split(case):
        chunks = torch.arange(case["n"] * 3).reshape(case["n"], 3)
        out = train_val_split(chunks, case["fraction"])
        if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)):
            fail(f"train_val_split should return a tuple (train, val) of two tensors, but it returned {type(out).__name__}.")
        return chunks, out

    def named() -> str:
        """"\n  This is a known mistake: ..." for the stored mistake whose split this one is on every case, else ""."""
        outputs = [split(case)[1] for case in fixture["cases"]]
        for mistake_id, message in fixture["messages"].items():
            def fits(case, out):
                stored = case["mistakes"].get(mistake_id, {"train": case["train"], "val": case["val"]})
                return all(torch.equal(part.cpu(), stored[name]) for part, name in zip(out, ("train", "val")))
            if all(fits(case, out) for case, out in zip(fixture["cases"], outputs)):
                return f"\n  This is a known mistake: {message}"
        return ""

    def shapes():
        for case in fixture["cases"]:
            _, (train, val) = split(case)
            for name, part in (("train", train), ("val", val)):
                if part.dim() != 2 or part.shape[1] != 3:
                    fail(f"{name} should hold whole windows, shape (number of windows, seq_len) = (..., 3), but it has "
                         f"shape {tuple(part.shape)}.")

    def disjoint():
        for case in fixture["cases"]:
            chunks, (train, val) = split(case)
            what = f"With N={case['n']} windows and val_fraction={case['fraction']}"
            shared = set(_rows(train)) & set(_rows(val))
            if shared:
                fail(f"{what}, {len(shared)} windows are in both train and val: the model would be judged on text it "
                     f"trained on.{named()}")
            if sorted(_rows(train) + _rows(val)) != _rows(chunks):
                fail(f"{what}, train and val together should be every window once; "
                     f"{len(train) + len(val)} windows came back.{named()}")

    def contiguous():
        for case in fixture["cases"]:
            chunks, (train, val) = split(case)
            n, fraction = case["n"], case["fraction"]
            what = f"With N={n} windows and val_fraction={fraction}"
            n_val = round(fraction * n)
            if len(val) != n_val:
                ties = " (Python's round takes an exact .5 to the even number)" if (fraction * n) % 1 == 0.5 else ""
                fail(f"{what}, val should have round({fraction} * {n}) = {n_val} windows{ties}, but it has "
                     f"{len(val)}.{named()}")
            if torch.equal(train, chunks[: len(train)]) and torch.equal(val, chunks[len(train):]):
                continue
            kept_order = _rows(train) == sorted(_rows(train)) and _rows(val) == sorted(_rows(val))
            block = _rows(val) == _rows(chunks[n - len(val):])
            if not kept_order:
                fail(f"{what}, the windows are not in their original order. Keep it: shuffled, almost every validation "
                     f"window has its neighbours in training.{named()}")
            if not block:
                fail(f"{what}, val is not one block at the end of the windows.{named()}")
            fail(f"{what}, train should be the first {n - len(val)} windows and val the last {len(val)}.{named()}")

    run_steps("train_val_split", [
        ("returns (train, val), two tensors of windows", shapes),
        ("no window is in both, and none is lost", disjoint),
        ("val is the last round(val_fraction * N) windows, train the ones before, in order", contiguous),
    ])


# ---------------------------------------------------------------- evaluate

def check_evaluate(evaluate) -> None:
    """A Python float; the stored loss of a hand-made model on stored windows for several batch sizes, on every device
    (naming known mistakes); eval mode without gradients, the mode restored."""
    fixture = _fixture("evaluate")
    messages = fixture["messages"]

    def value():
        out = evaluate(toy_model(fixture["toy"]), fixture["chunks"], 4)
        if not isinstance(out, float):
            fail(f"evaluate should return a Python float (use .item()), but it returned a {type(out).__name__}.")

    def stored_on(device, dtype):
        def step():
            for case in fixture["cases"]:
                model = toy_model(fixture["toy"], device, dtype)
                out = float(evaluate(model, fixture["chunks"].to(device), case["batch_size"]))
                expected = case["expected"]
                if math.isclose(out, expected, rel_tol=1e-4 if dtype == torch.float32 else 1e-7):
                    continue
                message = (f"On {len(fixture['chunks'])} windows of {fixture['chunks'].shape[1]} tokens with batch_size="
                           f"{case['batch_size']}, the loss should be {expected:.5f} nats per token, but it is {out:.5f}.")
                for m in case["mistakes"].values():
                    if math.isclose(out, m["output"], rel_tol=1e-4):
                        message += f"\n  This is a known mistake: {m['message']}"
                        break
                fail(message)
        return step

    def modes():
        expect_evaluation_mode("evaluate", lambda m: evaluate(m, fixture["chunks"], 5),
                               toy_model(fixture["toy"], dropout=0.5),
                               f"\n  This is a known mistake: {messages['training_mode']}",
                               f"\n  This is a known mistake: {messages['leaves_eval_mode']}")

    steps = [("returns a Python float", value)]
    steps += [(f"gives the stored loss for batch sizes 4, 13 and 5 ({d.type}, {str(t).removeprefix('torch.')})",
               stored_on(d, t)) for d in available_devices() for t in (torch.float64, torch.float32)]
    steps += [("runs the model in eval mode without gradients and restores its mode", modes)]
    run_steps("evaluate", steps)


# ---------------------------------------------------------------- sample

class WordList:
    """A fixed vocabulary for trying `sample`: id i is words[i] (id 0 is "<unk>"), with encode, decode and len."""

    def __init__(self, words: list[str]):
        self.words = list(words)
        self._ids = {}
        for i, word in enumerate(self.words):
            self._ids.setdefault(word, i)

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, tokens: list[str]) -> list[int]:
        return [self._ids.get(t, 0) if isinstance(t, str) else 0 for t in tokens]

    def decode(self, ids) -> list[str]:
        if not (isinstance(ids, list) and all(type(i) is int for i in ids)):  # a tensor, nested lists, numpy
            ids = torch.as_tensor(ids).reshape(-1).tolist()
        return [self.words[i] for i in ids]


SAMPLES = 5000  # calls of `sample` per distribution
SAMPLING_TOLERANCE = 0.03  # largest allowed gap between a sampled frequency and its probability (about 4 standard errors)


def next_word_frequencies(sample, model, vocab, prompt: str, temperature: float, top_k, generator,
                          samples: int = SAMPLES) -> torch.Tensor:
    """How often each token of `vocab` came right after `prompt` in `samples` calls of sample(..., n_tokens=1):
    (len(vocab),). `vocab` is any vocabulary with len and decode."""
    place = {}
    for i, token in enumerate(vocab.decode(list(range(len(vocab))))):
        place.setdefault(token, i)
    counts = [0] * len(vocab)
    for _ in range(samples):
        out = sample(model, vocab, prompt, 1, temperature=temperature, top_k=top_k, generator=generator)
        if not (isinstance(out, str) and out.startswith(prompt) and out[len(prompt):] in place):
            raise ValueError(f"sample(model, vocab, {prompt!r}, 1) gave {out!r}: the prompt followed by one token was "
                             "expected.")
        counts[place[out[len(prompt):]]] += 1
    return torch.tensor(counts, dtype=torch.float64) / samples


class StoredTokens:
    """Stands in for the notebook's `tokenize` while `sample` is checked: the stored tokens of the prompts the check
    uses, so that a mistake in `tokenize` costs points only in its own check. Any other text goes to `fallback` (the
    notebook's own)."""

    def __init__(self, tokens_of: dict[str, list[str]], fallback=None):
        self.tokens_of = tokens_of
        self.fallback = fallback

    def __call__(self, text: str) -> list[str]:
        if text in self.tokens_of:
            return list(self.tokens_of[text])
        return self.fallback(text)


def stored_tokenize(sample):
    """A context in which `sample` reads the stored prompt tokens in place of the notebook's own `tokenize`."""
    fallback = notebook_globals(sample).get("tokenize")
    return earlier_pieces_replaced(sample, tokenize=StoredTokens(_fixture("sample")["prompt_tokens"], fallback))


def check_sample(sample) -> None:
    """A string that starts with the prompt; greedy text of a hand-made model on every device (naming known
    mistakes), none when n_tokens=0; the frequency of the next word under temperature and top-k; a top_k above the
    vocabulary size; seeds reproduce. The prompts are tokenized by a stand-in with their stored tokens."""
    with stored_tokenize(sample):
        _check_sample(sample)


def _check_sample(sample) -> None:
    fixture = _fixture("sample")
    words = WordList(fixture["words"])

    def greedy_on(device):
        def step():
            model = toy_model(fixture["toy"], device)
            for case in fixture["greedy"]:
                out = sample(model, words, case["prompt"], case["n_tokens"], temperature=0)
                if not isinstance(out, str):
                    fail(f"sample should return a string, but it returned a {type(out).__name__}.")
                if out == case["expected"]:
                    continue
                named = _named(out, case["mistakes"])
                again = [sample(model, words, case["prompt"], case["n_tokens"], temperature=0) for _ in range(3)]
                if not named and any(a != out for a in again):  # drawn at random: named only if at temperature 1
                    seeded = [sample(model, words, case["prompt"], case["n_tokens"], temperature=t,
                                     generator=torch.Generator(device).manual_seed(5)) for t in (0, 1.0)]
                    named = (f"\n  This is a known mistake: {fixture['messages']['ignores_temperature']}"
                             if seeded[0] == seeded[1] else
                             "\n  Three more calls gave other text: at temperature=0 nothing is drawn at random.")
                fail(f"Greedy sampling (temperature=0) of {case['n_tokens']} tokens after {case['prompt']!r} gave\n"
                     f"    {out!r}\n  expected\n    {case['expected']!r}{named}")
        return step

    def distribution(case):
        def step():
            model = toy_model(fixture["toy"])
            try:
                freq = next_word_frequencies(sample, model, words, case["prompt"], case["temperature"], case["top_k"],
                                             torch.Generator().manual_seed(11), fixture["samples"])
            except ValueError as error:
                fail(str(error))
            gap = (freq - case["probabilities"]).abs()
            if gap.max() <= SAMPLING_TOLERANCE:
                return
            i = int(gap.argmax())
            message = (f"In {fixture['samples']} samples of one word after {case['prompt']!r} at temperature "
                       f"{case['temperature']}, top_k={case['top_k']}, the word {words.words[i]!r} came "
                       f"{freq[i].item():.3f} of the time, but its probability is {case['probabilities'][i].item():.3f}.")
            for m in case["mistakes"].values():
                if (freq - m["output"]).abs().max() <= SAMPLING_TOLERANCE:
                    message += f"\n  This is a known mistake: {m['message']}"
                    break
            fail(message)
        return step

    def seeded(seed: int, top_k=None) -> str:
        return sample(toy_model(fixture["toy"]), words, fixture["free_prompt"], 12, temperature=1.5, top_k=top_k,
                      generator=torch.Generator().manual_seed(seed))

    def reproducible():
        runs = [seeded(s) for s in (3, 3, 4)]
        if runs[0] != runs[1]:
            fail(f"Two calls with generators seeded alike gave different text.\n  This is a known mistake: "
                 f"{fixture['messages']['ignores_generator']}")
        if runs[0] == runs[2]:
            fail("Different seeds gave the same text at temperature 1.5: is the text sampled at all?")

    def top_k_above_vocabulary():
        k = len(words) + 4
        if seeded(3, top_k=k) != seeded(3):
            fail(f"With top_k={k}, more than the {len(words)} tokens of the vocabulary, every token may be drawn, so "
                 "the text should be the one top_k=None gives with the same seed. Pass top_k on to generate "
                 "unchanged.")

    steps = [(f"greedy text is the stored text ({d.type})", greedy_on(d)) for d in available_devices()]
    steps += [(f"the next word follows softmax(logits / {c['temperature']})"
               + (f" over the top {c['top_k']}" if c["top_k"] else ""), distribution(c)) for c in fixture["sampling"]]
    steps += [("a seeded generator makes the text reproducible", reproducible),
              ("a top_k above the vocabulary size keeps every token", top_k_above_vocabulary)]
    run_steps("sample", steps)


# ---------------------------------------------------------------- the training loop: parameter_groups, learning_rate, train_model

class TinyLanguageModel(nn.Module):
    """A small real language model for trying training code: logits = lm_head(norm(embed(tokens))), so each
    prediction reads only its own token (a bigram model). Its parameters are of the kinds a Transformer has: an
    embedding table and a weight matrix (2-D), a LayerNorm's weight and bias and a linear layer's bias (1-D). It keeps
    a record of each call: (training mode, gradients on, the tokens)."""

    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=True)
        self.calls: list[tuple[bool, bool, torch.Tensor]] = []

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, T) -> logits (B, T, vocab_size)."""
        self.calls.append((self.training, torch.is_grad_enabled(), tokens.detach().cpu()))
        return self.lm_head(self.norm(self.embed(tokens)))


def tiny_model(state: dict, device=torch.device("cpu"), dtype=torch.float64) -> TinyLanguageModel:
    """A TinyLanguageModel with the weights `state` (a state_dict), on `device` in `dtype`."""
    vocab_size, d_model = state["embed.weight"].shape
    model = TinyLanguageModel(vocab_size, d_model)
    model.load_state_dict(state)
    return model.to(device, dtype)


def group_names(groups, model: nn.Module) -> tuple[list[str], list[str]] | str:
    """The names of the parameters in a decayed group and in an undecayed one, in model.parameters() order; a string
    that says what is wrong when `groups` is not a list of parameter groups."""
    if not isinstance(groups, (list, tuple)) or not all(isinstance(g, dict) and "params" in g for g in groups):
        return (f"parameter_groups should return a list of dicts, each with \"params\" and \"weight_decay\", but it "
                f"returned {type(groups).__name__}.")
    name_of = {id(p): name for name, p in model.named_parameters()}
    decayed, undecayed, seen = [], [], []
    for group in groups:
        params = list(group["params"])
        if not all(isinstance(p, torch.Tensor) and id(p) in name_of for p in params):
            return "Every entry of a group's \"params\" should be one of model.parameters()."
        seen += [name_of[id(p)] for p in params]
        (decayed if group.get("weight_decay", 0.0) else undecayed).extend(name_of[id(p)] for p in params)
    order = list(name_of.values())
    missing = [n for n in order if n not in seen]
    twice = sorted({n for n in seen if seen.count(n) > 1})
    if missing or twice:
        return (f"Every parameter should be in exactly one group: {', '.join(missing) or 'none'} missing, "
                f"{', '.join(twice) or 'none'} in two groups.")
    return [n for n in order if n in decayed], [n for n in order if n in undecayed]


def check_parameter_groups(parameter_groups) -> None:
    """Two groups, with weight_decay as given and 0.0; every parameter in one of them; the matrices and the embedding
    table decayed, the biases and LayerNorm weights not (naming known mistakes)."""
    fixture = _fixture("parameter_groups")

    def named(names) -> str:
        for mistake in fixture["mistakes"].values():
            if mistake["output"] == names:
                return f"\n  This is a known mistake: {mistake['message']}"
        return ""

    def shape():
        model = tiny_model(fixture["state"])
        groups = parameter_groups(model, 0.1)
        found = group_names(groups, model)
        if isinstance(found, str):
            fail(found)
        decays = sorted(float(g.get("weight_decay", 0.0)) for g in groups)
        if len(groups) != 2 or decays != [0.0, 0.1]:
            fail(f"parameter_groups(model, 0.1) should give two groups, one with \"weight_decay\": 0.1 and one with "
                 f"0.0, but their weight decays are {decays}.{named(found)}")

    def right_ones():
        model = tiny_model(fixture["state"])
        found = group_names(parameter_groups(model, 0.1), model)
        if isinstance(found, str):
            fail(found)
        if tuple(found) != tuple(fixture["expected"]):
            fail(f"Decayed: {found[0]}; not decayed: {found[1]}. Expected decayed: {fixture['expected'][0]}; not "
                 f"decayed: {fixture['expected'][1]}.{named(found)}")

    run_steps("parameter_groups", [
        ("two groups: weight_decay as given, and 0.0; every parameter in one of them", shape),
        ("decays the matrices and the embedding, not the biases or the LayerNorm", right_ones),
    ])


def check_learning_rate(learning_rate) -> None:
    """A Python float; the stored rate of every update for stored settings (naming known mistakes)."""
    fixture = _fixture("learning_rate")

    def value():
        out = learning_rate(0, 1e-3, 10, 100)
        if not isinstance(out, float):
            fail(f"learning_rate should return a Python float, but it returned a {type(out).__name__}.")

    def stored():
        for case in fixture["cases"]:
            args = case["args"]
            rates = [float(learning_rate(step, *args)) for step in range(args[2])]
            if all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15) for a, b in zip(rates, case["expected"])):
                continue
            step = next(s for s, (a, b) in enumerate(zip(rates, case["expected"]))
                        if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15))
            message = (f"learning_rate(step, max_lr={args[0]:g}, warmup_steps={args[1]}, total_steps={args[2]}, "
                       f"min_lr={args[3]:g}) at step {step} is {rates[step]:.6g}, expected {case['expected'][step]:.6g}.")
            for mistake in case["mistakes"].values():
                if all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-15) for a, b in zip(rates, mistake["output"])):
                    message += f"\n  This is a known mistake: {mistake['message']}"
                    break
            fail(message)

    run_steps("learning_rate", [
        ("returns a Python float", value),
        ("rises linearly over the warmup, then follows the cosine down to min_lr", stored),
    ])


class StandInGroups:
    """Stands in for the notebook's parameter_groups while train_model is checked: the stored split of a
    TinyLanguageModel's parameters, so that a mistake in parameter_groups costs points only in its own check.
    Records each call's weight_decay."""

    def __init__(self, decayed: list[str]):
        self.decayed = list(decayed)
        self.calls: list[float] = []

    def __call__(self, model: nn.Module, weight_decay: float) -> list[dict]:
        self.calls.append(weight_decay)
        named = list(model.named_parameters())
        return [{"params": [p for n, p in named if n in self.decayed], "weight_decay": weight_decay},
                {"params": [p for n, p in named if n not in self.decayed], "weight_decay": 0.0}]


class StandInSchedule:
    """Stands in for the notebook's learning_rate: rates[step] from a stored table (any schedule will do to check
    a loop), and a record of every (step, max_lr, warmup_steps, total_steps) asked."""

    def __init__(self, rates: list[float]):
        self.rates = list(rates)
        self.asked: list[tuple] = []

    def __call__(self, step, max_lr, warmup_steps, total_steps, min_lr=0.0) -> float:
        self.asked.append((int(step), max_lr, warmup_steps, total_steps))
        return self.rates[min(max(int(step), 0), len(self.rates) - 1)]

    def steps_asked(self) -> list[int]:
        """The steps asked for, in order, a step asked again at once counted once (a loop may ask per group)."""
        steps = [step for step, *_ in self.asked]
        return [step for i, step in enumerate(steps) if i == 0 or steps[i - 1] != step]


class StandInScore:
    """Stands in for the notebook's evaluate: a score that is the squared distance of the model's weights from
    stored ones (lower is better), so that which weights a loop keeps shows, whatever evaluate does. Records each
    call: (the number of windows, batch_size)."""

    def __init__(self, target: dict):
        self.target = target
        self.calls: list[tuple[int, int]] = []

    def __call__(self, model: nn.Module, windows: torch.Tensor, batch_size: int) -> float:
        self.calls.append((len(windows), batch_size))
        with torch.no_grad():
            return float(sum(((p.detach().cpu().double() - self.target[n]) ** 2).sum()
                             for n, p in model.named_parameters()))


def run_loop(train_model, case: dict, device=torch.device("cpu"), dtype=torch.float64, model_mode: bool = False):
    """Run train_model on the stored windows of `case` with stand-ins for parameter_groups, learning_rate and
    evaluate; returns (history, model, the stand-ins)."""
    model = tiny_model(case["state"], device, dtype).train(model_mode)
    groups, schedule, score = StandInGroups(case["decayed"]), StandInSchedule(case["rates"]), StandInScore(case["target"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tensors this small: a hundred times faster than two threads on a busy machine
    try:
        with earlier_pieces_replaced(train_model, parameter_groups=groups, learning_rate=schedule, evaluate=score):
            history = train_model(model, case["train_windows"], case["val_windows"], **case["settings"],
                                  generator=torch.Generator().manual_seed(case["seed"]))
    finally:
        torch.set_num_threads(threads)
    return history, model, (groups, schedule, score)


def loop_outputs(history, model: nn.Module) -> dict:
    """What a training run is judged by: the loss of each update, the validation steps and scores, the final weights
    (float64, on the CPU)."""
    return {"train": [float(x) for x in history["train"]], "eval_step": [int(s) for s in history["eval_step"]],
            "val": [float(x) for x in history["val"]],
            "final": {n: p.detach().cpu().double() for n, p in model.named_parameters()}}


def _close_lists(a: list, b: list, rel_tol: float) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=rel_tol, abs_tol=rel_tol) for x, y in zip(a, b))


def _close_weights(a: dict, b: dict, rel_tol: float) -> bool:
    return all(torch.allclose(a[n], b[n], rtol=rel_tol, atol=rel_tol) for n in b)


def check_train_model(train_model) -> None:
    """With stand-ins for parameter_groups, learning_rate and evaluate: the history's form; learning_rate asked for
    every update in order; training mode; the stored loss of every update, validation steps and final (best)
    weights of a tiny model, on every device (naming known mistakes); float32 too."""
    fixture = _fixture("train_model")
    case = fixture["case"]
    settings = case["settings"]
    expected = case["expected"]

    def named(outputs, key) -> str:
        for mistake in case["mistakes"].values():
            theirs = mistake["output"]
            if key == "train" and _close_lists(outputs["train"], theirs["train"], 1e-6):
                return f"\n  This is a known mistake: {mistake['message']}"
            if key == "final" and _close_lists(outputs["train"], theirs["train"], 1e-6) and \
                    _close_weights(outputs["final"], theirs["final"], 1e-6):
                return f"\n  This is a known mistake: {mistake['message']}"
        return ""

    def form():
        history, _, _ = run_loop(train_model, case)
        if not isinstance(history, dict):
            fail(f"train_model should return a dict (the history), but it returned a {type(history).__name__}.")
        missing = [k for k in ("step", "train", "eval_step", "val", "best_step", "best_val") if k not in history]
        if missing:
            fail(f"The history has no {', '.join(repr(k) for k in missing)}.")
        steps = settings["steps"]
        if list(history["step"]) != list(range(1, steps + 1)) or len(history["train"]) != steps:
            fail(f"With steps={steps}, history[\"step\"] should be [1, ..., {steps}] and history[\"train\"] hold "
                 f"{steps} losses; they hold {len(history['step'])} and {len(history['train'])}.")
        if not all(isinstance(x, float) for x in history["train"]):
            fail("history[\"train\"] should hold Python floats (loss.item()).")

    def pieces():
        _, model, (groups, schedule, score) = run_loop(train_model, case)
        if groups.calls != [settings["weight_decay"]]:
            fail(f"The optimizer should be made once, from parameter_groups(model, weight_decay): it was called "
                 f"{len(groups.calls)} times.\n  This is a known mistake: {fixture['messages']['ignores_groups']}"
                 if not groups.calls else f"parameter_groups was called {len(groups.calls)} times; once is enough.")
        asked = schedule.steps_asked()
        want = list(range(settings["steps"]))
        if asked != want:
            off = asked == [s + 1 for s in want]
            fail(f"learning_rate should be asked for steps 0, 1, ..., {want[-1]}, one per update, in order; it was "
                 f"asked for {asked[:6]}{' ...' if len(asked) > 6 else ''}."
                 + (f"\n  This is a known mistake: {fixture['messages']['schedule_one_step_late']}" if off else ""))
        wrong = {a[1:] for a in schedule.asked} - {(settings["max_lr"], settings["warmup_steps"], settings["steps"])}
        if wrong:
            fail(f"learning_rate should get max_lr={settings['max_lr']}, warmup_steps={settings['warmup_steps']} and "
                 f"total_steps=steps={settings['steps']}; it got {sorted(wrong)}.")
        val_calls = [c for c in model.calls if int(c[2][0, 0]) == case["val_marker"]]
        if val_calls:
            fail("The validation windows went through the model inside train_model: score them with evaluate(model, "
                 "val_windows[:eval_windows], batch_size), your function from above (it runs the model in eval mode "
                 "without gradients)."
                 + (f"\n  This is a known mistake: {fixture['messages']['validates_in_training_mode']}"
                    if any(t for t, _, _ in val_calls) else "")
                 + (f"\n  This is a known mistake: {fixture['messages']['validates_with_gradients']}"
                    if any(g for _, g, _ in val_calls) else ""))
        if any(not t for t, g, _ in model.calls if g):
            fail(f"The model trained in eval mode (it arrived in eval mode).\n  This is a known mistake: "
                 f"{fixture['messages']['trains_in_eval_mode']}")
        if score.calls and any(c != (min(settings["eval_windows"], len(case["val_windows"])), settings["batch_size"])
                               for c in score.calls):
            fail(f"evaluate should get val_windows[:eval_windows] ({settings['eval_windows']} windows) and "
                 f"batch_size; it got (windows, batch_size) = {score.calls[0]}.")

    def trajectory_on(device, dtype):
        def step():
            history, model, _ = run_loop(train_model, case, device, dtype)
            outputs = loop_outputs(history, model)
            tol = 1e-6 if dtype == torch.float64 else 2e-3
            where = f"({device.type}, {str(dtype).removeprefix('torch.')})"
            if not _close_lists(outputs["train"], expected["train"], tol):
                step_ = next((i for i, (a, b) in enumerate(zip(outputs["train"], expected["train"]))
                              if not math.isclose(a, b, rel_tol=tol, abs_tol=tol)), len(outputs["train"]))
                got = f"{outputs['train'][step_]:.6f}" if step_ < len(outputs["train"]) else "missing"
                fail(f"{where} The loss of update {step_ + 1} is {got}, expected {expected['train'][step_]:.6f}: "
                     f"the updates differ from there on.{named(outputs, 'train')}")
            if outputs["eval_step"] != expected["eval_step"]:
                fail(f"{where} Validation ran after updates {outputs['eval_step']}; with steps={settings['steps']} and "
                     f"eval_every={settings['eval_every']} it should run after {expected['eval_step']} (every "
                     f"eval_every updates, and after the last).")
            if int(history["best_step"]) != expected["best_step"]:
                fail(f"{where} best_step is {history['best_step']}, but the best validation score came after update "
                     f"{expected['best_step']}.{named(outputs, 'final')}")
            if not _close_weights(outputs["final"], expected["final"], tol):
                fail(f"{where} The model does not end with the weights of its best validation score (after update "
                     f"{expected['best_step']} of {settings['steps']}).{named(outputs, 'final')}")
        return step

    steps = [("returns the history: a loss per update, the validation steps and scores, the best", form),
             ("uses parameter_groups, asks learning_rate for every update in order, trains in training mode, "
              "validates with evaluate", pieces)]
    steps += [(f"the stored loss of every update, validation steps and best weights ({d.type}, float64)",
               trajectory_on(d, torch.float64)) for d in available_devices()]
    steps += [("the same in float32 (cpu)", trajectory_on(torch.device("cpu"), torch.float32))]
    run_steps("train_model", steps)


# ---------------------------------------------------------------- written_*

def written_tokenize(tokenize) -> None:
    assert_written("tokenize", lambda: tokenize("To be"))


def written_vocab(Vocab) -> None:
    def attempt():
        vocab = Vocab.build(["to", " ", "be"])
        vocab.decode(vocab.encode(["to"]))
        len(vocab)
    assert_written("Vocab", attempt)


def written_chunk(chunk) -> None:
    assert_written("chunk", lambda: chunk(torch.arange(4), 2))


def written_train_val_split(train_val_split) -> None:
    assert_written("train_val_split", lambda: train_val_split(torch.arange(20).reshape(10, 2), 0.1))


def written_evaluate(evaluate) -> None:
    fixture = _fixture("evaluate")
    assert_written("evaluate", lambda: evaluate(toy_model(fixture["toy"]), fixture["chunks"], 4))


def written_sample(sample) -> None:
    fixture = _fixture("sample")
    with stored_tokenize(sample):
        assert_written("sample", lambda: sample(toy_model(fixture["toy"]), WordList(fixture["words"]), "the", 1,
                                                temperature=0))


def written_parameter_groups(parameter_groups) -> None:
    assert_written("parameter_groups", lambda: parameter_groups(nn.Linear(2, 2), 0.1))


def written_learning_rate(learning_rate) -> None:
    assert_written("learning_rate", lambda: learning_rate(0, 1e-3, 10, 100))


def written_train_model(train_model) -> None:
    case = _fixture("train_model")["case"]
    assert_written("train_model", lambda: run_loop(train_model, {**case, "settings": {**case["settings"], "steps": 1}}))

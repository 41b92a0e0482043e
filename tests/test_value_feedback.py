"""What a value comparison accepts and says (issue 25, items 3 and 4).

Logits are logits up to a constant per position: a model that returns log-probabilities passes 05's checks and hidden
tests (tests/mutants/transformer.py lists it among the VARIANTS, and a per-position scale or a shift that varies over
the vocabulary among the MUTANTS); the check says why it passed; a known mistake that returns log-probabilities is
still named; and 06's and 07's helpers that read a model's outputs (softmax, cross-entropy, argmax) do not care.

A value mismatch shows two numbers that differ, and a float64 result with float32's precision is named as such.
"""
import math
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from autograder.authoring.hidden import shakespeare as hidden_07
from autograder.authoring.hidden import transformer as hidden_05
from autograder.authoring.hidden.attention import test_attention as hidden_attention
from autograder.authoring.hidden.models import next_probabilities, pair_probabilities
from autograder.authoring.hidden.observe import HiddenTestFailed
from autograder.authoring.mistakes import for_exercise
from autograder.paths import FIXTURES
from autograder.authoring.reference import reversal as ref_06
from autograder.authoring.reference import shakespeare as ref_07
from autograder.authoring.reference import transformer as ref_05
from course.checks import check_attention, check_decoder_only_transformer, check_encoder_decoder_transformer
from course.checks.compare import float32_precision, shown_apart
from course.checks.report import CheckFailed
from course.checks.transformer import SHIFT_NOTE, toy_model
from course.fixtures import load
from tests.mutants import transformer as listing

CHECKS = {"DecoderOnlyTransformer": check_decoder_only_transformer,
          "EncoderDecoderTransformer": check_encoder_decoder_transformer}
HIDDEN = {"DecoderOnlyTransformer": hidden_05.test_decoder_only_transformer,
          "EncoderDecoderTransformer": hidden_05.test_encoder_decoder_transformer}


def _feedback(check, impl) -> str:
    with pytest.raises(CheckFailed) as failure:
        check(impl)
    return str(failure.value)


# ---------------------------------------------------------------- logits up to a constant per position

def test_log_probabilities_pass_and_the_check_says_why(capsys):
    check_decoder_only_transformer(listing.decoder_only_log_probabilities)
    out = capsys.readouterr().out
    assert out.count(SHIFT_NOTE) == 1 and "🎉 DecoderOnlyTransformer: all checks passed." in out


def test_raw_logits_pass_without_the_note(capsys):
    check_decoder_only_transformer(ref_05.DecoderOnlyTransformer)
    assert SHIFT_NOTE not in capsys.readouterr().out


def _log_probabilities_of(cls):
    """`cls` whose forward returns log_softmax of its output: a student's log-probabilities."""
    return type(f"{cls.__name__}_log_probabilities", (cls,),
                {"forward": lambda self, *args: cls.forward(self, *args).log_softmax(-1)})


@pytest.mark.parametrize("known", for_exercise("DecoderOnlyTransformer") + for_exercise("EncoderDecoderTransformer"),
                         ids=lambda m: m.id)
def test_a_known_mistake_returning_log_probabilities_is_still_named(known, capsys):
    impl = _log_probabilities_of(known.impl)
    assert known.message in _feedback(CHECKS[known.exercise], impl)
    with pytest.raises(HiddenTestFailed):
        HIDDEN[known.exercise](impl)


def test_a_wrong_model_returning_log_probabilities_is_compared_after_the_best_shift(capsys):
    message = _feedback(check_decoder_only_transformer, _log_probabilities_of(listing.logits_scaled_per_position))
    assert "differs from the expected values" in message
    assert "yours were first moved by the constant that fits best" in message
    with pytest.raises(HiddenTestFailed, match="values differ from the reference: at index"):
        hidden_05.test_decoder_only_transformer(listing.logits_scaled_per_position)


class LogProbabilities(torch.nn.Module):
    """A model's log-probabilities in place of its logits, its mode and max_len kept (06 and 07 read both)."""

    def __init__(self, model):
        super().__init__()
        self.model, self.embedding = model, model.embedding

    def forward(self, tokens):
        return F.log_softmax(self.model(tokens), dim=-1)


def test_what_06_and_07_read_of_a_model_is_the_same_for_log_probabilities():
    """The reference's per_position_accuracy, evaluate, generate and sample, and the exact probabilities the hidden
    tests judge samples by, give the same on a toy model and on its log-probabilities: none of them assumes raw
    logits, so a student's model that returns log-probabilities is judged alike wherever 06 and 07 read it."""
    toy = load("shakespeare")["evaluate"]["toy"]
    model = toy_model(toy)
    shifted = LogProbabilities(model)
    V = toy["follow"].shape[0]
    batch = torch.randint(0, V, (7, 6), generator=torch.Generator().manual_seed(3))
    assert torch.equal(ref_06.per_position_accuracy(model, batch), ref_06.per_position_accuracy(shifted, batch))
    assert math.isclose(ref_07.evaluate(model, batch, 3), ref_07.evaluate(shifted, batch, 3), rel_tol=1e-12)
    prompt = batch[:2, :4]
    assert torch.equal(ref_05.generate(model, prompt, 5, temperature=0),
                       ref_05.generate(shifted, prompt, 5, temperature=0))
    for temperature, top_k in [(1.0, None), (0.7, 3)]:
        torch.testing.assert_close(pair_probabilities(model, prompt[:1], temperature, top_k),
                                   pair_probabilities(shifted, prompt[:1], temperature, top_k))
        torch.testing.assert_close(next_probabilities(model, prompt, temperature, top_k),
                                   next_probabilities(shifted, prompt, temperature, top_k))
        runs = [ref_05.generate(m, prompt, 6, temperature=temperature, top_k=top_k,
                                generator=torch.Generator().manual_seed(5)) for m in (model, shifted)]
        assert torch.equal(*runs)
    words = hidden_07.WordList(hidden_07.WORDS[:V])
    texts = [ref_07.sample(m, words, "to be", 6, temperature=1.2, generator=torch.Generator().manual_seed(2))
             for m in (model, shifted)]
    assert texts[0] == texts[1]


# ---------------------------------------------------------------- the numbers of a mismatch

def test_two_numbers_are_written_until_they_differ():
    assert shown_apart(0.260578, 0.505299) == ("0.260578", "0.505299")
    assert shown_apart(0.68314500, 0.68314508) == ("0.6831450", "0.6831451")
    expected, actual = shown_apart(1 / 3, 1 / 3 + 1e-15)
    assert expected != actual


def attention_softmax_in_float32(Q, K, V):  # the case: softmax(..., dtype=torch.float32) for float64 inputs
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1, dtype=torch.float32)
    weights = weights.to(Q.dtype)
    return weights @ V, weights


def _numbers(message: str) -> tuple[str, str]:
    shown = message.split(" expected ", 1)[1]
    expected, rest = shown.split(", got ", 1)
    return expected, rest.split(" ", 1)[0]


def test_a_float64_result_with_float32_precision_is_named(capsys):
    message = _feedback(check_attention, attention_softmax_in_float32)
    assert "float64" in message.splitlines()[0]
    expected, got = _numbers(message)
    assert expected != got, message
    assert "float32 number" in message and "softmax forced to float32" in message
    with pytest.raises(HiddenTestFailed) as failure:
        hidden_attention(attention_softmax_in_float32)
    expected, got = _numbers(str(failure.value))
    assert expected != got and "softmax forced to float32" in str(failure.value)


def test_float32_precision_is_told_when_the_values_only_agree_to_7_digits():
    expected = torch.linspace(-2, 3, 50, dtype=torch.float64).exp()
    near = expected * (1 + 1e-7 * torch.linspace(-1, 1, 50, dtype=torch.float64))  # not float32 numbers
    assert "7 significant digits" in float32_precision(near, expected)
    assert float32_precision(expected * 1.001, expected) == ""


def _stored_mistakes():
    for path in sorted(Path(FIXTURES).glob("*.pt")):
        stack = [(path.stem, torch.load(path, weights_only=False))]
        while stack:
            where, value = stack.pop()
            if isinstance(value, dict):
                expected = value.get("expected")
                if isinstance(expected, torch.Tensor) and expected.dtype == torch.float64 and \
                        isinstance(value.get("mistakes"), dict):
                    for mistake_id, mistake in value["mistakes"].items():
                        if isinstance(mistake.get("output"), torch.Tensor) and \
                                mistake["output"].shape == expected.shape:
                            yield pytest.param(mistake["output"], expected, id=f"{where}.{mistake_id}")
                stack += [(f"{where}.{k}", v) for k, v in value.items()]
            elif isinstance(value, (list, tuple)):
                stack += [(f"{where}[{i}]", v) for i, v in enumerate(value)]


@pytest.mark.parametrize("output, expected", list(_stored_mistakes()))
def test_no_known_mistake_is_called_a_float32_precision_problem(output, expected):
    """A mistake in a formula is never far enough from its float64 expected values to be taken for lost precision."""
    assert float32_precision(output.to(torch.float64), expected) == ""


READERS = [("transformer", "generate", ref_05.generate), ("transformer", "generate_cached", ref_05.generate_cached),
           ("reversal", "per_position_accuracy", ref_06.per_position_accuracy),
           ("shakespeare", "evaluate", ref_07.evaluate), ("shakespeare", "sample", ref_07.sample)]


@pytest.mark.parametrize("module, exercise, reference", READERS, ids=[r[1] for r in READERS])
def test_the_checks_and_hidden_tests_of_what_reads_a_model_pass_on_log_probabilities(module, exercise, reference,
                                                                                    monkeypatch, capsys):
    """Every hand-made toy model of the checks and hidden tests returns log-probabilities instead of its logits: the
    reference's generate, generate_cached (through the stand-in for forward_with_cache, which reads the toy model),
    per_position_accuracy, evaluate and sample still pass both, so neither assumes raw logits."""
    import importlib

    from course.checks.transformer import ToyLanguageModel
    from tests.exercises import hidden_test, visible_check

    forward = ToyLanguageModel.forward
    monkeypatch.setattr(ToyLanguageModel, "forward", lambda self, tokens: forward(self, tokens).log_softmax(-1))
    importlib.import_module(f"autograder.authoring.hidden.{module}")
    visible_check(exercise)(reference)
    hidden_test(module, exercise)(reference)

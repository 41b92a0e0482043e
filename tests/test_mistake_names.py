"""A name is right or absent (issue 25.5): the feedback names a known mistake only when the output fits that mistake's
fingerprint.

- Every known mistake's visible check names it and no other known mistake of its exercise (unless both say the same).
- The mutants a listing puts in `NAMED_AS` are named as it says: a given known mistake, or none at all.
- In the stored fixtures, no mistake's fingerprint is the expected output, and no two mistakes with different
  messages leave the same fingerprint (the first would be named for both); logits compare as the checks compare
  them, up to a constant at each position.
"""
import importlib
from pathlib import Path

import pytest
import torch

from autograder.authoring.mistakes import all_mistakes, for_exercise
from autograder.paths import FIXTURES
from course.checks.compare import KNOWN_MISTAKE, is_close
from course.checks.report import CheckFailed
from tests.exercises import MUTANT_MODULES, visible_check

# Fixture entries whose tensors are logits: compared, like the checks compare them, up to a constant per position.
LOGITS = {("transformer", "DecoderOnlyTransformer"), ("transformer", "EncoderDecoderTransformer"),
          ("transformer", "forward_with_cache")}


def _feedback(exercise: str, impl) -> str:
    with pytest.raises(CheckFailed) as failure:
        visible_check(exercise)(impl)
    return str(failure.value)


@pytest.mark.parametrize("known", all_mistakes(), ids=lambda m: f"{m.exercise}-{m.id}")
def test_a_known_mistake_is_named_by_its_own_message_only(known, capsys):
    message = _feedback(known.exercise, known.impl)
    others = [m.id for m in for_exercise(known.exercise) if m.message != known.message and m.message in message]
    assert not others, f"{known.id} is also named as {others}:\n{message}"


def _named_as() -> list:
    for module in MUTANT_MODULES:
        listing = importlib.import_module(f"tests.mutants.{module}")
        exercise_of = {impl: exercise for exercise, impl in listing.MUTANTS}
        for impl, mistake_id in getattr(listing, "NAMED_AS", {}).items():
            yield pytest.param(exercise_of[impl], impl, mistake_id, id=f"{exercise_of[impl]}-{impl.__name__}")


@pytest.mark.parametrize("exercise, impl, mistake_id", list(_named_as()))
def test_a_mutant_is_named_as_its_listing_says(exercise, impl, mistake_id, capsys):
    message = _feedback(exercise, impl)
    if mistake_id is None:
        assert KNOWN_MISTAKE not in message, f"{impl.__name__} got a name it does not deserve:\n{message}"
    else:
        known = next(m for m in for_exercise(exercise) if m.id == mistake_id)
        assert f"{KNOWN_MISTAKE}: {known.message}" in message, f"{impl.__name__} is not named {mistake_id}:\n{message}"


def _entries(value, where: tuple):
    """(where, entry) for every dict of the fixture tree that holds an expected output and stored mistakes."""
    if isinstance(value, dict):
        if "mistakes" in value and isinstance(value["mistakes"], dict):
            yield where, value
        for key, inner in value.items():
            yield from _entries(inner, (*where, key))
    elif isinstance(value, (list, tuple)):
        for i, inner in enumerate(value):
            yield from _entries(inner, (*where, i))


def _same(a, b, up_to_shift: bool) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.is_floating_point() or b.is_floating_point():
            return is_close(a, b, torch.float64, up_to_shift)
        return tuple(a.shape) == tuple(b.shape) and torch.equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y, up_to_shift) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _fixture_entries() -> list:
    for path in sorted(Path(FIXTURES).glob("*.pt")):
        for where, entry in _entries(torch.load(path, weights_only=False), (path.stem,)):
            if any("output" in m for m in entry["mistakes"].values()):
                yield pytest.param(where, entry, id=".".join(map(str, where)))


@pytest.mark.parametrize("where, entry", list(_fixture_entries()))
def test_stored_fingerprints_tell_the_mistakes_apart(where, entry):
    """A check compares an output with each stored output of its case in turn and names the first that fits."""
    up_to_shift = tuple(where[:2]) in LOGITS
    mistakes = entry["mistakes"]
    for mistake_id, mistake in mistakes.items():
        if "expected" in entry:
            assert not _same(mistake["output"], entry["expected"], up_to_shift), \
                f"{mistake_id}'s fingerprint is the expected output"
        for other_id, other in mistakes.items():
            if other_id != mistake_id and other["message"] != mistake["message"]:
                assert not _same(mistake["output"], other["output"], up_to_shift), \
                    f"{mistake_id} and {other_id} leave the same fingerprint: one would be named for the other"


def test_the_split_fingerprints_tell_the_mistakes_apart():
    """train_val_split names a mistake whose stored train and val it gives on every case: no two mistakes with
    different messages give the same splits on every case, and none gives the expected ones on every case."""
    fixture = torch.load(Path(FIXTURES) / "shakespeare.pt", weights_only=False)["train_val_split"]

    def splits(mistake_id):
        return [tuple(case["mistakes"].get(mistake_id, case)[k] for k in ("train", "val")) for case in fixture["cases"]]

    expected = [(case["train"], case["val"]) for case in fixture["cases"]]
    for mistake_id, message in fixture["messages"].items():
        assert not _same(splits(mistake_id), expected, False), f"{mistake_id} splits every case as expected"
        for other_id, other in fixture["messages"].items():
            if other_id != mistake_id and other != message:
                assert not _same(splits(mistake_id), splits(other_id), False), \
                    f"{mistake_id} and {other_id} split every case alike: one would be named for the other"


@pytest.mark.parametrize("notebook, exercise", [("transformer", "generate"), ("shakespeare", "sample")])
def test_sampled_fingerprints_tell_the_mistakes_apart(notebook, exercise):
    """A sampling step names a mistake whose stored frequencies are within the sampling tolerance of the student's:
    the stored ones of two mistakes with different messages are more than twice that apart (no frequencies fit
    both), and each is more than that from the exact probabilities."""
    tolerance = importlib.import_module(f"course.checks.{notebook}").SAMPLING_TOLERANCE
    for case in torch.load(Path(FIXTURES) / f"{notebook}.pt", weights_only=False)[exercise]["sampling"]:
        mistakes = case["mistakes"]
        for mistake_id, mistake in mistakes.items():
            assert (mistake["output"] - case["probabilities"]).abs().max() > tolerance, mistake_id
            for other_id, other in mistakes.items():
                if other_id != mistake_id and other["message"] != mistake["message"]:
                    assert (mistake["output"] - other["output"]).abs().max() > 2 * tolerance, (mistake_id, other_id)

"""Generated files are current: regenerating the reference modules and the fixtures changes nothing.
(release/ is checked against a fresh nbgrader run in test_release.py.)"""
import importlib
import math

import pytest
import torch

from autograder.authoring.build_reference import write_references
from autograder.paths import FIXTURES, REFERENCE
from course.about import NOTEBOOKS


def test_reference_modules_are_generated_from_the_current_source(tmp_path):
    write_references(out_dir=tmp_path)
    for module in NOTEBOOKS.values():
        fresh, committed = (tmp_path / f"{module}.py").read_text(), (REFERENCE / f"{module}.py").read_text()
        assert fresh == committed, f"autograder/authoring/reference/{module}.py is stale: run `python -m autograder reference`"


# Regenerating on another CPU (Intel or AMD, another vector width) may round floats differently in the last bits:
# measured Intel-made fixtures regenerated on an AMD EPYC differ by at most 8.7e-15 in float64. Floats compare
# within |fresh - stored| <= atol + rtol * |stored| (FLOAT_TOLERANCE, per dtype); everything else exactly.
FLOAT_TOLERANCE = {torch.float64: (1e-12, 1e-12), torch.float32: (1e-6, 1e-6), torch.float16: (1e-3, 1e-3)}


def _assert_same(fresh, stored, where: str) -> None:
    if isinstance(fresh, torch.Tensor):
        assert isinstance(stored, torch.Tensor), where
        assert (fresh.dtype, fresh.shape) == (stored.dtype, stored.shape), f"{where}: dtype or shape differ"
        if fresh.is_floating_point() or fresh.is_complex():
            atol, rtol = FLOAT_TOLERANCE.get(fresh.dtype, FLOAT_TOLERANCE[torch.float32])
            torch.testing.assert_close(fresh, stored, rtol=rtol, atol=atol, equal_nan=True, msg=where)
        else:
            assert torch.equal(fresh, stored), f"{where}: values differ"
    elif isinstance(fresh, dict):
        assert isinstance(stored, dict) and fresh.keys() == stored.keys(), f"{where}: keys differ"
        for key in fresh:
            _assert_same(fresh[key], stored[key], f"{where}.{key}")
    elif isinstance(fresh, (list, tuple)):
        assert len(fresh) == len(stored), f"{where}: lengths differ"
        for i, (a, b) in enumerate(zip(fresh, stored)):
            _assert_same(a, b, f"{where}[{i}]")
    elif isinstance(fresh, float):
        atol, rtol = FLOAT_TOLERANCE[torch.float64]
        assert isinstance(stored, float) and math.isclose(fresh, stored, rel_tol=rtol, abs_tol=atol), where
    else:
        assert type(fresh) is type(stored) and fresh == stored, where


def test_float_comparison_is_tight_but_not_bit_exact():
    """The tolerance forgives last-bit rounding and nothing a fixture's meaning could hang on."""
    value = torch.tensor([1.0, -2.5, 1e-3], dtype=torch.float64)
    _assert_same(value + 1e-15, value, "last bits")
    _assert_same(2.9212491529534064, 2.921249152953407, "python float")
    for changed in (value * (1 + 1e-9), value + torch.tensor([0, 0, 1e-9], dtype=torch.float64), value.float()):
        with pytest.raises(AssertionError):
            _assert_same(changed, value, "changed")
    with pytest.raises(AssertionError):
        _assert_same(torch.tensor([1, 2]), torch.tensor([1, 3]), "ints are exact")
    with pytest.raises(AssertionError):
        _assert_same("<unk>", "<UNK>", "text is exact")


@pytest.mark.every_cpu
def test_fixtures_are_generated_from_the_current_reference_and_mistakes():
    fixtures = importlib.import_module("autograder.authoring.fixtures")
    for module in NOTEBOOKS.values():
        torch.manual_seed(0)
        fresh = fixtures.build(module)
        stored = torch.load(FIXTURES / f"{module}.pt", weights_only=True)
        _assert_same(fresh, stored, f"course/fixtures/{module}.pt (stale: run `python -m autograder fixtures`)")


def test_every_known_mistake_leaves_a_fingerprint():
    """A mistake without a stored output could never be named by the feedback."""
    from autograder.authoring.mistakes import REGISTRY, for_exercise
    for_exercise("attention")  # loads every mistake module
    for module in NOTEBOOKS.values():
        stored = torch.load(FIXTURES / f"{module}.pt", weights_only=True)
        text = repr(stored)
        for exercise, mistakes in REGISTRY.items():
            for known in mistakes:
                if exercise in stored:
                    assert known.id in text, f"{exercise}: {known.id} has no fingerprint in {module}.pt"

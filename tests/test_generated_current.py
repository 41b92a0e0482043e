"""Generated files are current: regenerating the reference modules and the fixtures changes nothing.
(release/ is checked against a fresh nbgrader run in test_release.py.)"""
import importlib

import torch

from autograder.build_reference import write_references
from autograder.paths import FIXTURES, REFERENCE
from course.about import NOTEBOOKS


def test_reference_modules_are_generated_from_the_current_source(tmp_path):
    write_references(out_dir=tmp_path)
    for module in NOTEBOOKS.values():
        fresh, committed = (tmp_path / f"{module}.py").read_text(), (REFERENCE / f"{module}.py").read_text()
        assert fresh == committed, f"autograder/reference/{module}.py is stale: run `python -m autograder reference`"


def _assert_same(fresh, stored, where: str) -> None:
    if isinstance(fresh, torch.Tensor):
        assert isinstance(stored, torch.Tensor), where
        torch.testing.assert_close(fresh, stored, rtol=0, atol=0, equal_nan=True, msg=where)
    elif isinstance(fresh, dict):
        assert isinstance(stored, dict) and fresh.keys() == stored.keys(), f"{where}: keys differ"
        for key in fresh:
            _assert_same(fresh[key], stored[key], f"{where}.{key}")
    elif isinstance(fresh, (list, tuple)):
        assert len(fresh) == len(stored), f"{where}: lengths differ"
        for i, (a, b) in enumerate(zip(fresh, stored)):
            _assert_same(a, b, f"{where}[{i}]")
    else:
        assert fresh == stored, where


def test_fixtures_are_generated_from_the_current_reference_and_mistakes():
    fixtures = importlib.import_module("autograder.fixtures")
    for module in NOTEBOOKS.values():
        torch.manual_seed(0)
        fresh = fixtures.build(module)
        stored = torch.load(FIXTURES / f"{module}.pt", weights_only=True)
        _assert_same(fresh, stored, f"course/fixtures/{module}.pt (stale: run `python -m autograder fixtures`)")


def test_every_known_mistake_leaves_a_fingerprint():
    """A mistake without a stored output could never be named by the feedback."""
    from autograder.mistakes import REGISTRY, for_exercise
    for_exercise("attention")  # loads every mistake module
    for module in NOTEBOOKS.values():
        stored = torch.load(FIXTURES / f"{module}.pt", weights_only=True)
        text = repr(stored)
        for exercise, mistakes in REGISTRY.items():
            for known in mistakes:
                if exercise in stored:
                    assert known.id in text, f"{exercise}: {known.id} has no fingerprint in {module}.pt"

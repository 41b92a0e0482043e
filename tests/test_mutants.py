"""Every known mistake is named by the feedback; every mutant loses points; every correct variant passes; a check's
pass and the hidden test's verdict agree (issue 25.2: every mutant fails both, unless CHECK_ONLY or HIDDEN_ONLY
lists it).

Run directly against the visible checks and the hidden-test helpers (a few also run end to end
through nbgrader in test_demo_class.py). A mutant a listing names in `NEEDS_SECOND_DEVICE` differs from a
correct implementation only on a second real device (its result stays on the CPU); where the CPU is the only
device it is skipped, and it runs wherever CUDA or MPS is present.
"""
import importlib

import pytest

from autograder.authoring.mistakes import for_exercise
from course.checks.report import CheckFailed
from course.device import available_devices
from tests.exercises import MUTANT_MODULES, hidden_test, module_of, visible_check


def _listed(kind: str) -> list:
    return list(_iter_listed(kind))


ONE_DEVICE = pytest.mark.skipif(len(available_devices()) < 2, reason="only a second real device (CUDA or MPS) "
                                "can tell this mutant from a correct implementation, and this machine has only the CPU")


# Exercises whose hidden test trains a model and judges what it learned (train_reversal), or compares every update of a
# training run with stored numbers (train_model): trained numbers, so these variants run again under another
# instruction set (tests/test_every_cpu.py). The copies beside a broken piece train the same loop again and stay out
# of that second run.
TRAINED = {"train_reversal", "train_model"}


def _iter_listed(kind: str):
    for module in MUTANT_MODULES:
        listing = importlib.import_module(f"tests.mutants.{module}")
        needs_second_device = getattr(listing, "NEEDS_SECOND_DEVICE", set())
        for exercise, impl in getattr(listing, kind):
            marks = [ONE_DEVICE] if impl in needs_second_device else []
            if kind == "VARIANTS" and exercise in TRAINED and "_beside_" not in impl.__name__:
                marks.append(pytest.mark.every_cpu)
            yield pytest.param(module, exercise, impl, id=f"{exercise}-{impl.__name__}", marks=marks)


def _known_mistakes() -> list:
    return list(_iter_known_mistakes())


def _iter_known_mistakes():
    for module in MUTANT_MODULES:
        listing = importlib.import_module(f"tests.mutants.{module}")
        for exercise in dict.fromkeys(e for e, _ in listing.MUTANTS + listing.VARIANTS):
            for known in for_exercise(exercise):
                yield pytest.param(module, known, id=f"{exercise}-{known.id}")


def _fails(call) -> str | None:
    """The failure message of `call()`, or None when it passes."""
    try:
        call()
    except Exception as exc:  # noqa: BLE001: any failure loses the cell's points
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.mark.parametrize("module, known", _known_mistakes())
def test_known_mistake_is_named_by_the_visible_check(module, known, capsys):
    with pytest.raises(CheckFailed) as failure:
        visible_check(known.exercise)(known.impl)
    assert known.message in str(failure.value), f"the check failed without naming {known.id}: {failure.value}"


@pytest.mark.parametrize("module, known", _known_mistakes())
def test_known_mistake_fails_the_hidden_test(module, known):
    assert _fails(lambda: hidden_test(module, known.exercise)(known.impl)), f"{known.id} passed the hidden test"


# Issue 25.2: a check's pass and the grader's verdict agree, so every mutant fails both. The one exception the spec
# allows (4.7): a check that passes a mutant the hidden test fails ends with a line that says what the hidden tests
# still probe (run_steps' `done=`), never a bare "all checks passed". Mutant name -> the words that line must hold.
HIDDEN_ONLY: dict[str, str] = {}
# Mutants the check fails (the student reads why and loses the check's point) and the hidden test, which compares
# values, cannot tell from a correct implementation. Mutant name -> why.
CHECK_ONLY = {
    "no_no_grad": "per_position_accuracy (06) and evaluate (07) with gradients on give the right values; only the "
                  "check's model sees that it ran with gradients",
}


@pytest.mark.parametrize("module, exercise, impl", _listed("MUTANTS"))
def test_mutant_loses_points(module, exercise, impl, capsys):
    visible = _fails(lambda: visible_check(exercise)(impl))
    shown = capsys.readouterr().out
    hidden = _fails(lambda: hidden_test(module, exercise)(impl))
    assert visible or hidden, f"{impl.__name__} passed both the visible check and the hidden test"
    name = impl.__name__
    if name in CHECK_ONLY:
        assert visible and not hidden, f"{name} is in CHECK_ONLY, but the hidden test fails it too: take it out"
    elif name in HIDDEN_ONLY:
        assert HIDDEN_ONLY[name] in shown and "all checks passed" not in shown, (
            f"the check passed {name} without saying what the hidden tests still probe:\n{shown[-500:]}")
    else:
        assert visible, f"the check passed {name} (\"all checks passed\") but the hidden test fails it: {hidden}"
        assert hidden, f"the check fails {name} but the hidden test passes it: {visible}"


def _gets_full_points(module, exercise, impl) -> None:
    assert _fails(lambda: visible_check(exercise)(impl)) is None
    assert _fails(lambda: hidden_test(module, exercise)(impl)) is None


@pytest.mark.skipif(len(available_devices()) > 1, reason="a second device is here: test_mutant_loses_points runs "
                    "each device-only mutant instead")
@pytest.mark.parametrize("module, exercise, impl", [pytest.param(*p.values, id=p.id) for p in _listed("MUTANTS")
                                                    if ONE_DEVICE in p.marks])
def test_a_device_only_mutant_is_right_where_the_cpu_is_the_only_device(module, exercise, impl, capsys):
    """The skip above each device-only mutant is honest: on the CPU alone it passes both the visible check and the
    hidden test, so its mistake is one that only a second device can show (otherwise it belongs with the others)."""
    _gets_full_points(module, exercise, impl)


@pytest.mark.parametrize("module, exercise, impl", _listed("VARIANTS"))
def test_correct_variant_gets_full_points(module, exercise, impl, capsys):
    _gets_full_points(module, exercise, impl)


@pytest.mark.parametrize("module", MUTANT_MODULES)
def test_at_least_three_mistakes_named_per_exercise(module):
    listing = importlib.import_module(f"tests.mutants.{module}")
    for exercise in dict.fromkeys(e for e, _ in listing.MUTANTS + listing.VARIANTS):
        assert len(for_exercise(exercise)) >= 3, f"{exercise} has fewer than 3 named mistakes"

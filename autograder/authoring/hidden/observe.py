"""Hidden tests as observations, so that the verdict never has to trust the student's kernel.

A hidden test is an `observe_<exercise>(impl)` function: it makes fresh inputs from fixed seeds, runs `impl`
on them and returns what it saw as `Observations`, named values each with the `Rule` that judges them. The
same function runs twice: on the student's code and on the reference, and `compare` judges the first
against the second, value by value.

Where the two run is what makes grading tamper-resistant. In a notebook graded by `python -m autograder
grade`, the kernel only observes the student's code and records the values to a file (`record`); the
reference never enters that kernel, and the grader's own process judges the recording against the reference
(`autograder.grading.verify`). Patching `torch.allclose` or a check in the kernel changes nothing there. Elsewhere
(plain `nbgrader autograde`, the test suite) `test_<exercise>` observes both sides in one process.
"""
from __future__ import annotations

import importlib
import inspect
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from course.checks.compare import difference, is_close
from course.checks.crash import describe_crash
from course.checks.report import CheckFailed, is_stub, warnings_on_stdout
from course.device import available_devices, supported_dtypes


class HiddenTestFailed(AssertionError):
    """A hidden test found a wrong result, or the student's code raised while it ran (then the message names the
    call, the error and the student's line, and the error is its `__cause__`)."""


# ---- rules: how one observed value of the student's is judged against the reference's ----

class Rule:
    def judge(self, what: str, student: Any, reference: Any) -> str | None:
        """None when `student` passes; otherwise the message the student reads."""
        raise NotImplementedError


def tensor_of(value) -> torch.Tensor | None:
    return value["tensor"] if isinstance(value, dict) and "tensor" in value and "device" in value else None


def _shape_dtype_device(what: str, student, reference) -> str | None:
    actual, expected = tensor_of(student), tensor_of(reference)
    if actual is None:
        return f"{what}: expected a tensor, got {describe(student)}"
    if tuple(actual.shape) != tuple(expected.shape):
        return f"{what}: expected shape {tuple(expected.shape)}, got {tuple(actual.shape)}"
    if actual.dtype != expected.dtype:
        return f"{what}: expected dtype {expected.dtype}, got {actual.dtype}"
    if student["device"] != reference["device"]:
        return f"{what}: expected device {reference['device']}, got {student['device']}"
    return None


@dataclass(frozen=True)
class Close(Rule):
    """A tensor of the same shape, dtype and device, equal within the tolerance of `dtype`; with `up_to_shift`
    (logits), up to a constant added along the last axis at each position. The message says where the values differ
    most, with both numbers, and when a float64 result carries float32's precision only."""
    dtype: str = "torch.float32"
    up_to_shift: bool = False

    def judge(self, what, student, reference):
        found = _shape_dtype_device(what, student, reference)
        if found:
            return found
        actual, expected = tensor_of(student), tensor_of(reference)
        dtype = getattr(torch, self.dtype.removeprefix("torch."))
        if not is_close(actual, expected, dtype, self.up_to_shift):
            return f"{what}: values differ from the reference: {difference(actual, expected, dtype, self.up_to_shift)}"
        return None


@dataclass(frozen=True)
class Exact(Rule):
    """Equal: tensors in shape, dtype, device and every value; anything else by ==. With `show`, the message
    gives both values (for short answers such as an exception's name); otherwise only that they differ."""
    show: bool = False

    def judge(self, what, student, reference):
        if tensor_of(reference) is not None:
            if _shape_dtype_device(what, student, reference) or not torch.equal(tensor_of(student), tensor_of(reference)):
                return f"{what}: differs from the reference (shape, dtype, device or values)"
            return None
        if student == reference:
            return None
        return f"{what}: expected {reference!r}, got {student!r}" if self.show else f"{what}: differs from the reference"


@dataclass(frozen=True)
class Near(Rule):
    """Tensors of the same shape whose largest absolute difference is at most `tolerance` (sampled frequencies)."""
    tolerance: float

    def judge(self, what, student, reference):
        actual, expected = tensor_of(student), tensor_of(reference)
        if actual is None or tuple(actual.shape) != tuple(expected.shape):
            return f"{what}: expected a tensor of shape {tuple(expected.shape)}, got {describe(student)}"
        gap = (actual.double() - expected.double()).abs().max().item() if actual.numel() else 0.0
        return None if gap <= self.tolerance else f"{what} (largest gap {gap:.3f})"


@dataclass(frozen=True)
class Claim(Rule):
    """A property of the student's code that the reference has: the message is the failure to report."""

    def judge(self, what, student, reference):
        return None if student == reference else what


# ---- what one run of a hidden test saw ----

def describe(value) -> str:
    if isinstance(value, dict) and "tensor" in value:
        return f"a tensor of shape {tuple(value['tensor'].shape)}"
    if isinstance(value, dict) and "opaque" in value:
        return f"a {value['opaque']}"
    return type(value).__name__


def recordable(value):
    """`value` as plain data a safe loader can read back (`torch.load(weights_only=True)`): tensors become
    {"tensor": detached CPU copy, "device": ...}, containers are converted item by item, anything else is
    only named. Never an object of the student's: the grader must not unpickle one."""
    if isinstance(value, torch.Tensor):
        return {"tensor": value.detach().to("cpu", copy=True), "device": value.device.type,
                "requires_grad": value.requires_grad}
    if value is None or type(value) in (bool, int, float, str):
        return value
    if type(value) in (list, tuple):
        return [recordable(v) for v in value]
    if type(value) is dict and all(type(k) is str for k in value):
        return {k: recordable(v) for k, v in value.items()}
    if isinstance(value, (torch.dtype, torch.device, torch.Size)):
        return str(value)
    return {"opaque": type(value).__name__}


@dataclass
class Observations:
    """Named observed values, in order, each with its rule. Names say what was run on what, so that a failure
    message tells the student which case went wrong."""
    items: dict[str, tuple[Any, Rule]] = field(default_factory=dict)

    def _add(self, what: str, value, rule: Rule) -> None:
        if what in self.items:
            raise ValueError(f"observed twice: {what!r} (names must be unique)")
        self.items[what] = (recordable(value), rule)

    def close(self, what: str, value, dtype: torch.dtype = torch.float32) -> None:
        self._add(what, value, Close(str(dtype)))

    def logits(self, what: str, value, dtype: torch.dtype = torch.float32) -> None:
        """Logits: judged as `close` is, up to a constant added along the vocabulary axis at each position
        (log-probabilities pass: the same softmax, cross-entropy, argmax and samples)."""
        self._add(what, value, Close(str(dtype), up_to_shift=True))

    def exact(self, what: str, value, show: bool = False) -> None:
        self._add(what, value, Exact(show))

    def near(self, what: str, value, tolerance: float) -> None:
        self._add(what, value, Near(tolerance))

    def claim(self, failure: str, holds: bool) -> None:
        """Record whether a property holds; `failure` is what the student reads when it does not."""
        self._add(failure, bool(holds), Claim())

    def judged_by(self, what: str, value, rule: Rule) -> None:
        self._add(what, value, rule)

    def raises(self, what: str, call: Callable[[], Any]) -> None:
        """Record which exception `call()` raises ("nothing" when it returns)."""
        try:
            call()
            outcome = "nothing"
        except Exception as exc:  # noqa: BLE001: which one is the observation
            outcome = type(exc).__name__
        self._add(what, outcome, Exact(show=True))

    def values(self) -> dict[str, Any]:
        return {what: value for what, (value, _) in self.items.items()}


def raised(value) -> str | None:
    """The exception's name when `value` records that a call raised instead of returning ({"raised": name})."""
    return value["raised"] if isinstance(value, dict) and set(value) == {"raised"} else None


def compare(student: dict[str, Any], reference: Observations) -> None:
    """Raise HiddenTestFailed with the first value of `student` (name -> recorded value) that its rule rejects."""
    for what, (expected, rule) in reference.items.items():
        if what not in student:
            raise HiddenTestFailed(f"{what}: was not observed (the test took another path than with the reference)")
        message = rule.judge(what, student[what], expected)
        if message and raised(student[what]) and not raised(expected):
            message = f"{what}: your code raised {raised(student[what])} where the reference returns a result"
        if message:
            raise HiddenTestFailed(message)


# ---- running a hidden test ----

def grid():
    """Every (device, dtype) pair the hidden tests try."""
    return [(device, dtype) for device in available_devices() for dtype in supported_dtypes(device)]


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def reference_module(observe: Callable):
    """The reference module of the notebook whose hidden tests define `observe`."""
    return importlib.import_module(observe.__module__.replace("autograder.authoring.hidden.", "autograder.authoring.reference.", 1))


def exercise_of(observe: Callable) -> str:
    return observe.__name__.removeprefix("observe_")


def records_folder() -> Path | None:
    """Where this kernel records observations: set only in a notebook graded by `python -m autograder grade`,
    from the policy its guard read when the kernel started."""
    guard = sys.modules.get("autograder.grading.guard.policy")
    folder = getattr(guard, "POLICY", {}).get("records") if guard else None
    return Path(folder) if folder else None


def record(folder: Path, exercise: str, observations: Observations) -> Path:
    path = folder / f"{exercise}.pt"
    torch.save(observations.values(), path)
    return path


def hidden_test(observe: Callable, **reference_names: str) -> Callable:
    """`test_<exercise>(student)`: in a kernel graded by `autograder grade`, record what `observe` sees of the
    student's code for the grader to judge; anywhere else, judge it here against the reference.

    `reference_names` maps an argument of `observe` to the name of the reference object that stands in for it
    (by default the argument's own name)."""
    exercise = exercise_of(observe)

    def test(*student):
        with warnings_on_stdout():
            seen = observe_or_explain(observe, *student)
        folder = records_folder()
        if folder is not None:
            record(folder, exercise, seen)
            print("Recorded for the grader, which compares it with the reference.")
            return
        compare(seen.values(), reference_observation(test))

    test.__name__ = f"test_{exercise}"
    test.__doc__ = observe.__doc__
    test.observe = observe
    test.reference_names = reference_names
    return test


def observe_or_explain(observe: Callable, *student) -> Observations:
    """`observe(*student)`; when the student's code raises, a HiddenTestFailed that says which call raised, with what
    arguments, the error and the student's line: the message is what the feedback shows. A failure the test itself
    reports, and the stub's bare NotImplementedError, pass through unchanged."""
    try:
        return observe(*student)
    except (HiddenTestFailed, CheckFailed):
        raise
    except Exception as exc:  # noqa: BLE001: whatever the student's code raised, said in words
        if is_stub(exc):
            raise
        raise HiddenTestFailed(describe_crash(exc, "the hidden test")) from exc


_reference_observations: dict[tuple[str, str], Observations] = {}
_reference_lock = threading.Lock()


def reference_observation(test) -> Observations:
    """What hidden test `test` observes of the reference: the same every time (fixed seeds), so it is computed once
    per process. Never called in a graded kernel, where the reference cannot be loaded."""
    observe = test.observe
    key = (observe.__module__, observe.__name__)
    with _reference_lock:
        if key not in _reference_observations:
            _reference_observations[key] = observe(*reference_objects(observe, **test.reference_names))
        return _reference_observations[key]


def reference_objects(observe: Callable, **reference_names: str) -> list:
    """The reference's objects for each argument of `observe` without a default, in order."""
    module = reference_module(observe)
    names = [name for name, p in inspect.signature(observe).parameters.items() if p.default is p.empty]
    return [getattr(module, reference_names.get(name, name)) for name in names]

"""Assertions for hidden tests. Their messages say what differed, never how the reference works."""
from __future__ import annotations

from contextlib import contextmanager

import torch

from course.checks.compare import is_close
from course.device import available_devices, supported_dtypes


class HiddenTestFailed(AssertionError):
    pass


def assert_matches(what: str, actual, expected: torch.Tensor, dtype: torch.dtype) -> None:
    if not isinstance(actual, torch.Tensor):
        raise HiddenTestFailed(f"{what}: expected a tensor, got {type(actual).__name__}")
    if tuple(actual.shape) != tuple(expected.shape):
        raise HiddenTestFailed(f"{what}: expected shape {tuple(expected.shape)}, got {tuple(actual.shape)}")
    if actual.dtype != expected.dtype:
        raise HiddenTestFailed(f"{what}: expected dtype {expected.dtype}, got {actual.dtype}")
    if actual.device != expected.device:
        raise HiddenTestFailed(f"{what}: expected device {expected.device}, got {actual.device}")
    if not is_close(actual, expected, dtype):
        raise HiddenTestFailed(f"{what}: values differ from the reference")


def assert_equal(what: str, actual, expected: torch.Tensor) -> None:
    if not isinstance(actual, torch.Tensor) or actual.dtype != expected.dtype or \
            tuple(actual.shape) != tuple(expected.shape) or actual.device != expected.device or \
            not torch.equal(actual, expected):
        raise HiddenTestFailed(f"{what}: differs from the reference (shape, dtype, device or values)")


def assert_raises(what: str, error: type[BaseException], call) -> None:
    try:
        call()
    except error:
        return
    except Exception as exc:  # noqa: BLE001: any other error is the finding
        raise HiddenTestFailed(f"{what}: expected {error.__name__}, got {type(exc).__name__}") from None
    raise HiddenTestFailed(f"{what}: expected {error.__name__}, nothing was raised")


def grid():
    """Every (device, dtype) pair the hidden tests try."""
    return [(device, dtype) for device in available_devices() for dtype in supported_dtypes(device)]


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@contextmanager
def reference_globals(function, **replacements):
    """While inside, the names in `replacements` that `function` reads from its notebook's globals are the
    reference's, so that a mistake in an earlier exercise of the same notebook costs points only once."""
    namespace = getattr(function, "__globals__", {})
    present = {name: namespace[name] for name in replacements if name in namespace}
    namespace.update({name: value for name, value in replacements.items() if name in present})
    try:
        yield
    finally:
        namespace.update(present)

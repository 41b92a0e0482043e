"""Comparing a student's tensor with a stored one, and naming a known mistake when it matches one."""
from __future__ import annotations

import warnings

import torch

from course.checks.report import CheckFailed, fail

VALUES_DIFFER = "differs from the expected values"  # how expect_values reports wrong numbers
KNOWN_MISTAKE = "This is a known mistake"  # and how it names a stored mistake

# (atol, rtol) per dtype: float32 leaves room for a different but correct order of operations.
TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-9, 1e-7), torch.float16: (2e-3, 1e-2)}


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    return TOLERANCE.get(dtype, TOLERANCE[torch.float32])


def is_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype) -> bool:
    """Same shape and values within `dtype`'s tolerance; NaN never matches a number."""
    if tuple(actual.shape) != tuple(expected.shape):
        return False
    atol, rtol = tolerance(dtype)
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    return bool(torch.allclose(a, e, atol=atol, rtol=rtol, equal_nan=True))


def known_mistake(actual: torch.Tensor, mistakes: dict[str, dict], dtype: torch.dtype) -> str | None:
    """The message of the stored mistake whose output `actual` reproduces, if any."""
    for mistake in mistakes.values():
        if is_close(actual, mistake["output"], dtype):
            return mistake["message"]
    return None


def expect_tensor(what: str, actual, *, shape=None, dtype=None, device=None) -> None:
    """Fail unless `actual` is a tensor with the given shape, dtype and device."""
    if not isinstance(actual, torch.Tensor):
        fail(f"{what} should be a torch.Tensor, but it is a {type(actual).__name__}.")
    if shape is not None and tuple(actual.shape) != tuple(shape):
        fail(f"{what} should have shape {tuple(shape)}, but it has shape {tuple(actual.shape)}.")
    if dtype is not None and actual.dtype != dtype:
        fail(f"{what} should have dtype {dtype}, but it has dtype {actual.dtype}. "
             "Build new tensors with the dtype of your inputs (e.g. `dtype=x.dtype`).")
    if device is not None and actual.device.type != torch.device(device).type:
        fail(f"{what} is on {actual.device}, but its inputs are on {device}. "
             "Create new tensors on the inputs' device (e.g. `device=x.device`); never move data between devices.")


def expect_values(what: str, actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype,
                  mistakes: dict[str, dict] | None = None) -> None:
    """Fail unless `actual` equals the stored `expected`; name the known mistake it matches, if any."""
    expect_tensor(what, actual, shape=expected.shape)
    if is_close(actual, expected, dtype):
        return
    named = known_mistake(actual, mistakes or {}, dtype)
    a = actual.detach().to("cpu", torch.float64)
    e = expected.to(torch.float64)
    if torch.isnan(a).any() and not torch.isnan(e).any():
        where = tuple(int(i) for i in torch.nonzero(torch.isnan(a))[0])
        detail = f"it contains NaN (first at index {where})."
    else:
        diff = (a - e).abs().nan_to_num(float("inf"))
        where = tuple(int(i) for i in torch.nonzero(diff == diff.max())[0])
        detail = (f"largest difference {diff.max().item():.3g} at index {where}: "
                  f"expected {e[where].item():.6g}, got {a[where].item():.6g}.")
    message = f"{what} {VALUES_DIFFER}: {detail}"
    if named:
        message += f"\n  {KNOWN_MISTAKE}: {named}"
    fail(message)


def with_reason(message: str, property_steps) -> str:
    """`message`, and when it reports wrong values that match no known mistake, the first of the check's
    `property_steps` that fails, run quietly, as a further line ("" added when they all pass, or only crash).
    Wrong numbers alone say little; "the weights sum to 1 over the queries" says what to fix."""
    if VALUES_DIFFER not in message or KNOWN_MISTAKE in message:
        return message
    for label, step in property_steps:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                step()
        except CheckFailed as exc:
            return f"{message}\n  A further check says why: {label}: no. {exc.args[0]}"
        except Exception:  # noqa: BLE001: a crash here is reported by the step itself when it runs in turn
            continue
    return message

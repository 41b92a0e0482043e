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


def centred(t: torch.Tensor) -> torch.Tensor:
    """`t` as float64 on the CPU, less its mean along the last axis: what logits say, since logits plus a constant at
    each position (log-probabilities, say) give the same softmax, cross-entropy, argmax and samples."""
    t = t.detach().to("cpu", torch.float64)
    return t - t.mean(-1, keepdim=True) if t.dim() and t.shape[-1] else t


def is_close(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype, up_to_shift: bool = False) -> bool:
    """Same shape and values within `dtype`'s tolerance; NaN never matches a number. With `up_to_shift` (logits),
    values that differ by a constant along the last axis count as equal."""
    if tuple(actual.shape) != tuple(expected.shape):
        return False
    atol, rtol = tolerance(dtype)
    if up_to_shift:
        a, e = centred(actual), centred(expected)
    else:
        a, e = actual.detach().to("cpu", torch.float64), expected.detach().to("cpu", torch.float64)
    return bool(torch.allclose(a, e, atol=atol, rtol=rtol, equal_nan=True))


def known_mistake(actual: torch.Tensor, mistakes: dict[str, dict], dtype: torch.dtype,
                  up_to_shift: bool = False) -> str | None:
    """The message of the stored mistake whose output `actual` reproduces, if any (compared as `is_close` does)."""
    for mistake in mistakes.values():
        if is_close(actual, mistake["output"], dtype, up_to_shift):
            return mistake["message"]
    return None


def shown_apart(expected: float, actual: float) -> tuple[str, str]:
    """The two numbers written with as many significant digits as it takes to tell them apart (at least 6; beyond 6,
    both with the same number of digits, trailing zeros kept)."""
    for digits in range(6, 18):
        style = "#" if digits > 6 else ""
        e, a = f"{expected:{style}.{digits}g}", f"{actual:{style}.{digits}g}"
        if e != a:
            return e, a
    return repr(expected), repr(actual)


FLOAT32_CAUSES = ("somewhere it went through float32. The usual causes: a `.float()`, a float32 constant "
                  "(`torch.tensor(...)` without `dtype=`), or a softmax forced to float32 (`softmax(..., "
                  "dtype=torch.float32)`). Keep your inputs' dtype from start to end.")


FLOAT32_RELATIVE = 2e-6  # a float64 result this close (relative to its largest value) is float32-precise only


def float32_precision(a: torch.Tensor, e: torch.Tensor) -> str:
    """For a float64 result `a` (as float64 on the CPU) that misses `e`: a sentence when it carries only float32's
    precision, "" otherwise: either every value is a float32 number (computed in float32 and converted back) within
    float32's tolerance, or all agree to about 7 significant digits, far closer than a mistake in a formula comes."""
    finite = torch.isfinite(a) & torch.isfinite(e)
    if not finite.all() or not a.numel():
        return ""
    a, e = a[finite], e[finite]
    if torch.equal(a, a.float().double()) and not torch.equal(e, e.float().double()) and \
            is_close(a, e, torch.float32):
        return f"Every value of your float64 result is a float32 number: {FLOAT32_CAUSES}"
    scale = max(float(e.abs().max()), 1e-30)
    if float((a - e).abs().max()) <= FLOAT32_RELATIVE * scale:
        return (f"Your float64 result agrees with the expected one to about 7 significant digits only, the precision "
                f"of float32: {FLOAT32_CAUSES}")
    return ""


def difference(actual: torch.Tensor, expected: torch.Tensor, dtype: torch.dtype, up_to_shift: bool = False) -> str:
    """Where `actual` differs from `expected` (same shape), in words: the first NaN, or the value furthest outside
    `dtype`'s tolerance with both numbers written far enough to differ, and whether a float64 result carries
    float32's precision only. With `up_to_shift`, `actual` is first moved by the constant at each position that best
    matches `expected`."""
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    if torch.isnan(a).any() and not torch.isnan(e).any():
        where = tuple(int(i) for i in torch.nonzero(torch.isnan(a))[0])
        return f"it contains NaN (first at index {where})."
    raw, shifted = a, ""
    if up_to_shift and a.dim() and a.shape[-1] and torch.isfinite(a).all():
        offset = a.mean(-1, keepdim=True) - e.mean(-1, keepdim=True)
        if (offset.abs() > 0).any():
            a = a - offset
            shifted = (" (logits count the same up to a constant at each position, so yours were first moved by "
                       "the constant that fits best)")
    atol, rtol = tolerance(dtype)
    same = (a == e) | (torch.isnan(a) & torch.isnan(e))  # infinities and NaNs where they belong differ by nothing
    diff = torch.where(same, 0.0, (a - e).abs().nan_to_num(float("inf")))
    scale = centred(e) if shifted else e  # the tolerance is relative to the values is_close compares
    allowed = atol + rtol * scale.abs().nan_to_num(0.0)
    excess = diff - allowed  # the value furthest outside the tolerance, which need not be the largest difference
    where = tuple(int(i) for i in torch.nonzero(excess == excess.max())[0])
    expected_text, actual_text = shown_apart(e[where].item(), a[where].item())
    d, tol = diff[where].item(), allowed[where].item()
    close_call = f" where {str(dtype).removeprefix('torch.')} allows {tol:.2g}" if d < 10 * tol else ""
    detail = (f"at index {where}{shifted} expected {expected_text}, got {actual_text} (a difference of {d:.3g}"
              f"{close_call}).")
    if dtype == torch.float64:
        note = float32_precision(a if shifted else raw, e)
        if note:
            detail += f"\n  {note}"
    return detail


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
                  mistakes: dict[str, dict] | None = None, up_to_shift: bool = False) -> None:
    """Fail unless `actual` equals the stored `expected`; name the known mistake it matches, if any. With
    `up_to_shift` (logits), a constant added along the last axis at each position changes nothing, on either side
    of a comparison: stored mistakes are recognised the same way; a wrong shape too, when a mistake's stored output
    has that shape and those values."""
    try:
        expect_tensor(what, actual, shape=expected.shape)
    except CheckFailed as wrong_shape:
        named = known_mistake(actual, mistakes or {}, dtype, up_to_shift) if isinstance(actual, torch.Tensor) else None
        if named:
            fail(f"{wrong_shape.args[0]}\n  {KNOWN_MISTAKE}: {named}")
        raise
    if is_close(actual, expected, dtype, up_to_shift):
        return
    named = known_mistake(actual, mistakes or {}, dtype, up_to_shift)
    message = f"{what} {VALUES_DIFFER}: {difference(actual, expected, dtype, up_to_shift)}"
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

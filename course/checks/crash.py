"""An error raised in the student's code, in words: which call of theirs raised (its arguments by dtype, shape and
device), the error, and the line; for the visible checks' failures and the hidden tests' verdicts alike."""
from __future__ import annotations

import ast
import inspect
import linecache
import os
import sys
import sysconfig
import textwrap
import traceback
from pathlib import Path
from types import FrameType, TracebackType

ERROR_TEXT_LIMIT = 600  # characters of the error's own message a failure quotes


def _library_folders() -> tuple[str, ...]:
    """Folders whose code is the course's, the grader's, Python's or an installed package's, never the student's."""
    folders = {str(Path(__file__).resolve().parents[1])}  # the course package
    grader = sys.modules.get("autograder")
    folders.update(str(Path(p).resolve()) for p in getattr(grader, "__path__", []))
    paths = sysconfig.get_paths()
    folders.update(str(Path(paths[key]).resolve()) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
    return tuple(folder.rstrip(os.sep) + os.sep for folder in folders)


def is_student_code(frame: FrameType, library: tuple[str, ...] | None = None) -> bool:
    """Whether `frame` runs the student's code: a notebook cell (`/tmp/ipykernel_*/*.py`, `<ipython-input-...>`) or
    any file outside the `library` folders (by default the course and grader packages, Python's library and installed
    packages)."""
    filename = frame.f_code.co_filename
    if filename.startswith("<frozen") or filename.startswith("<__array_function__"):
        return False
    if filename.startswith("<"):
        return True
    if "site-packages" in Path(filename).parts or "dist-packages" in Path(filename).parts:
        return False
    return not str(Path(filename).resolve()).startswith(library or _library_folders())


def _student_entries(exc: BaseException) -> list[TracebackType]:
    entries, tb, library = [], exc.__traceback__, _library_folders()
    while tb is not None:
        if is_student_code(tb.tb_frame, library):
            entries.append(tb)
        tb = tb.tb_next
    return entries


def describe_value(value) -> str:
    """A short description of an argument: tensors by dtype, shape and device, modules by class, numbers as written."""
    import torch

    if isinstance(value, torch.Tensor):
        return (f"<{str(value.dtype).removeprefix('torch.')} tensor of shape {tuple(value.shape)} "
                f"on {value.device}>")
    if isinstance(value, torch.nn.Module):
        return f"<{type(value).__name__} module>"
    if value is None or type(value) in (bool, int, float, complex):
        return repr(value)
    if type(value) is str:
        return repr(value) if len(value) <= 40 else repr(value[:37] + "...")
    if isinstance(value, (torch.dtype, torch.device, torch.Size)):
        return str(value)
    if isinstance(value, type):
        return value.__name__
    if type(value) in (list, tuple, dict, set):
        if len(value) <= 6 and all(v is None or type(v) in (bool, int, float) for v in value):
            return repr(value)
        kinds = {type(v).__name__ for v in (value.values() if type(value) is dict else value)}
        items = f"{len(value)} {kinds.pop() if len(kinds) == 1 else 'item'}{'s' if len(value) != 1 else ''}"
        return f"<{type(value).__name__} of {items}>"
    return f"<{type(value).__name__}>"


def _function_name(frame: FrameType) -> str:
    code = frame.f_code
    return getattr(code, "co_qualname", code.co_name).rsplit("<locals>.", 1)[-1]


def describe_call(frame: FrameType) -> str:
    """The call that `frame` runs, as the student would write it: `positional_encoding(max_len=64, d_model=7)`,
    `MultiHeadAttention.forward(x_q=<float32 tensor of shape (2, 5, 8) on cpu>, x_kv=None, mask=None)`; a
    constructor as `MultiHeadAttention(d_model=10, n_heads=4)`. Arguments are their values when the error came."""
    code, local = frame.f_code, frame.f_locals
    names = code.co_varnames
    positional = list(names[:code.co_argcount])
    keyword_only = names[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    rest = iter(names[code.co_argcount + code.co_kwonlyargcount:])
    star = next(rest) if code.co_flags & inspect.CO_VARARGS else None
    double_star = next(rest) if code.co_flags & inspect.CO_VARKEYWORDS else None
    name = _function_name(frame)
    if "." in name and positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    name = name.removesuffix(".__init__")

    def named(keys) -> list[str]:
        return [f"{key}={describe_value(local[key])}" for key in keys if key in local]

    parts = named(positional)
    parts += [describe_value(value) for value in local.get(star) or ()] if star else []
    parts += named(keyword_only)
    if double_star:
        parts += [f"{key}={describe_value(value)}" for key, value in (local.get(double_star) or {}).items()]
    return f"{name}({', '.join(parts)})"


def _where(entry: TracebackType) -> str:
    filename = entry.tb_frame.f_code.co_filename
    in_cell = filename.startswith("<ipython-input") or f"{os.sep}ipykernel_" in filename
    place = "your cell" if in_cell else Path(filename).name
    line = linecache.getline(filename, entry.tb_lineno, entry.tb_frame.f_globals).strip()
    text = f"at line {entry.tb_lineno} of {place}, in {_function_name(entry.tb_frame)}"
    return f"{text}: {line}" if line else text


def error_text(exc: BaseException) -> str:
    """`Type: message`, the message cut at ERROR_TEXT_LIMIT characters, its lines indented under the first."""
    try:
        said = str(exc).strip()
    except Exception:  # noqa: BLE001: an exception whose message itself fails is still named
        said = ""
    if len(said) > ERROR_TEXT_LIMIT:
        said = said[:ERROR_TEXT_LIMIT] + " ..."
    said = "\n  ".join(line for line in said.splitlines() if line.strip())
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _crash(exc: BaseException) -> tuple[str | None, str, str | None]:
    """(the outermost call into the student's code, the error, the student's line that raised it); no call and no line
    when the error came from outside the student's code."""
    entries = _student_entries(exc)
    if not entries:
        return None, error_text(exc), None
    return describe_call(entries[0].tb_frame), error_text(exc), _where(entries[-1])


DEVICES_MIXED = ("Expected all tensors to be on the same device", "is not on the expected device",
                 "should be either on cpu or on the same device")  # PyTorch's words when one operation mixes devices
DEVICE_ADVICE = ("Make every tensor you create on the inputs' device (`device=x.device`), keep a fixed tensor of a "
                 "module with `self.register_buffer` so that `.to(device)` moves it too, and never call `.cpu()` "
                 "inside a forward pass.")


def _statement_at(frame: FrameType, lineno: int) -> ast.stmt | None:
    """The innermost statement of `frame`'s function that spans line `lineno` (a statement may run over lines)."""
    code = frame.f_code
    lines = linecache.getlines(code.co_filename, frame.f_globals)
    try:
        block = inspect.getblock(lines[code.co_firstlineno - 1:])
        tree = ast.parse(textwrap.dedent("".join(block)))
    except (SyntaxError, IndexError, ValueError):
        return None
    line = lineno - code.co_firstlineno + 1
    spanning = [node for node in ast.walk(tree) if isinstance(node, ast.stmt) and not isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.lineno <= line <= node.end_lineno]
    return min(spanning, key=lambda node: node.end_lineno - node.lineno, default=None)


def _names_in(statement: ast.stmt) -> list[str]:
    """The variables and `self.` attributes a statement reads, in order: `scores.masked_fill(~mask, ...)` gives
    ["scores", "mask"], `self.pe[:T] + x` gives ["self.pe", "x"]."""
    found = []
    for node in ast.walk(statement):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            found.append(((node.lineno, node.col_offset), f"self.{node.attr}"))
        elif isinstance(node, ast.Name) and node.id != "self":
            found.append(((node.lineno, node.col_offset), node.id))
    return list(dict.fromkeys(name for _, name in sorted(found)))


def _value_of(frame: FrameType, name: str):
    if name.startswith("self."):
        return getattr(frame.f_locals.get("self"), name.removeprefix("self."), None)
    return frame.f_locals.get(name)


def devices_apart(exc: BaseException) -> str | None:
    """For an error that mixed devices in one operation: which tensors of the student's failing line are on which
    device (`mask` on cpu, `scores` on cuda:0), and what to do; None for any other error."""
    import torch

    if not any(words in str(exc) for words in DEVICES_MIXED):
        return None
    entries = _student_entries(exc)
    if not entries:
        return None
    frame = entries[-1].tb_frame
    statement = _statement_at(frame, entries[-1].tb_lineno)
    by_device: dict[str, list[str]] = {}
    for name in _names_in(statement) if statement is not None else []:
        value = _value_of(frame, name)
        if isinstance(value, torch.Tensor) and value.dim() > 0:  # a 0-dim CPU tensor goes with any device
            by_device.setdefault(str(value.device), []).append(f"`{name}`")
    if len(by_device) < 2:
        return f"Two tensors on different devices met in one operation. {DEVICE_ADVICE}"
    places = "; ".join(f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} on {device}"
                       for device, names in by_device.items())
    return f"On that line {places}: they must be on one device. {DEVICE_ADVICE}"


OUTSIDE = ("{runner} stopped on an error outside your own code (often a sign that what your code returned is not what "
           "the exercise asks for)")


def describe_crash(exc: BaseException, runner: str = "the hidden test") -> str:
    """What went wrong when `runner` called the student's code and it raised `exc`: the outermost call into the
    student's code with its arguments, the error, then (on a line that starts with two spaces) the student's line."""
    call, error, where = _crash(exc)
    if call is None:
        return f"{OUTSIDE.format(runner=runner)}: {error}"
    apart = devices_apart(exc)
    return f"{call} raised {error}\n  {where}" + (f"\n  {apart}" if apart else "")


def describe_crash_in_check(exc: BaseException) -> str:
    """As `describe_crash`, the error first (a check's failure reads `title: step: error`), then the call and the line."""
    call, error, where = _crash(exc)
    if call is None:
        return f"{error}\n  {OUTSIDE.format(runner='The check')}."
    apart = devices_apart(exc)
    return f"{error}\n  {call} raised it, {where}" + (f"\n  {apart}" if apart else "")


def student_traceback(exc: BaseException) -> list[str]:
    """The traceback of `exc` from the outermost call into the student's code on, as IPython prints it (colours and
    all) in a notebook, as Python prints it elsewhere."""
    entries = _student_entries(exc)
    start = entries[0] if entries else exc.__traceback__
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            return list(shell.InteractiveTB.structured_traceback(type(exc), exc, start))
    except Exception:  # noqa: BLE001: a traceback for debugging is a courtesy; Python's own formatting will do
        pass
    return "".join(traceback.format_exception(type(exc), exc, start)).rstrip("\n").splitlines()

"""Issue 25.1: every exercise solved correctly by code that writes to stderr while it runs (student `noisy`).

The code is the `loops` student's, and every function and class a cell defines is wrapped by `chatty`, which on its
first call in each cell writes to stderr the three ways public code does: a debugging `print(..., file=sys.stderr)`, a `logging` line
(a handler made with `logging.basicConfig`, as scripts do) and a tqdm progress bar (tqdm's default file is stderr);
`train_reversal` also runs its steps under tqdm's own bar in place of the course's. nbgrader scores a graded cell
that wrote to stderr as failed: under nbgrader the kernel shows stderr as stdout (course/graded_output.py), so this
student must earn every autograded point, and the graded cells still show what was written.
"""
import re
from dataclasses import dataclass

from tests.wild import Student, loops

SOURCE = "this project, issue 25.1 (the loop solutions, writing to stderr on every call)"
MARKER = "debug: called"  # what every wrapped call prints on stderr; tests look for it in the graded cells

CHATTY = '''
import functools
import logging
import sys

from tqdm import tqdm

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", force=True)


def noisy(function, name):
    """`function`, reporting its first call in each notebook cell on stderr: a print, a log line, a tqdm bar."""
    cells = set()

    @functools.wraps(function)
    def call(*args, **kwargs):
        cell = get_ipython().execution_count
        if cell not in cells:
            cells.add(cell)
            print(f"debug: called {name}", file=sys.stderr)
            logging.getLogger("noisy").info("calling %s", name)
            for _ in tqdm(range(2), desc=name):
                pass
        return function(*args, **kwargs)
    return call


def chatty(obj):
    """A function made noisy, or a class whose forward (a module) or encode and decode (a vocabulary) are."""
    if not isinstance(obj, type):
        return noisy(obj, obj.__name__)
    if issubclass(obj, torch.nn.Module):
        obj.forward = noisy(obj.forward, f"{obj.__name__}.forward")
    else:
        obj.encode = noisy(obj.encode, f"{obj.__name__}.encode")
        obj.decode = noisy(obj.decode, f"{obj.__name__}.decode")
    return obj
'''


@dataclass(frozen=True)
class NoisyStudent(Student):
    """A student whose cells are another's, each top-level function and class decorated with `chatty`."""

    def cell_source(self, grade_id: str) -> str:
        source = super().cell_source(grade_id)
        source = re.sub(r"^(def |class )", r"@chatty\n\1", source, flags=re.MULTILINE)
        source = source.replace('progress(range(steps), "training")', 'tqdm(range(steps), desc="training")')
        return CHATTY.strip() + "\n\n\n" + source


_LOOPS = loops.STUDENTS["loops"]
STUDENTS = {"noisy": NoisyStudent(SOURCE, _LOOPS.imports, _LOOPS.cells)}

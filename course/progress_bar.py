"""Progress bars for training loops that work the same in Jupyter, Colab, a terminal and under nbgrader.

The bar is plain text on standard output: never a widget (a widget stalls a notebook executed without a
browser) and not standard error, where a bar shows as an alarming red block (and, outside the course's set-up, nbgrader
would score the graded cell that printed it as failed: `course.graded_output`).
"""
from __future__ import annotations

import sys

from tqdm import tqdm


def progress(iterable_or_total, description: str = "", mininterval: float = 0.5) -> tqdm:
    """A text progress bar over `iterable_or_total` (an iterable, or an int meaning range(int)).

    Show a live value with `bar.set_postfix(loss=...)`; iterate over the bar as over the iterable.
    """
    iterable = range(iterable_or_total) if isinstance(iterable_or_total, int) else iterable_or_total
    return tqdm(iterable, desc=description, file=sys.stdout, mininterval=mininterval, dynamic_ncols=False,
                ncols=90, ascii=False, leave=True)

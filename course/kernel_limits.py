"""The memory a kernel on the class hub may use, and what a student reads when a cell asks for more.

The class hub loads this IPython extension into every student's kernel (its kernel spec names it). It lowers the
kernel's data limit to the student's memory on the hub (`TFS_MEMORY_MB`, less what their Jupyter server itself
needs), so that a cell asking for more fails in that cell with a message that says what happened and what to do,
and the kernel, with everything computed so far, goes on. The hub's own limit for all of the student's processes
stays behind it: past that, the kernel is stopped and restarted.
"""
from __future__ import annotations

import os
import resource

MEMORY_VARIABLE = "TFS_MEMORY_MB"
SERVER_MB = 256  # what the student's Jupyter server and a terminal keep for themselves
ALLOCATION_FAILED = ("can't allocate memory", "not enough memory", "out of memory")


def kernel_limit_mb(student_mb: int) -> int:
    """The kernel's own data limit for a student given `student_mb` MiB on the hub: at least half of it."""
    return max(student_mb - SERVER_MB, student_mb // 2)


def is_out_of_memory(error: BaseException) -> bool:
    """Python's MemoryError, or PyTorch's failed allocation (a RuntimeError that says so)."""
    return isinstance(error, MemoryError) or (
        isinstance(error, RuntimeError) and any(words in str(error).lower() for words in ALLOCATION_FAILED))


def explanation(limit_mb: int) -> str:
    return (f"This cell asked for more memory than your kernel has on the class hub ({limit_mb:,} MiB). Nothing "
            "else was lost: your variables are still here. Make the tensors smaller (a smaller batch or model), or "
            "free big ones you no longer need with `del name`, then run the cell again.")


def load_ipython_extension(shell) -> None:
    student_mb = os.environ.get(MEMORY_VARIABLE)
    if not student_mb:
        return
    limit_mb = kernel_limit_mb(int(student_mb))
    limit = limit_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard == resource.RLIM_INFINITY or hard > limit:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    def explain(shell, kind, error, traceback, tb_offset=None):
        shell.showtraceback((kind, error, traceback), tb_offset=tb_offset, running_compiled_code=True)
        if is_out_of_memory(error):
            print(explanation(limit_mb))

    shell.set_custom_exc((MemoryError, RuntimeError), explain)

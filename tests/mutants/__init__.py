"""Wrong and right implementations the checks and hidden tests are measured against.

Each module `tests/mutants/<notebook module>.py` lists:
- `MUTANTS`: `(exercise, implementation)` pairs of plausible mistakes that the feedback does not
  necessarily name; every one must fail the visible check or the hidden test (lose points).
- `VARIANTS`: `(exercise, implementation)` pairs of correct but different implementations (einsum,
  loops, -1e9 instead of -inf, ...); each must pass both.
- `NEEDS_SECOND_DEVICE` (optional): the mutants of `MUTANTS` that differ from a correct implementation only on a
  second real device (a mask built on the CPU whatever `device` says); skipped, with the reason, where the CPU
  is the only device, and run where CUDA or MPS is present.
The known mistakes in `autograder/authoring/mistakes/` are mutants too, and the feedback must name each one.
"""

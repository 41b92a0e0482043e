"""Issue 52: every cell that tests/similarity_corpus_c.py rewrites by hand gets its original's check result.

For one class of corpus C (a seed), each rewritten cell and the cell it was made from are run in turn in a fresh
namespace holding the course's reference solutions (as the notebook's earlier cells would), and the exercise's
visible check (`course.checks.check_<exercise>`) runs on what the cell defines. The two results (passed, or the
exception's type) must be the same, but for one known way: a `.view` swapped for `.reshape` (a swap the issue names)
mends an original whose `.view` of a non-contiguous tensor fails (a habit of corpus B's students). The bench prints
the counts and every cell whose result differs.

    .venv/bin/python bench/similarity_checks.py --seed 1            # one class; minutes on a loaded 2-core machine
    .venv/bin/python bench/similarity_checks.py --seed 1 --limit 40  # the first 40 rewritten cells only
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import io
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from course.about import NOTEBOOKS  # noqa: E402
from tests import similarity_corpus_b as corpus_b  # noqa: E402
from tests import similarity_corpus_c as corpus_c  # noqa: E402


def namespace() -> dict:
    """What a notebook's cells see: every reference solution and the notebooks' imports."""
    found: dict = {}
    for module in NOTEBOOKS.values():
        found.update({k: v for k, v in vars(importlib.import_module(f"autograder.authoring.reference.{module}")).items()
                      if not k.startswith("__")})
    from course.progress_bar import progress
    found.update(F=torch.nn.functional, progress=progress)
    return found


def defined_name(stub: str) -> str:
    """The function or class a solution cell's stub defines last (the exercise's)."""
    return [n.name for n in ast.parse(stub).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))][-1]


MENDED = "view size is not compatible"  # the message of a failing `.view` that `.reshape` mends


def check_result(code: str, grade_id: str, stub: str) -> str:
    """'passed', or the type of what the cell or its visible check raised (`MENDED`'s failure named so)."""
    scope = namespace()
    check = getattr(importlib.import_module("course.checks"), f"check_{grade_id}")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, f"<{grade_id}>", "exec"), scope)
            torch.manual_seed(0)
            check(scope[defined_name(stub)])
        return "passed"
    except Exception as exc:  # noqa: BLE001 (what failed is the result)
        return f"{type(exc).__name__} (.view)" if MENDED in str(exc) else type(exc).__name__


def rewritten_cells(seed: int) -> list[tuple[str, str, str, str]]:
    """(copier, grade_id, original code, rewritten code) of every rewrite corpus C's class of `seed` makes, made
    again the way `build_class` makes them (the same draws)."""
    import tempfile
    cells = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        copied = corpus_c.build_class(root, seed)
        honest = corpus_c.honest_class(seed)
        from autograder.similarity.collect import class_solutions
        solutions, _ = class_solutions(root, list(NOTEBOOKS))
    handed = {(s.student, s.exercise): s.code for s in solutions}
    for copier, originals in copied.items():
        if copier == "copy_verbatim":
            continue
        for original, exercises in originals.items():
            for grade_id in exercises:
                cells.append((copier, grade_id, honest[original][grade_id], handed[(copier, grade_id)]))
    stubs = corpus_b.stubs()
    for grade_id, code in corpus_b.MINIMAL_GPT.items():
        original = corpus_b.fill(stubs[grade_id][1], code.strip("\n").split(corpus_b.SLOT))
        cells.append((corpus_c.PUBLIC_COPIER, grade_id, original, handed[(corpus_c.PUBLIC_COPIER, grade_id)]))
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=0, help="only the first LIMIT rewritten cells")
    args = parser.parse_args()
    random.seed(0)
    cells = rewritten_cells(args.seed)
    cells = cells[:args.limit] if args.limit else cells
    stubs = corpus_b.stubs()
    started, same, mended, differ = time.perf_counter(), 0, [], []
    for copier, grade_id, original, rewrite in cells:
        before = check_result(original, grade_id, stubs[grade_id][1])
        after = check_result(rewrite, grade_id, stubs[grade_id][1])
        if before == after:
            same += 1
        elif before.endswith("(.view)") and after == "passed":
            mended.append(f"{copier} / {grade_id}")
        else:
            differ.append(f"{copier} / {grade_id}: original {before}, rewritten {after}")
    print(f"corpus C, seed {args.seed}: {same} of {len(cells)} rewritten cells get their original's check result, "
          f"{len(mended)} mend a failing .view ({', '.join(mended) or 'none'}), {len(differ)} differ otherwise "
          f"({time.perf_counter() - started:.0f} s)")
    print("\n".join(differ))


if __name__ == "__main__":
    main()

"""07 · When greedy decoding must loop: the first moment a model that reads its last `reads` tokens reads exactly
what it read some steps before. From there, greedy decoding (the same context gives the same next token) can only
write what it wrote then, so the text repeats one stretch forever."""
from __future__ import annotations

from collections.abc import Sequence


def first_repeat(ids: Sequence[int], reads: int) -> tuple[int, int] | None:
    """The first n at which the last `reads` ids of ids[:n] equal the `reads` ids that ended P places earlier, as
    (n, P) with the smallest such P; None when no window comes back.

    Both windows are whole (n - P >= reads): a model that reads its last `reads` tokens saw the same context twice,
    so from id n on, a greedy model writes ids[n - P:n] again and again."""
    ids = list(ids)
    # run[P]: how many places in a row, up to the one just read, equal the place P before them.
    run = [0] * len(ids)
    for n in range(1, len(ids) + 1):
        i = n - 1  # the id just read
        for P in range(1, i + 1):
            run[P] = run[P] + 1 if ids[i] == ids[i - P] else 0
        period = next((P for P in range(1, n - reads + 1) if run[P] >= reads), None)
        if period is not None:
            return n, period
    return None


def report_greedy_loop(ids: Sequence[int], reads: int, prompt_length: int, decode=None) -> tuple[int, int] | None:
    """Print when greedy decoding's output `ids` (the prompt's `prompt_length` ids first) came back to a context the
    model had read before, and the stretch it then repeats (joined from `decode(stretch)` when given)."""
    written = len(ids) - prompt_length
    found = first_repeat(ids, reads)
    if found is None:
        print(f"Greedy, {written:,} tokens: the model, which reads its last {reads} tokens, never read the same "
              f"{reads} tokens twice, so within these {written:,} tokens it is not caught in a loop.")
        return None
    n, period = found
    print(f"Greedy, {written:,} tokens: after writing {n - prompt_length:,} tokens the model read the same {reads} "
          f"tokens as {period:,} tokens earlier, so from there it writes the same {period:,} tokens over and over.")
    if decode is not None:
        print(f"The stretch it repeats: {''.join(decode(ids[n - period:n]))!r}")
    return found

"""Fingerprints of a piece of code, by the `copydetect` library: winnowing (Schleimer, Wilkerson and Aiken, 2003, the
method of MOSS) over normalised tokens.

copydetect's tokeniser (Pygments) turns every variable name into `V`, every function name into `F`, every string
into `S` and drops comments and spacing, so renamed variables, rewritten comments and new spacing change nothing;
its winnowing keeps one hash per window of k-grams, so every passage of at least `GUARANTEE_THRESHOLD` normalised
characters that two pieces share is found. One step is ours: copydetect hashes k-grams with Python's `hash()`, which
is salted per process (PYTHONHASHSEED), so the fingerprints it keeps, and the scores, change from run to run (three
seeds gave 0.31, 0.30 and 0.33 for the same pair). `stable_kgram_hashes` hashes them with BLAKE2b instead; the
winnowing and the matching are the library's, unchanged.
"""
from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from copydetect.utils import filter_code, get_token_coverage, winnow

# copydetect's defaults: matches shorter than the noise threshold (k, in normalised characters) are ignored, and
# every match at least the guarantee threshold long is found (window = guarantee - noise + 1).
NOISE_THRESHOLD = 25
GUARANTEE_THRESHOLD = 30
WINDOW = GUARANTEE_THRESHOLD - NOISE_THRESHOLD + 1


def stable_kgram_hashes(text: str, k: int = NOISE_THRESHOLD) -> np.ndarray:
    """The hash of every k-gram of `text`, the same in every process: 53 bits of BLAKE2b (exact as the float64s
    that copydetect's winnowing compares)."""
    return np.array([int.from_bytes(hashlib.blake2b(text[i:i + k].encode(), digest_size=8).digest(), "big") >> 11
                     for i in range(len(text) - k + 1)], dtype=np.int64)


@dataclass
class Fingerprint:
    """A piece of code and its winnowed fingerprints, with the attributes `copydetect.compare_files` reads (so the
    library also finds the matching passages in the original code for the pair pages)."""
    filename: str
    raw_code: str
    filtered_code: str  # the normalised code the hashes are taken over
    offsets: np.ndarray  # copydetect's map from the normalised code back to the original
    hash_idx: dict = field(repr=False)  # hash -> its positions in the normalised code (boilerplate removed)
    k: int = NOISE_THRESHOLD
    hashes: set = field(default_factory=set)  # the fingerprints that count (boilerplate, and later shared code, out)
    written: int = 0  # what the student wrote, in code tokens (`written_tokens`)

    @property
    def token_coverage(self) -> float:
        """How many normalised characters the counted fingerprints cover (copydetect's denominator)."""
        return get_token_coverage({h: self.hash_idx[h] for h in self.hashes}, self.k, len(self.filtered_code))

    def without(self, hashes: set) -> "Fingerprint":
        """The same code with `hashes` no longer counted."""
        return Fingerprint(self.filename, self.raw_code, self.filtered_code, self.offsets, self.hash_idx, self.k,
                           self.hashes - hashes, self.written)


_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}


class _WithoutDocstringsAndPrints(ast.NodeTransformer):
    """Drops the statements that are only a string (docstrings) or a call of `print`."""

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.AST):
                kept = [s for s in body if not _docstring_or_print(s)]
                setattr(node, name, kept or [ast.Pass()])
        return node


def _docstring_or_print(statement: ast.AST) -> bool:
    if not isinstance(statement, ast.Expr):
        return False
    value = statement.value
    return isinstance(value, ast.Constant) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                                               and value.func.id == "print")


def code_tokens(code: str) -> Counter:
    """The code tokens of `code` without comments, docstrings, `print` calls and layout, counted."""
    try:
        code = ast.unparse(_WithoutDocstringsAndPrints().visit(ast.parse(code)))
    except (SyntaxError, ValueError, RecursionError):
        pass  # not Python as a whole: its tokens as they stand
    try:
        return Counter(t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type not in _LAYOUT)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return Counter()


def written_tokens(code: str, stub: str = "") -> int:
    """How much the student wrote: the code tokens of `code` that the release's `stub` of the cell does not hold
    (comments, docstrings, prints and blank lines are not counted, so a short answer padded with them stays short)."""
    return sum((code_tokens(code) - code_tokens(stub)).values())


def normalised(code: str) -> tuple[str, np.ndarray]:
    """copydetect's normalised form of Python `code` and its offsets back to the original."""
    return filter_code(code, "code.py", language="python")


def winnowed(filtered: str) -> dict[int, list[int]]:
    """hash -> positions of the fingerprints winnowing keeps of normalised code."""
    if len(filtered) < NOISE_THRESHOLD:
        return {}
    hashes, positions = winnow(stable_kgram_hashes(filtered), WINDOW, remove_duplicates=False)
    kept: dict[int, list[int]] = {}
    for value, position in zip(hashes.tolist(), positions.tolist()):
        kept.setdefault(value, []).append(position)
    return kept


def all_kgram_hashes(code: str) -> set[int]:
    """Every k-gram hash of `code` (not only the winnowed ones): what boilerplate is taken as, so that a student's
    fingerprint of released code is removed wherever the window put it."""
    filtered, _ = normalised(code)
    return set(stable_kgram_hashes(filtered).tolist()) if len(filtered) >= NOISE_THRESHOLD else set()


def fingerprint(code: str, filename: str, boilerplate: set[int] = frozenset(), stub: str = "") -> Fingerprint:
    """The fingerprints of `code`, those of `boilerplate` (released code) left out, and how much of it the student
    wrote beyond the release's `stub` of the cell."""
    filtered, offsets = normalised(code)
    positions = winnowed(filtered)
    kept = {h: p for h, p in positions.items() if h not in boilerplate}
    return Fingerprint(filename, code, filtered, offsets, kept, NOISE_THRESHOLD, set(kept),
                       written_tokens(code, stub) if stub else 0)


_BOILERPLATE: dict = {}  # a worker's copy of the boilerplate, by key (set once per worker by `_keep_boilerplate`)


def _keep_boilerplate(boilerplate: dict) -> None:
    _BOILERPLATE.clear()
    _BOILERPLATE.update(boilerplate)


def _fingerprint_item(item: tuple[str, str, str, str]) -> Fingerprint:
    code, filename, key, stub = item
    return fingerprint(code, filename, _BOILERPLATE.get(key, frozenset()), stub)


def fingerprint_all(items: list[tuple[str, str, str, str]], boilerplate: dict, jobs: int = 1) -> list[Fingerprint]:
    """The fingerprints of each `(code, filename, boilerplate key, the release's stub of the cell)` in order, on
    `jobs` processes (tokenising is most of the screen's time); the result does not depend on `jobs`."""
    if jobs <= 1 or len(items) < 50:
        _keep_boilerplate(boilerplate)
        return [_fingerprint_item(item) for item in items]
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(jobs, initializer=_keep_boilerplate, initargs=(boilerplate,)) as pool:
        return list(pool.map(_fingerprint_item, items, chunksize=max(1, len(items) // (4 * jobs))))

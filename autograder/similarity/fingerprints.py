"""Fingerprints of a piece of code: winnowing (Schleimer, Wilkerson and Aiken, 2003, the method of MOSS) over its
canonical tokens (`canonical`).

Every run of `K` canonical tokens is hashed (BLAKE2b, the same in every process, unlike Python's salted `hash()`)
and `copydetect`'s winnowing keeps one hash of every `WINDOW` in a row, so every passage of at least
`K + WINDOW - 1` tokens that two pieces of code share is found. Since the tokens are the canonical form's, a
passage is shared whether it was renamed, reworded, re-printed or rewritten in another API form; each fingerprint
knows the lines of the code handed in that its tokens came from, for the pair pages.
"""
from __future__ import annotations

import ast
import hashlib
import io
import tokenize
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from copydetect.utils import winnow

from autograder.similarity.canonical import canonical

K = 12  # tokens a fingerprint covers (a short line of code)
WINDOW = 4  # winnowing keeps one fingerprint of every WINDOW in a row: every shared run of K + WINDOW - 1 is found


def kgram_hashes(tokens: tuple[str, ...], k: int = K) -> np.ndarray:
    """The hash of every run of `k` tokens, the same in every process: 53 bits of BLAKE2b (exact as the float64s
    that copydetect's winnowing compares)."""
    return np.array([int.from_bytes(hashlib.blake2b("\x1f".join(tokens[i:i + k]).encode(), digest_size=8).digest(),
                                    "big") >> 11 for i in range(len(tokens) - k + 1)], dtype=np.int64)


@dataclass
class Fingerprint:
    """A piece of code and its winnowed fingerprints."""
    filename: str
    raw_code: str
    positions: dict = field(repr=False)  # hash -> the token positions where its run starts (boilerplate out)
    lines: tuple = field(repr=False)  # for each canonical token, the lines of `raw_code` it came from
    hashes: set = field(default_factory=set)  # the fingerprints that count (boilerplate, and later shared code, out)
    written: int = 0  # what the student wrote, in code tokens (`written_tokens`)
    surface: "Fingerprint | None" = None  # the same code's fingerprints in the surface form (`canonical`)
    k: int = K

    def without(self, hashes: set) -> "Fingerprint":
        """The same code with `hashes` no longer counted (in either form)."""
        return Fingerprint(self.filename, self.raw_code, self.positions, self.lines, self.hashes - hashes,
                           self.written, self.surface.without(hashes) if self.surface else None, self.k)

    def lines_of(self, hashes: set) -> set[int]:
        """The lines of the code handed in that the runs of `hashes` came from."""
        found: set[int] = set()
        for value in hashes & self.hashes:
            for start in self.positions.get(value, ()):
                for token_lines in self.lines[start:start + self.k]:
                    found |= token_lines
        return found


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


def winnowed(tokens: tuple[str, ...]) -> dict[int, list[int]]:
    """hash -> token positions of the fingerprints winnowing keeps."""
    if len(tokens) < K:
        return {}
    hashes, positions = winnow(kgram_hashes(tokens), WINDOW, remove_duplicates=False)
    kept: dict[int, list[int]] = {}
    for value, position in zip(hashes.tolist(), positions.tolist()):
        kept.setdefault(value, []).append(position)
    return kept


def all_kgram_hashes(code: str, pieces: bool = False) -> set[int]:
    """Every run's hash of `code` in both forms (not only the winnowed ones): what boilerplate and a reference file
    are taken as, so that a student's fingerprint of their code is found wherever the window put it."""
    found = set()
    for surface in (False, True):
        tokens = canonical(code, surface, pieces).tokens
        found |= set(kgram_hashes(tokens).tolist()) if len(tokens) >= K else set()
    return found


def fingerprint(code: str, filename: str, boilerplate: set[int] = frozenset(), stub: str = "",
                pieces: bool = False) -> Fingerprint:
    """The fingerprints of `code` in both forms, those of `boilerplate` (released code) left out, and how much of
    it the student wrote beyond the release's `stub` of the cell. `pieces`: a long file made canonical one top-level
    statement at a time (`canonical`)."""
    written = written_tokens(code, stub) if stub else 0
    forms = []
    for surface in (True, False):
        found = canonical(code, surface, pieces)
        positions = {h: p for h, p in winnowed(found.tokens).items() if h not in boilerplate}
        forms.append(Fingerprint(filename, code, positions, found.lines, set(positions), written,
                                 forms[0] if forms else None))
    return forms[1]


_BOILERPLATE: dict = {}  # a worker's copy of the boilerplate, by key (set once per worker by `_keep_boilerplate`)


def _keep_boilerplate(boilerplate: dict) -> None:
    _BOILERPLATE.clear()
    _BOILERPLATE.update(boilerplate)


def _fingerprint_item(item: tuple[str, str, str, str]) -> Fingerprint:
    code, filename, key, stub = item
    return fingerprint(code, filename, _BOILERPLATE.get(key, frozenset()), stub)


def fingerprint_all(items: list[tuple[str, str, str, str]], boilerplate: dict, jobs: int = 1) -> list[Fingerprint]:
    """The fingerprints of each `(code, filename, boilerplate key, the release's stub of the cell)` in order, on
    `jobs` processes; the result does not depend on `jobs`."""
    if jobs <= 1 or len(items) < 50:
        _keep_boilerplate(boilerplate)
        return [_fingerprint_item(item) for item in items]
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(jobs, initializer=_keep_boilerplate, initargs=(boilerplate,)) as pool:
        return list(pool.map(_fingerprint_item, items, chunksize=max(1, len(items) // (4 * jobs))))

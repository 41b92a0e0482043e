"""The similarity screen on copies rewritten by hand (issue 52): each rewrite of tests/similarity_corpus_c.py reads
the same once canonical, re-printing and formatting change no fingerprint at all, and a class of corpus C drawn
after the screen's parameters were fixed (`HELD_OUT_SEED`, one of bench/README.md's) has every copy flagged and
nine in ten flags copies, the public rewrite attributed to its file.
"""
from __future__ import annotations

import ast
import random

import pytest

from autograder.similarity.canonical import canonical
from autograder.similarity.fingerprints import fingerprint
from autograder.similarity.scoring import student_pairs
from autograder.similarity.screen import screen
from course.about import NOTEBOOKS
from tests import similarity_corpus as corpus_a
from tests import similarity_corpus_b as corpus_b
from tests import similarity_corpus_c as corpus_c

HELD_OUT_SEED = 22110  # drawn after the parameters were fixed, with the others of bench/README.md


def _tree_rewrite(rewrite, **options):
    """A rewrite of corpus C on its own, the code re-printed."""
    def apply(code: str) -> str:
        tree = rewrite(ast.parse(code), random.Random(0), **options)
        return ast.unparse(ast.fix_missing_locations(tree))
    return apply


REWRITES = {
    "re-printed through ast.unparse": lambda code: ast.unparse(ast.parse(code)),
    "restyled (spaces in brackets, comments, blank lines)": corpus_b.restyled,
    "locals renamed": _tree_rewrite(corpus_c.renamed),
    "docstrings replaced": _tree_rewrite(corpus_c.docstrings_replaced),
    "API forms swapped": _tree_rewrite(corpus_c.api_swapped, p=1.0),
    "loops and comprehensions exchanged": _tree_rewrite(corpus_c.loops_exchanged, p=1.0),
    "if/else and conditional expressions exchanged": _tree_rewrite(corpus_c.conditionals_exchanged, p=1.0),
    "nested expressions split into temporaries": _tree_rewrite(corpus_c.temporaries_split, p=1.0),
    "temporaries inlined": _tree_rewrite(corpus_c.temporaries_inlined, p=1.0),
    "operands around a number commuted": _tree_rewrite(corpus_c.commuted, p=1.0),
    "masked_fill and torch.where, unsqueeze and None, .float() and .to, .contiguous(), Linear's bias":
        _tree_rewrite(lambda tree, rng, p: corpus_c.FormsRewritten(rng, p).visit(tree), p=1.0),
    "neighbouring definitions and methods swapped": _tree_rewrite(corpus_c.swapped),
    "dead code added": _tree_rewrite(corpus_c.dead_code_added),
}
EXERCISES = ["attention", "masked_attention", "multi_head_attention", "layer_norm", "vocab", "generate"]


@pytest.fixture(scope="module")
def originals() -> list[str]:
    """Answers written apart: the loop solutions, nanoGPT's, the Annotated Transformer's, and a corpus B student's."""
    wild = corpus_a.honest_cells()
    honest_b = corpus_b.honest_class(7)
    return [cells[g] for cells in (wild["loops"], wild["nanogpt"], wild["annotated_transformer"],
                                   honest_b["mixed_01"]) for g in EXERCISES if g in cells]


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_each_rewrite_by_hand_reads_the_same_once_canonical(originals, name):
    changed = 0
    for code in originals:
        rewritten = REWRITES[name](code)
        changed += rewritten != code
        assert canonical(rewritten).tokens == canonical(code).tokens, (name, code, rewritten)
    assert changed >= len(originals) // 2, name  # the rewrite did change most of them


def test_honest_differences_stay_and_reprinting_changes_no_fingerprint(originals):
    """What two honest students choose differently still differs; and every answer re-printed or restyled keeps
    every fingerprint, in both forms, and its written length: the evidence survives them entirely."""
    ways = ["scores = scores.masked_fill(~mask, float('-inf'))", "scores = torch.where(mask, scores, -1e9)",
            "weights = scores.softmax(-1)\nreturn weights @ V, weights",
            "weights = torch.softmax(scores, dim=-1)\nreturn torch.einsum('bqk,bkd->bqd', weights, V), weights"]
    assert canonical(ways[0]).tokens != canonical(ways[1]).tokens
    assert canonical(ways[2]).tokens != canonical(ways[3]).tokens
    for code in originals:
        before = fingerprint(code, "a")
        for again in (ast.unparse(ast.parse(code)), corpus_b.restyled(code)):
            after = fingerprint(again, "b")
            assert after.hashes == before.hashes and after.surface.hashes == before.surface.hashes
            assert after.written == before.written


@pytest.fixture(scope="module")
def screened_c(tmp_path_factory):
    """Corpus C of the held-out seed, screened with its public files."""
    root = tmp_path_factory.mktemp("similarity_c") / "course"
    root.mkdir()
    copied = corpus_c.build_class(root, HELD_OUT_SEED)
    references = corpus_c.write_references(root.parent)
    return screen(root, list(NOTEBOOKS), [references], jobs=2), copied


def test_every_copy_rewritten_by_hand_is_flagged_and_nine_in_ten_flags_are_copies(screened_c):
    found, copied = screened_c
    ranked = {(p.first, p.second): p for p in found.pairs}
    copies = corpus_c.copy_pairs(copied)
    assert len(copies) == 9  # two_sources copied two classmates
    missed = [f"{a}-{b} {ranked[(a, b)].evidence:.2f}" if (a, b) in ranked else f"{a}-{b} none"
              for a, b in sorted(copies) if not ((a, b) in ranked and ranked[(a, b)].flagged)]
    assert missed == []
    flagged = [p for p in found.pairs if p.flagged]
    assert sum((p.first, p.second) in copies for p in flagged) / len(flagged) >= 0.9, [
        f"{p.first}-{p.second} {p.evidence:.2f}" for p in flagged]
    for copier in ("partial_3", "partial_5"):
        original, exercises = next(iter(copied[copier].items()))
        pair = ranked[tuple(sorted((copier, original)))]
        from_copied = sum(m.evidence for m in pair.matches if m.exercise in exercises)
        assert from_copied >= 0.8 * pair.evidence, (copier, exercises, pair.matched)  # the copied exercises weigh
    strong = ranked[tuple(sorted(("rewrite_strong", *copied["rewrite_strong"])))]
    assert any(m.form == "rewritten" for m in strong.matched)  # found once both are rewritten into one form


def test_honest_convergence_and_the_tutorial_stay_unflagged_and_the_public_rewrite_is_the_files(screened_c):
    found, _ = screened_c
    idiom = [p for p in found.pairs if p.first.startswith("idiom_") and p.second.startswith("idiom_")]
    assert not [f"{p.first}-{p.second} {p.evidence:.2f}" for p in idiom if p.flagged]
    tutorial = {(p.first, p.second): p for p in found.pairs}.get(("tutorial_a", "tutorial_b"))
    assert tutorial is None or not (tutorial.flagged or tutorial.worth_a_look)
    assert {(m.first, m.second) for m in found.references if m.flagged} == {
        (corpus_c.PUBLIC_COPIER, "public/minimal_gpt.py")}
    assert not [p for p in found.pairs if corpus_c.PUBLIC_COPIER in (p.first, p.second) and p.flagged]


def test_a_tutorial_not_given_puts_its_pair_in_the_worth_a_look_band_not_the_flag(screened_c):
    """Without the tutorial passed, the one layer two students took from it is theirs: weaker evidence than a flag,
    shown rather than nowhere."""
    found, _ = screened_c
    alone = {(p.first, p.second): p for p in student_pairs(found.cells)}[("tutorial_a", "tutorial_b")]
    assert alone.worth_a_look and not alone.flagged, alone.evidence
    assert [m.exercise for m in alone.matched if m.evidence > 0.5] == ["layer_norm"]

"""The similarity screen's pages (issues 40 and 52): they fit any window, a reference page shows the matched
passages of the file with their line numbers, not the whole file in every section, and a copy rewritten by hand is
marked line by line on both sides.

A tiny class, no grading: two students hand in the same three exercises of notebook 04 (one long line in them, as
a student's long comment or expression would be), and a reference folder holds a long public file with those
exercises in the middle of it. The real screen runs on it and renders a pair page and a reference page. The CSS
that keeps the columns inside the window is asserted on always; where Chromium and Playwright are installed (see
tests/browser.py) a real browser also measures that nothing runs off the screen at 1400 and 800 px wide.
"""
from __future__ import annotations

import functools
import random
import re
import shutil

import pytest

from autograder.paths import RELEASE
from autograder.similarity.pages import pair_page
from autograder.similarity.screen import screen
from tests import similarity_corpus as corpus
from tests import similarity_corpus_c as corpus_c
from tests.browser import browser  # noqa: F401 (a fixture)

ASSIGNMENT = "04_attention_block"
EXERCISES = ("multi_head_attention", "feed_forward", "transformer_block")
LONG_LINE = "WEIGHTS_NOTE = '" + "shape_of_the_scores_is_batch_heads_queries_keys_" * 8 + "'"  # 400 characters
FILLER_FUNCTIONS = 300  # the public file's own functions before and after the copied part: 1,900 lines in all
WIDTHS = (1400, 800)


def public_file() -> str:
    """A long public implementation: thousands of lines of its own, with d2l's exercises in the middle."""
    filler = "".join(f"\ndef helper_{i}(values, scale={i}):\n    return [value * scale + {i} for value in values]\n"
                     for i in range(FILLER_FUNCTIONS))
    middle = "\n\n".join(copied_cells().values())
    return filler + "\n\n" + middle + "\n" + filler.replace("helper_", "later_")


@functools.cache
def copied_cells() -> dict[str, str]:
    d2l = corpus.honest_cells()["d2l"]
    cells = {exercise: d2l[exercise] for exercise in EXERCISES}
    cells["multi_head_attention"] = cells["multi_head_attention"].replace("\n\n\n", f"\n{LONG_LINE}\n\n\n", 1)
    return cells


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """(pair page, reference page, the public file's text) from the screen of the tiny class."""
    root = tmp_path_factory.mktemp("pages") / "course"
    shutil.copytree(RELEASE, root / "release")
    for student in ("ana", "ben"):
        corpus.write_hand_in(root, student, copied_cells())
    public = root.parent / "public"
    public.mkdir()
    (public / "textbook.py").write_text(public_file())
    found = screen(root, [ASSIGNMENT], [public])
    alone = screen(root, [ASSIGNMENT])  # with the file given, what the two share is the file's, not the pair's
    assert (alone.pairs[0].first, alone.pairs[0].second) == ("ana", "ben")
    against_file = next(p for p in found.references if p.first == "ana")
    assert against_file.second == "public/textbook.py" and len(against_file.matched) == len(EXERCISES)
    return (pair_page(alone.pairs[0], alone.cells, alone.cells),
            pair_page(against_file, found.cells, found.reference_cells), (public / "textbook.py").read_text())


def test_the_columns_share_the_width_and_long_lines_wrap_inside_them(pages):
    for page in pages[:2]:
        style = re.search(r"<style>(.*)</style>", page, re.S).group(1)
        assert re.search(r"\.side\s*\{[^}]*grid-template-columns:\s*minmax\(0,\s*1fr\)\s+minmax\(0,\s*1fr\)", style)
        pre = re.search(r"(?<![\w.-])pre\s*\{([^}]*)\}", style).group(1)
        assert "white-space: pre-wrap" in pre and "overflow-wrap: anywhere" in pre
        assert LONG_LINE.split("'")[1] in page


def test_a_reference_page_shows_the_matched_passages_with_their_lines_not_the_whole_file(pages):
    pair, reference, text = pages
    total = len(text.splitlines())
    sections = reference.split("<h3>")[1:]
    assert len(sections) == len(EXERCISES)
    lines = text.splitlines()
    copied = (lines.index(copied_cells()[EXERCISES[0]].splitlines()[0]) + 1,  # the copied part's first and last line
              lines.index("def later_0(values, scale=0):"))
    for section in sections:
        ranges = [(int(a), int(b)) for a, b in re.findall(rf"lines (\d+)&ndash;(\d+) of {total}\b", section)]
        assert ranges, section[:500]
        assert f'<span class="ln">{ranges[0][0]}</span>' in section  # numbered with the file's own line numbers
        assert all(copied[0] - 10 <= a <= b <= copied[1] + 10 for a, b in ranges), (ranges, copied)
        assert "def helper_100(" not in section and "def later_5(" not in section  # the file's far parts are left out
        assert f"{total} lines" in section
    # The file's passages stand where a classmate's cell stands on a pair page; the whole file is not repeated.
    assert len(reference) < 1.5 * len(pair) and 2 * len(reference) < len(text) * len(sections)


def test_a_copy_rewritten_by_hand_is_flagged_and_marked_line_by_line_on_both_sides(tmp_path):
    """ben hands in ana's three exercises rewritten by hand (tests/similarity_corpus_c.py, strongly: API forms,
    temporaries, loops, order, dead code, all re-printed): the page marks the lines of each side that the other
    shares once both are rewritten into one form, though they read differently."""
    root = tmp_path / "course"
    shutil.copytree(RELEASE, root / "release")
    cells = copied_cells()
    rng = random.Random(0)
    corpus.write_hand_in(root, "ana", cells)
    corpus.write_hand_in(root, "ben", {e: corpus_c.rewritten(code, "strong", rng) for e, code in cells.items()})
    found = screen(root, [ASSIGNMENT])
    pair = found.pairs[0]
    assert (pair.first, pair.second) == ("ana", "ben") and pair.flagged
    assert {m.exercise for m in pair.matched} == set(EXERCISES) and {m.form for m in pair.matched} == {"rewritten"}
    page = pair_page(pair, found.cells, found.cells)
    for section in page.split("<h3>")[1:]:
        ana, ben = section.split('<div><b>')[1:3]
        marked = [side.count('<span class="line">') and side.count("<mark>") / side.count('<span class="line">')
                  for side in (ana, ben)]
        assert min(marked) > 0.3, (section[:80], marked)  # most lines of each side are marked


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_runs_off_the_screen_in_a_browser(pages, browser, width, tmp_path):
    view = browser.new_page(viewport={"width": width, "height": 900})
    for name, page_html in zip(("pair", "reference"), pages[:2]):
        (tmp_path / f"{name}.html").write_text(page_html, encoding="utf-8")
        view.goto((tmp_path / f"{name}.html").as_uri())
        measured = view.evaluate("""() => ({
            page: document.documentElement.scrollWidth, window: window.innerWidth,
            columns: [...document.querySelectorAll('.side > div')].map(c => c.getBoundingClientRect().right),
            code: Math.max(...[...document.querySelectorAll('pre')].map(p => p.scrollWidth - p.clientWidth))
        })""")
        assert measured["page"] <= measured["window"], (name, width, measured)
        assert max(measured["columns"]) <= measured["window"], (name, width, measured)
        assert measured["code"] <= 0, (name, width, measured)  # wrapped: no code block scrolls sideways
    view.close()

"""The guides cannot drift: every command they show exists with the options they give it, and every file they
name is in the repository (or is made by grading, and the code that makes it names it)."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import shlex

import pytest

from autograder.cli import main
from autograder.paths import ROOT
from course.about import NOTEBOOKS

DOCS = ROOT / "docs"
GUIDES = ["student-guide.md", "instructor-guide.md", "contributor-guide.md"]
PLACEHOLDERS = {"<assignment>": "03_masking", "<module>": "masking"}
PATH_ENDINGS = (".py", ".md", ".ipynb", ".csv", ".png", ".jsonl", ".db", ".pt", ".txt", ".yml", ".toml")
COMMANDS = ("python -m autograder", "python -m pytest", "make ", "nbgrader ", "jupyter ")


def fenced_and_inline(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """`[(language, body)]` of the fenced blocks and the inline code spans outside them."""
    fenced = re.findall(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", text, flags=re.M | re.S)
    rest = re.sub(r"^[ \t]*```.*?^[ \t]*```", "", text, flags=re.M | re.S)
    return fenced, re.findall(r"(?<!`)`([^`\n]+)`(?!`)", rest)


def commands_in(text: str) -> list[str]:
    """Commands in inline spans and in shell blocks; `nbgrader ...` (an ellipsis for any of them) is no command."""
    fenced, inline = fenced_and_inline(text)
    found = [span for span in inline if span.startswith(COMMANDS)]
    for language, body in fenced:
        if language in ("bash", "sh", "shell"):
            for line in body.splitlines():
                line = re.split(r"\s#\s", line)[0].strip()
                found += [part.strip() for part in line.split("&&") if part.strip().startswith(COMMANDS)]
    return [command for command in found if "..." not in command]


def paths_in(text: str) -> list[str]:
    """Code spans (and command arguments) that name a file or folder of the repository."""
    fenced, inline = fenced_and_inline(text)
    words = [span for span in inline if " " not in span]
    words += [token for command in commands_in(text) for token in shlex.split(command)]
    return [w for w in words if ("/" in w or w.endswith(PATH_ENDINGS)) and not w.startswith(("http", "-", ".venv/"))
            and not re.search(r"[()=*\[\]]", w)]


def made_by_grading() -> list[str]:
    """What grading creates in the course directory: the Makefile's `clean` target removes exactly that."""
    clean = re.search(r"^clean:\n\trm -rf (.+)$", (ROOT / "Makefile").read_text(), flags=re.M)
    return clean.group(1).split()


def autograder_sources() -> str:
    return "\n".join(p.read_text() for p in (ROOT / "autograder").rglob("*.py"))


def help_of(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([*argv, "--help"])
    return out.getvalue()


def make_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), flags=re.M))


@pytest.fixture(scope="module")
def guides() -> dict[str, str]:
    return {name: (DOCS / name).read_text() for name in GUIDES}


def test_the_readme_links_every_guide():
    readme = (ROOT / "README.md").read_text()
    for name in GUIDES:
        assert f"(docs/{name})" in readme, f"README.md does not link docs/{name}"


def test_the_parser_finds_what_the_guides_show(guides):
    """The test itself sees commands and paths: an empty harvest would pass anything."""
    assert len([c for text in guides.values() for c in commands_in(text)]) >= 15
    assert len([p for text in guides.values() for p in paths_in(text)]) >= 25


@pytest.mark.parametrize("guide", GUIDES)
def test_every_autograder_command_exists_with_its_options(guide, guides):
    subcommands = re.search(r"\{([\w,]+)\}", help_of()).group(1).split(",")
    for command in commands_in(guides[guide]):
        if not command.startswith("python -m autograder"):
            continue
        words = shlex.split(command)[3:]
        if not words:  # the command line itself
            continue
        assert words[0] in subcommands, f"{guide}: `{command}`: no such command"
        options = help_of(words[0])
        for word in words[1:]:
            if word.startswith("--"):
                assert re.search(rf"{re.escape(word)}\b", options), f"{guide}: `{command}`: no option {word}"
            elif not word.isdigit():
                assert word in NOTEBOOKS, f"{guide}: `{command}`: {word} is not an assignment"


@pytest.mark.parametrize("guide", GUIDES)
def test_every_option_span_is_an_option_of_the_grader(guide, guides):
    options = help_of("grade") + help_of("demo")
    for span in fenced_and_inline(guides[guide])[1]:
        if span.startswith("--"):
            flag = span.split()[0]
            assert re.search(rf"{re.escape(flag)}\b", options), f"{guide}: `{span}` is no option of the grader"


@pytest.mark.parametrize("guide", GUIDES)
def test_every_make_nbgrader_and_jupyter_command_exists(guide, guides):
    from nbgrader.apps import NbGraderApp

    targets = make_targets()
    for command in commands_in(guides[guide]):
        words = shlex.split(command)
        if words[0] == "make":
            assert words[1] in targets, f"{guide}: `{command}`: the Makefile has no target {words[1]}"
        elif words[0] == "nbgrader":
            sub = NbGraderApp.subcommands.get(words[1])
            assert sub and not sub[1].startswith("DEPRECATED"), f"{guide}: `{command}`: no such nbgrader command"
        elif words[0] == "jupyter":
            assert importlib.util.find_spec(f"jupyter{words[1]}"), f"{guide}: `{command}`: jupyter{words[1]} missing"


@pytest.mark.parametrize("guide", GUIDES)
def test_every_path_exists_or_is_made_by_grading(guide, guides):
    generated, sources = made_by_grading(), autograder_sources()
    for named in paths_in(guides[guide]):
        path = named
        for placeholder, example in PLACEHOLDERS.items():
            path = path.replace(placeholder, example)
        top = path.split("/")[0]
        if top in generated:  # made by grading: the code that writes it must name it
            leaf = [part for part in named.rstrip("/").split("/") if "<" not in part][-1]
            assert leaf in sources, f"{guide}: `{named}`: nothing in autograder/ makes {leaf}"
        elif "<" in path:
            pytest.fail(f"{guide}: `{named}`: a placeholder the test does not know")
        elif "/" in path:
            assert (ROOT / path).exists(), f"{guide}: `{named}` does not exist"
        else:  # a bare file name: somewhere in the repository
            assert (ROOT / path).exists() or any(ROOT.glob(f"[!.]*/**/{path}")), f"{guide}: `{named}` does not exist"


@pytest.mark.parametrize("guide", GUIDES)
def test_every_link_between_documents_resolves(guide, guides):
    for target in re.findall(r"(?<!!)\[[^\]]*\]\(([^)#\s]+)(?:#[^)]*)?\)", guides[guide]):
        if not target.startswith("http"):
            assert (DOCS / target).resolve().exists(), f"{guide}: the link to {target} is broken"


@pytest.mark.parametrize("guide", GUIDES)
def test_every_screenshot_exists(guide, guides):
    """The screenshots come from the browser tests; until those have written docs/screenshots/, this waits."""
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", guides[guide])
    if not (DOCS / "screenshots").is_dir():
        pytest.skip("docs/screenshots/ is not made yet (the browser tests make it)")
    for image in images:
        assert (DOCS / image).exists(), f"{guide}: the screenshot {image} does not exist"


def test_every_grader_command_is_documented(guides):
    documented = " ".join(c for text in guides.values() for c in commands_in(text))
    for sub in re.search(r"\{([\w,]+)\}", help_of()).group(1).split(","):
        assert f"python -m autograder {sub}" in documented, f"no guide shows `python -m autograder {sub}`"

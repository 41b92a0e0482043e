"""The guides cannot drift: every command they show exists with the options they give it, and every file they
name is in the repository (or is made by grading, and the code that makes it names it)."""
from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import io
import re
import shlex

import pytest
from nbgrader.apps.nbgraderapp import NbGraderApp
from traitlets.config import Config, Configurable
from traitlets.utils.importstring import import_item

from autograder.cli import main
from autograder.paths import ROOT
from course.about import NOTEBOOKS, VERSION

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
    return [w for w in words if ("/" in w or w.endswith(PATH_ENDINGS))
            and not w.startswith(("http", "tcp://", "-", ".venv/"))  # a web or Dask scheduler's address, an option
            and not re.search(r"[()=*\[\]]", w)
            and not w.startswith(("/", "~"))]  # a path on the students' machine (the exchange, a home folder)


def sections(text: str) -> list[str]:
    """The guide cut at its `## ` headings."""
    return re.split(r"^(?=## )", text, flags=re.M)


def python_blocks(text: str) -> list[str]:
    return [body for language, body in fenced_and_inline(text)[0] if language == "python"]


# Where nbgrader keeps its classes that a guide may configure (`c.<Class>.<trait> = ...`).
CONFIGURABLE_MODULES = ("nbgrader.apps", "nbgrader.exchange", "nbgrader.exchange.default", "nbgrader.plugins",
                        "nbgrader.converters", "nbgrader.preprocessors", "nbgrader.coursedir")


def configurables(name: str) -> list[type]:
    found = []
    for module in map(importlib.import_module, CONFIGURABLE_MODULES):
        value = getattr(module, name, None)
        if isinstance(value, type) and issubclass(value, Configurable) and value not in found:
            found.append(value)
    return found


def config_problem(line: str) -> str:
    """Why a `c.<Class>.<trait> = ...` line would configure nothing ("" when it is fine): traitlets ignores a class
    or trait it does not know, silently."""
    found = re.match(r"\s*c\.(\w+)\.(\w+)\s*=", line)
    if not found:
        return ""
    name, trait = found.groups()
    classes = configurables(name)
    if not classes:
        return f"`{line.strip()}`: nbgrader has no configurable class {name}"
    if not any(trait in cls.class_traits(config=True) for cls in classes):
        return f"`{line.strip()}`: {name} has no configurable trait {trait}"
    return ""


@functools.cache
def nbgrader_options(subcommand: str) -> frozenset[str]:
    """The flags and `--Class.trait` options that `nbgrader <subcommand> --help-all` lists (`subcommand` may be a
    nested one: "db assignment add"). The help is nbgrader's own, written here by the method `--help-all` calls
    (traitlets' emit_help): the same lines as the command prints, without a Python started per subcommand."""
    app = NbGraderApp
    for word in subcommand.split():
        app = app.subcommands[word][0]
        app = import_item(app) if isinstance(app, str) else app
    return frozenset(re.findall(r"^(--[\w.-]+)", "\n".join(app().emit_help(classes=True)), flags=re.M))


def nbgrader_option_problems(command: str) -> list[str]:
    """The options of `nbgrader <subcommand> ...` that the subcommand does not have."""
    words = shlex.split(command)
    depth = 3 if words[1] == "db" else 1  # `nbgrader db student|assignment add|remove|list|import`
    subcommand = " ".join(words[1:1 + depth])
    options = nbgrader_options(subcommand)
    return [f"`{command}`: nbgrader {subcommand} has no option {word}" for word in words[1 + depth:]
            if word.startswith("--") and word.split("=")[0] not in options]


def made_by_grading() -> list[str]:
    """What grading creates in the course directory: the Makefile's `clean` target removes that, and where the
    Makefile keeps a term's files apart (`TERM_FILES`, what `make new-term` moves away), those as well."""
    makefile = (ROOT / "Makefile").read_text()
    clean = re.search(r"^clean:\n\trm -rf (.+)$", makefile, flags=re.M)
    term = re.search(r"^TERM_FILES :?= (.+)$", makefile, flags=re.M)
    return clean.group(1).split() + (term.group(1).split() if term else [])


def archive_folder() -> str:
    """The folder `make new-term` moves a term's files into."""
    return re.search(r"^new-term:\n\t@archive=(\w+)/", (ROOT / "Makefile").read_text(), flags=re.M).group(1)


def autograder_sources() -> str:
    return "\n".join(p.read_text() for p in (ROOT / "autograder").rglob("*.py"))


def help_of(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main([*argv, "--help"])
    return out.getvalue()


def subcommands_of(help_text: str) -> list[str]:
    """The subcommands a help lists (argparse writes them `{a,b} ...`; an option's choices have no `...`)."""
    found = re.search(r"\{([\w,-]+)\} \.\.\.", re.sub(r"\s+", " ", help_text))
    return found.group(1).split(",") if found else []


def command_help(words: list[str]) -> tuple[list[str], str]:
    """The subcommand path at the start of `words` (`lms export canvas`), and its help."""
    path = [words[0]]
    while len(path) < len(words) and words[len(path)] in subcommands_of(help_of(*path)):
        path.append(words[len(path)])
    return path, help_of(*path)


def every_help(*path: str) -> str:
    """The help of the command line and of every subcommand below it."""
    text = help_of(*path)
    return text + "".join(every_help(*path, sub) for sub in subcommands_of(text))


def takes_value(option: str, help_text: str) -> bool:
    return bool(re.search(rf"{re.escape(option)} (?:[A-Z]|\{{)", help_text))


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
    subcommands = re.search(r"\{([\w,-]+)\}", help_of()).group(1).split(",")
    for command in commands_in(guides[guide]):
        if not command.startswith("python -m autograder"):
            continue
        words = shlex.split(command)[3:]
        if not words:  # the command line itself
            continue
        assert words[0] in subcommands, f"{guide}: `{command}`: no such command"
        path, options = command_help(words)
        for before, word in zip(words[len(path) - 1:], words[len(path):]):
            if word.startswith("-"):
                assert re.search(rf"{re.escape(word)}\b", options), f"{guide}: `{command}`: no option {word}"
            elif before.startswith("-") and takes_value(before, options):
                continue  # the option's value: a file, a rule, ASSIGNMENT=COLUMN
            elif not word.isdigit():
                assert word in NOTEBOOKS, f"{guide}: `{command}`: {word} is not an assignment"


@pytest.mark.parametrize("guide", GUIDES)
def test_every_option_span_is_an_option_of_the_grader(guide, guides):
    """... or of an nbgrader command that the same section shows."""
    options = every_help()
    for section in sections(guides[guide]):
        nbgrader_subcommands = {shlex.split(c)[1] for c in commands_in(section) if c.startswith("nbgrader ")}
        for span in fenced_and_inline(section)[1]:
            if span.startswith("--"):
                flag = span.split()[0]
                assert (re.search(rf"{re.escape(flag)}\b", options)
                        or any(flag.split("=")[0] in nbgrader_options(sub) for sub in nbgrader_subcommands)), \
                    f"{guide}: `{span}` is no option of the grader nor of an nbgrader command of its section"


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
def test_every_nbgrader_command_has_the_options_it_is_given(guide, guides):
    for command in commands_in(guides[guide]):
        if command.startswith("nbgrader "):
            assert not nbgrader_option_problems(command), f"{guide}: {nbgrader_option_problems(command)}"


@pytest.mark.parametrize("guide", GUIDES)
def test_every_config_line_sets_a_trait_nbgrader_has(guide, guides):
    """`c.<Class>.<trait> = ...` in a python block: a misspelt one would be ignored without a word."""
    for block in python_blocks(guides[guide]):
        compile(block, guide, "exec")
        for line in block.splitlines():
            assert not config_problem(line), f"{guide}: {config_problem(line)}"


def test_every_collector_expression_names_the_groups_zip_collect_needs(guides):
    expressions = []
    for block in python_blocks(guides["instructor-guide.md"]):
        config = Config()
        exec(block, {"c": config, "get_config": lambda: config})  # noqa: S102 (the guide's own config lines)
        if "named_regexp" in config.FileNameCollectorPlugin:
            expressions.append(re.compile(config.FileNameCollectorPlugin.named_regexp))
    assert len(expressions) == 2, "the instructor guide shows one expression for Canvas and one for Moodle"
    for expression in expressions:
        assert {"student_id", "file_id"} <= set(expression.groupindex), expression.pattern


@pytest.mark.parametrize(("line", "wrong"), [
    ("c.Exchange.root = '/srv/nbgrader/exchange'", False),
    ("c.FileNameCollectorPlugin.named_regexp = r'.*'", False),
    ("c.Exchange.rooot = '/srv/nbgrader/exchange'", True),
    ("c.Exchnge.root = '/srv/nbgrader/exchange'", True),
    ("c.FileNameCollectorPlugin.name_regexp = r'.*'", True),
])
def test_the_config_check_refuses_what_nbgrader_would_ignore(line, wrong):
    assert bool(config_problem(line)) == wrong


@pytest.mark.parametrize(("command", "wrong"), [
    ("nbgrader collect 03_masking --update", False),
    ("nbgrader zip_collect 03_masking --force --FileNameCollectorPlugin.named_regexp=x", False),
    ("nbgrader collect 03_masking --updte", True),
    ("nbgrader release_assignment 03_masking --update", True),
    ("nbgrader zip_collect 03_masking --FileNameCollectorPlugin.name_regexp=x", True),
    ('nbgrader db assignment add 03_masking --duedate="2026-12-04 17:00:00 UTC"', False),
    ('nbgrader db assignment add 03_masking --due="2026-12-04 17:00:00 UTC"', True),
])
def test_the_option_check_refuses_what_nbgrader_would_refuse(command, wrong):
    assert bool(nbgrader_option_problems(command)) == wrong


@pytest.mark.parametrize("guide", GUIDES)
def test_every_release_tag_is_this_version(guide, guides):
    """The guides name the tag to install from; it is the one the notebooks were released with."""
    for tag in re.findall(r"\bv\d+\.\d+\.\d+\b", guides[guide]):
        assert tag == f"v{VERSION}", f"{guide}: names the tag {tag}, but the course is v{VERSION}"


def zip_collect_folders() -> dict[str, str]:
    """The folders of nbgrader zip_collect (its defaults): `downloaded/<assignment>/archive/` and `.../extracted/`."""
    from nbgrader.apps import ZipCollectApp

    return {name: ZipCollectApp.class_traits()[name].default_value
            for name in ("downloaded_directory", "archive_directory", "extracted_directory")}


@pytest.mark.parametrize("guide", GUIDES)
def test_every_path_exists_or_is_made_by_grading(guide, guides):
    generated, sources = made_by_grading(), autograder_sources()
    zip_collect = zip_collect_folders()
    for named in paths_in(guides[guide]):
        path = named
        for placeholder, example in PLACEHOLDERS.items():
            path = path.replace(placeholder, example)
        top = path.split("/")[0]
        if top == zip_collect["downloaded_directory"]:  # the learning platform's downloads, ignored by git
            assert f"\n{top}/\n" in (ROOT / ".gitignore").read_text(), f".gitignore does not name {top}/"
            parts = [part for part in named.rstrip("/").split("/")[1:] if part != "<assignment>"]
            assert set(parts) <= {zip_collect["archive_directory"], zip_collect["extracted_directory"]}, \
                f"{guide}: `{named}` is no folder of nbgrader zip_collect"
        elif top == "lms":  # the LMS's rosters, the uploads, the LTI config and key: students' data, ignored by git
            assert f"\n/{top}/\n" in (ROOT / ".gitignore").read_text(), f".gitignore does not name /{top}/"
        elif top == archive_folder():  # where `make new-term` moves a term: students' files, ignored by git
            assert f"\n{top}/\n" in (ROOT / ".gitignore").read_text(), f".gitignore does not name {top}/"
        elif top in generated:  # made by grading: the code that writes it must name it
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
    for sub in re.search(r"\{([\w,-]+)\}", help_of()).group(1).split(","):
        assert f"python -m autograder {sub}" in documented, f"no guide shows `python -m autograder {sub}`"

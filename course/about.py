"""Facts about the course that more than one place needs: its version, where it lives, its notebooks."""

VERSION = "0.1.0"

# The one place that names the public repository: Colab badges and the Colab setup cell use it.
REPO_URL = "https://github.com/transformers-from-scratch/course"

# Assignment folder name -> the module name of its exercises (reference, checks, fixtures, hidden tests).
NOTEBOOKS = {
    "01_positional_encoding": "positional_encoding",
    "02_attention": "attention",
    "03_masking": "masking",
    "04_attention_block": "attention_block",
    "05_transformer": "transformer",
    "06_reversal": "reversal",
    "07_shakespeare": "shakespeare",
}

# Assignment -> the earlier notebooks its carry-over cell loads with `from_earlier(...)` (directly; what
# those load in turn is in their own entries). tests/test_links.py proves it matches the source notebooks.
CARRYOVER = {
    "04_attention_block": ("03_masking",),
    "05_transformer": ("01_positional_encoding", "03_masking", "04_attention_block"),
    "06_reversal": ("05_transformer",),
    "07_shakespeare": ("05_transformer",),
}

COLAB_BADGE_IMAGE = "https://colab.research.google.com/assets/colab-badge.svg"


def snake_case(exercise: str) -> str:
    """`TokenAndPositionEmbedding` -> `token_and_position_embedding`: how check cells, checks and hidden tests
    name an exercise (`check_<...>`, `hidden_<...>`, `test_<...>`)."""
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", exercise).lower()


def colab_url(assignment: str) -> str:
    """The Colab link that opens the release notebook of `assignment` from the repository."""
    path = REPO_URL.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/v{VERSION}/release/{assignment}/{assignment}.ipynb"


def colab_badge(assignment: str) -> str:
    """The "Open in Colab" badge (Markdown) of `assignment`: in the README and atop each notebook."""
    return f"[![Open In Colab]({COLAB_BADGE_IMAGE})]({colab_url(assignment)})"


def builds_on(assignment: str) -> list[str]:
    """Every earlier notebook that running `assignment` needs beside it, in course order.

    Loading an earlier notebook also runs its own carry-over, so the need is transitive: 06 needs 05,
    and through it 01, 03 and 04.
    """
    needed, todo = set(), list(CARRYOVER.get(assignment, ()))
    while todo:
        earlier = todo.pop()
        if earlier not in needed:
            needed.add(earlier)
            todo.extend(CARRYOVER.get(earlier, ()))
    return [name for name in NOTEBOOKS if name in needed]


def colab_install_spec() -> str:
    """What the Colab setup cell installs: this package at the tag the notebooks were released with."""
    return f"git+{REPO_URL}@v{VERSION}"

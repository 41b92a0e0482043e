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


def colab_url(assignment: str) -> str:
    """The Colab link that opens the release notebook of `assignment` from the repository."""
    path = REPO_URL.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/v{VERSION}/release/{assignment}/{assignment}.ipynb"


def colab_install_spec() -> str:
    """What the Colab setup cell installs: this package at the tag the notebooks were released with."""
    return f"git+{REPO_URL}@v{VERSION}"

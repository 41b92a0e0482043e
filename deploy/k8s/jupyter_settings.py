"""The Jupyter settings of the course's Kubernetes images: the files `python -m autograder hub` writes for the
one-machine hub (autograder/hub/layout.py), with the exchange where config.yaml mounts it. The Dockerfile runs it in
a stage of its own and copies the students' settings into the singleuser image and the grader's into the grader image:

    python deploy/k8s/jupyter_settings.py OUT     # writes OUT/etc/student/ and OUT/etc/grader/

The students' settings select the hub's submit (course.private_submit, in the student package the singleuser image
installs): a hand-in 0750, its files 0640, read by the grader through its group. That keeps classmates out only where
the hand-in's group is one no student has: the one-machine hub makes inbound/ the grader's own group's, 3733
(autograder/hub/layout.py); on Kubernetes every pod runs with the group 100 unless formgrader's is given its own.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: run from anywhere

from autograder.hub.layout import write_jupyter_settings  # noqa: E402
from autograder.hub.settings import HubSettings  # noqa: E402

EXCHANGE = Path("/srv/nbgrader/exchange")  # config.yaml's custom.exchangeRoot


class ImageSettings(HubSettings):
    """A hub's settings whose exchange is the shared volume's, wherever the files are written."""

    @property
    def exchange(self) -> Path:
        return EXCHANGE


def write(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_jupyter_settings(ImageSettings(root=str(folder)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python deploy/k8s/jupyter_settings.py OUT (writes OUT/etc/student/ and OUT/etc/grader/)")
    write(Path(sys.argv[1]))

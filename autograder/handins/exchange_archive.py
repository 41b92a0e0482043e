"""`make new-term`'s part in the exchange: the course's hand-ins, released assignments and released feedback of the
term that ends are moved into the term's archive, so the new term's `nbgrader collect` brings none of them back.

Where the exchange is and which course is this one come from nbgrader's own configuration (the course's
nbgrader_config.py, ~/.jupyter, /etc/jupyter), as every nbgrader command reads them. Each of the course's folders
there (`inbound`, `outbound`, `feedback`) moves whole to `<archive>/exchange/<course>/` and is made again, empty,
with its old permissions, so students can submit and fetch as before. Nothing is deleted.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

EXCHANGE_FOLDERS = ("inbound", "outbound", "feedback")  # nbgrader's exchange folders of one course


def course_exchange() -> Path | None:
    """The course's folder in the exchange, as nbgrader's configuration (read from the current folder) names it; None
    when it names no course."""
    from nbgrader.apps.baseapp import NbGrader
    from nbgrader.exchange.default.exchange import Exchange
    app = NbGrader()
    app.initialize([])
    root = app.config.Exchange.get("root", Exchange.class_traits()["root"].default_value)
    course = app.config.CourseDirectory.get("course_id", "")
    return Path(root) / course if course else None


def archive_exchange(course: Path, archive: Path) -> list[str]:
    """Move each of the course's exchange folders under `course` into `archive/exchange/<course name>/` and make it
    again, empty, with its permissions; a line for each folder moved."""
    moved = []
    for name in EXCHANGE_FOLDERS:
        folder = course / name
        if not folder.is_dir() or not any(folder.iterdir()):
            continue
        mode = stat.S_IMODE(folder.stat().st_mode)
        target = archive / "exchange" / course.name / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(folder, target)
        folder.mkdir()
        os.chmod(folder, mode)
        moved.append(f"{folder} -> {target}")
    return moved


def main(archive: str) -> None:
    course = course_exchange()
    if course is None:
        print("nbgrader_config.py names no course (c.CourseDirectory.course_id): the exchange was left as it is")
        return
    try:
        moved = archive_exchange(course, Path(archive))
    except OSError as exc:
        raise SystemExit(f"could not move the exchange's folders of the course ({exc}); move {course}/inbound, "
                         f"outbound and feedback into {archive}/exchange/ yourself before the new term's collect")
    print("\n".join(f"moved the exchange's {line}" for line in moved) if moved else
          f"nothing of the course in the exchange ({course})")


if __name__ == "__main__":
    main(sys.argv[1])

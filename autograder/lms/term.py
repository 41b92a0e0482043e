"""`make new-term`'s part of lms/: last term's LMS files moved to the term's archive, the LTI tool's registration kept.

A new term is a new course in the LMS: new rosters, new assignment ids, new line items. Moved to `<archive>/lms/`:
the rosters and the uploads written from them, the columns the course kept for its notebooks (lms/columns.json) and
what `lms push` sent (its sent_file, lms/lti-sent.json). Kept in lms/: the tool's config, private key and key set,
which the LMS administrator registered once; the config's course addresses are last term's course's, and the
command says so.

`python -m autograder.lms.term ARCHIVE`, run by `make new-term` in the course directory.
"""
from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

CONFIG = "lti.toml"


def registration(lms: Path) -> set[str]:
    """The names in `lms` that make the LTI tool's registration: its config, its private key and its key set."""
    config = lms / CONFIG
    if not config.is_file():
        return set()
    try:
        key_file = tomllib.loads(config.read_text()).get("key_file", "lti-private-key.pem")
    except tomllib.TOMLDecodeError:
        key_file = "lti-private-key.pem"
    key = Path(key_file)
    return {CONFIG, key.name, key.with_name("lti-keyset.json").name}


def new_term(lms: Path, archive: Path) -> list[str]:
    """Move last term's files out of `lms` into `archive`/lms; return what the instructor reads."""
    if not lms.is_dir():
        return []
    kept = registration(lms)
    moved = []
    for path in sorted(lms.iterdir()):
        if path.name in kept:
            continue
        target = archive / "lms" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), str(target))
        moved.append(path.name)
    lines = []
    if moved:
        lines.append(f"moved last term's LMS files (rosters, uploads, the columns kept for each notebook, what was "
                     f"pushed) to {archive / 'lms'}: {', '.join(moved)}")
    if CONFIG in kept:
        lines.append(f"kept the LTI tool's registration ({', '.join(sorted(kept & {p.name for p in lms.iterdir()}))} "
                     f"in {lms}): write the new course's lineitems_url and memberships_url into {lms / CONFIG}")
    return lines


if __name__ == "__main__":
    for line in new_term(Path.cwd() / "lms", Path(sys.argv[1]).resolve()):
        print(line)
